package dev.outboxrelay.writer;

/**
 * A value read from a row, safe to write into a log line or onto a terminal. Control characters (a
 * line break would forge a log line of its own; an escape sequence rewrites a terminal), format
 * characters (bidirectional overrides reorder what follows; zero-width characters and Unicode tags
 * make two ids look alike), the other invisible ones (variation selectors, the combining grapheme
 * joiner, the Hangul fillers) and unpaired surrogates (written as '?' by an encoder) are written as
 * {@code \\uXXXX}, one outside the Basic Multilingual Plane as its two UTF-16 units. Message ids
 * come from the application's rows, sometimes from its clients' idempotency keys, and are taken as
 * they are (the relay accepts any id the table holds).
 *
 * <p>One rule for every module: the writer's exceptions and {@link OutboxMessage#toString()}, the
 * connector's log lines and the CLI's output (which escapes backslashes on top) all use it.
 */
public final class Printable {
  private Printable() {}

  /** {@code value} with control and format characters escaped; null stays null. */
  public static String escape(String value) {
    if (value == null) {
      return null;
    }
    StringBuilder out = null;
    for (int i = 0; i < value.length(); ) {
      int codePoint = value.codePointAt(i);
      int units = Character.charCount(codePoint);
      if (needsEscape(codePoint)) {
        if (out == null) {
          out = new StringBuilder(value.length() + 8).append(value, 0, i);
        }
        for (int unit = i; unit < i + units; unit++) {
          out.append(String.format("\\u%04x", (int) value.charAt(unit)));
        }
      } else if (out != null) {
        out.append(value, i, i + units);
      }
      i += units;
    }
    return out == null ? value : out.toString();
  }

  private static boolean needsEscape(int codePoint) {
    return Character.isISOControl(codePoint)
        || codePoint == '\u2028'
        || codePoint == '\u2029'
        || Character.getType(codePoint) == Character.FORMAT
        || Character.getType(codePoint) == Character.SURROGATE // unpaired
        || isInvisible(codePoint);
  }

  /** Shown as nothing, though not format characters: a variation selector, U+034F, a filler. */
  private static boolean isInvisible(int codePoint) {
    Character.UnicodeBlock block = Character.UnicodeBlock.of(codePoint);
    return block == Character.UnicodeBlock.VARIATION_SELECTORS
        || block == Character.UnicodeBlock.VARIATION_SELECTORS_SUPPLEMENT
        || codePoint == 0x034F
        || codePoint == 0x115F
        || codePoint == 0x1160
        || codePoint == 0x3164
        || codePoint == 0xFFA0;
  }
}
