package dev.outboxrelay.store;

/**
 * A value read from a row, safe to write into a log line or onto a terminal. Control characters (a
 * line break would forge a log line of its own; an escape sequence rewrites a terminal) and format
 * characters (bidirectional overrides reorder what follows; zero-width characters make two ids look
 * alike) are written as {@code \\uXXXX}. Message ids come from the application's rows, sometimes
 * from its clients' idempotency keys.
 */
public final class Printable {
  private Printable() {}

  /** {@code value} with control and format characters escaped; null stays null. */
  public static String escape(String value) {
    if (value == null) {
      return null;
    }
    StringBuilder out = null;
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (needsEscape(c)) {
        if (out == null) {
          out = new StringBuilder(value.length() + 8).append(value, 0, i);
        }
        out.append(String.format("\\u%04x", (int) c));
      } else if (out != null) {
        out.append(c);
      }
    }
    return out == null ? value : out.toString();
  }

  private static boolean needsEscape(char c) {
    return Character.isISOControl(c)
        || c == '\u2028'
        || c == '\u2029'
        || Character.getType(c) == Character.FORMAT;
  }
}
