package dev.outboxrelay.writer;

import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The one place that decides what a valid instance key is: the writer checks it when it is created,
 * the relay when it is configured, and the operator CLI for each command.
 */
public final class InstanceKeys {
  public static final int MAX_LENGTH = 200;

  private InstanceKeys() {}

  /** Returns the key if it is usable as an owner of rows, otherwise throws naming the problem. */
  public static String requireValid(String instanceKey) {
    if (instanceKey == null) {
      throw new IllegalArgumentException("instance key is required");
    }
    if (instanceKey.isBlank()) {
      throw new IllegalArgumentException("instance key must not be blank");
    }
    if (instanceKey.length() > MAX_LENGTH) {
      throw new IllegalArgumentException(
          "instance key must be at most " + MAX_LENGTH + " characters");
    }
    if (!instanceKey.strip().equals(instanceKey)) {
      throw new IllegalArgumentException("instance key must not start or end with white space");
    }
    if (instanceKey.indexOf(',') >= 0) {
      // The connector's instance.keys is a comma-separated list: such a key is never relayed.
      throw new IllegalArgumentException(
          "instance key must not contain a comma (the connector's instance.keys is a"
              + " comma-separated list, so no connector could relay its rows)");
    }
    for (int i = 0; i < instanceKey.length(); i++) {
      if (Character.isISOControl(instanceKey.charAt(i))) {
        throw new IllegalArgumentException("instance key must not contain control characters");
      }
    }
    for (int i = 0; i < instanceKey.length(); i++) {
      char c = instanceKey.charAt(i);
      if (c != ' ' && Character.getType(c) == Character.SPACE_SEPARATOR) {
        // "orders" + U+00A0, pasted from a wiki, reads as "orders" (strip() keeps it), and
        // "orders" + U+00A0 + "eu" as "orders eu".
        throw new IllegalArgumentException(
            "instance key must not contain a space other than U+0020 (a no-break, narrow or"
                + " ideographic space looks like a space, or at an end like nothing)");
      }
    }
    if (StorableText.hasUnpairedSurrogate(instanceKey)) {
      // Stored as '?': "eu" + U+D800 and "eu" + U+DBFF would own each other's rows.
      throw new IllegalArgumentException(
          "instance key must not contain a UTF-16 surrogate without its pair, which is no"
              + " character");
    }
    if (!Printable.escape(instanceKey).equals(instanceKey)) {
      // "orders" + U+200B, pasted from a chat, reads as "orders": its rows would wait for a
      // connector of a key no one can tell apart from the one configured.
      throw new IllegalArgumentException(
          "instance key must not contain format or invisible characters (a zero-width space, a"
              + " byte order mark, a direction mark, a line separator), which make it look like"
              + " another key");
    }
    return instanceKey;
  }

  public static Set<String> requireValid(Set<String> instanceKeys) {
    if (instanceKeys == null || instanceKeys.isEmpty()) {
      throw new IllegalArgumentException("at least one instance key is required");
    }
    Set<String> copy = new LinkedHashSet<>();
    for (String key : instanceKeys) {
      copy.add(requireValid(key));
    }
    return Set.copyOf(copy);
  }
}
