package dev.outboxrelay.mapping;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * UTF-8 read strictly: malformed input (an overlong form, an encoded surrogate, a truncated
 * sequence) is an error, never replaced. The relay's string and JSON payloads and the operator
 * CLI's payload view read text this way.
 */
public final class StrictUtf8 {
  private StrictUtf8() {}

  public static String decode(byte[] bytes) throws CharacterCodingException {
    return StandardCharsets.UTF_8
        .newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT)
        .decode(ByteBuffer.wrap(bytes))
        .toString();
  }

  /**
   * Whether UTF-8 can encode {@code text}: no surrogate without its other half (from a JSON escape
   * such as {@code \\ud83d}), which encoders write as '?'.
   */
  static boolean isEncodable(String text) {
    for (int i = 0; i < text.length(); i++) {
      if (Character.isSurrogate(text.charAt(i))) {
        if (!Character.isHighSurrogate(text.charAt(i))
            || i + 1 == text.length()
            || !Character.isLowSurrogate(text.charAt(i + 1))) {
          return false;
        }
        i++;
      }
    }
    return true;
  }
}
