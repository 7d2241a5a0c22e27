package dev.outboxrelay.mapping;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/**
 * Names as Confluent's Avro and Protobuf converters scrub them ({@code scrub.invalid.names}), or
 * coarser: two names that any of their versions scrubs to one name have the same key here. Their
 * scrub URL-encodes a name, turns each character but ASCII letters, digits and '_' into '_', and
 * puts an 'x' before a leading digit (or '_', in some versions); a name they take is kept as it is,
 * which the same steps leave unchanged. The key also drops an 'x' before a digit or '_', so that
 * "1st" and "x1st" meet however a version prefixes. A key may join names no version joins ("_a" and
 * "x_a" where '_' leads unprefixed): such a payload is parked though it could have been written,
 * the safe side of a converter that would fail the task at every claim of the row.
 */
final class ScrubbedNames {
  private ScrubbedNames() {}

  /** The key of one name (a member, or one part of a struct's dotted name). */
  static String name(String name) {
    String encoded = URLEncoder.encode(name, StandardCharsets.UTF_8);
    StringBuilder key = new StringBuilder(encoded.length());
    for (int i = 0; i < encoded.length(); i++) {
      char c = encoded.charAt(i);
      boolean kept = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      key.append(kept || c == '_' ? c : '_');
    }
    if (key.length() > 1 && key.charAt(0) == 'x') {
      char next = key.charAt(1);
      if ((next >= '0' && next <= '9') || next == '_') {
        key.deleteCharAt(0);
      }
    }
    return key.toString();
  }

  /**
   * The key of a struct's full name: each dot-separated part's, split as Confluent's AvroData
   * splits it (empty trailing parts dropped: "payload.a." is "payload.a" to it).
   */
  static String fullName(String name) {
    String[] parts = name.split("\\.");
    StringBuilder key = new StringBuilder();
    for (int i = 0; i < parts.length; i++) {
      key.append(i == 0 ? "" : ".").append(name(parts[i]));
    }
    return key.toString();
  }
}
