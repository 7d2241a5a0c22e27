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
