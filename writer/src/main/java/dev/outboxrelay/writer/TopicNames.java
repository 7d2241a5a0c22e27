package dev.outboxrelay.writer;

import java.util.Set;
import java.util.regex.Pattern;

/**
 * The one place that decides what a legal Kafka topic name is, and which topics a row may name: the
 * writer checks a message's explicit topic when it is built, the relay routes each row and checks
 * its own settings with the same rules.
 */
public final class TopicNames {
  /** Kafka's own limit on topic name length. */
  public static final int MAX_LENGTH = 249;

  /**
   * The characters Kafka allows in a topic name (any number of them: text that is part of a name,
   * such as a topic template's literal text).
   */
  public static final Pattern LEGAL_CHARS = Pattern.compile("[a-zA-Z0-9._-]*");

  /** What {@link #isLegal} checks, worded for error messages. */
  public static final String RULE =
      "1 to " + MAX_LENGTH + " characters of [a-zA-Z0-9._-], other than '.' and '..'";

  private TopicNames() {}

  /**
   * Kafka's internal topics: no row may write there, and a broker refuses a producer's record to
   * them, which fails the task. Other names starting with {@code __} are ordinary topics.
   */
  public static final Set<String> INTERNAL =
      Set.of(
          "__consumer_offsets",
          "__transaction_state",
          "__share_group_state",
          "__remote_log_metadata",
          "__cluster_metadata");

  /**
   * Whether {@code name} is one of Kafka's {@link #INTERNAL} topics, or collides with one ({@link
   * #collide}: {@code __consumer.offsets}, {@code ._consumer_offsets}), which the broker refuses to
   * create.
   */
  public static boolean isInternal(String name) {
    // Every internal name starts with "__", so a colliding one with two of '.' and '_': no other
    // needs the replace (one per routed record).
    return name.length() > 2
        && isDotOrUnderscore(name.charAt(0))
        && isDotOrUnderscore(name.charAt(1))
        && INTERNAL.contains(name.replace('.', '_'));
  }

  private static boolean isDotOrUnderscore(char c) {
    return c == '.' || c == '_';
  }

  /**
   * Whether two names collide in Kafka, which treats '.' and '_' alike in metrics names and refuses
   * to create a topic whose name collides with an existing one's ({@code orders.eu} and {@code
   * orders_eu}): a record to the second waits for its topic, or fails the task.
   */
  public static boolean collide(String a, String b) {
    return a != null
        && b != null
        && a.length() == b.length()
        && a.replace('.', '_').equals(b.replace('.', '_'));
  }

  /** Whether Kafka would accept {@code name} as a topic name; null is not legal. */
  public static boolean isLegal(String name) {
    return name != null
        && !name.isEmpty()
        && name.length() <= MAX_LENGTH
        && !name.equals(".")
        && !name.equals("..")
        && LEGAL_CHARS.matcher(name).matches();
  }

  /**
   * Whether a row may be published to {@code name}: {@link #isLegal legal} and not one of Kafka's
   * {@link #INTERNAL internal} topics. A row whose topic is not is recorded FAILED ({@code
   * TOPIC_UNROUTABLE}) by the relay.
   */
  public static boolean isRoutable(String name) {
    return isLegal(name) && !isInternal(name);
  }
}
