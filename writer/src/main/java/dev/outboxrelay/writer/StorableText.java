package dev.outboxrelay.writer;

/**
 * Text PostgreSQL can hold as it is. A UTF-16 surrogate without its pair is no character: encoding
 * to UTF-8, the driver stores a '?' in its place, so two different strings could be stored as one.
 */
public final class StorableText {
  private StorableText() {}

  /** Whether {@code value} holds a surrogate without its pair (UTF-8 encoders write '?'). */
  public static boolean hasUnpairedSurrogate(String value) {
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (Character.isHighSurrogate(c)
          && i + 1 < value.length()
          && Character.isLowSurrogate(value.charAt(i + 1))) {
        i++; // a pair: one supplementary character
      } else if (Character.isSurrogate(c)) {
        return true;
      }
    }
    return false;
  }
}
