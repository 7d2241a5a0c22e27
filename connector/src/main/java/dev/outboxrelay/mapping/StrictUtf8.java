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
}
