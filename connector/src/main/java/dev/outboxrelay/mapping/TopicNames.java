package dev.outboxrelay.mapping;

import java.util.regex.Pattern;

/** The one place that decides what a legal Kafka topic name is. */
public final class TopicNames {
  /** Kafka's own limit on topic name length. */
  public static final int MAX_LENGTH = 249;

  /** The characters Kafka allows in a topic name. */
  static final Pattern LEGAL_CHARS = Pattern.compile("[a-zA-Z0-9._-]*");

  /** What {@link #isLegal} checks, worded for error messages. */
  public static final String RULE =
      "1 to " + MAX_LENGTH + " characters of [a-zA-Z0-9._-], other than '.' and '..'";

  private TopicNames() {}

  /** The prefix of Kafka's internal topics ({@code __consumer_offsets}, ...). */
  public static final String INTERNAL_PREFIX = "__";

  /**
   * Whether {@code name} is one of Kafka's internal topics, or looks like one: no row may write
   * there, and a broker refuses a producer's record to {@code __consumer_offsets} and fails the
   * task.
   */
  public static boolean isInternal(String name) {
    return name != null && name.startsWith(INTERNAL_PREFIX);
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
}
