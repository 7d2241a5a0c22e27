package dev.outboxrelay.mapping;

import static dev.outboxrelay.mapping.TestRows.row;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.outboxrelay.mapping.InferredSchema.NullMembers;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Whatever a JSON payload holds, the mapping maps the row or names why it cannot be published: an
 * exception out of it fails the task at every claim of the row (as a number whose exponent no
 * BigDecimal holds did). Payloads composed at random, with a fixed seed, of the pieces that have
 * tripped parsers and converters: numbers at the edges of a long, a double and a BigDecimal's
 * exponent, lone surrogates, empty names, nesting, mixed arrays, broken syntax.
 */
class MappingNeverThrowsTest {
  private static final String[] PIECES = {
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"a\"",
    "\"b\"",
    "\"\"",
    "{\"\":1}",
    "1",
    "-0",
    "0.5",
    "1e5",
    "1E-400",
    "1e400",
    "-1e-2147483648",
    "1e2147483647",
    "1e2147483648",
    "0.0e-2147483649",
    "0e99999",
    "123456789012345678901234567890",
    "9223372036854775808",
    "-9223372036854775809",
    "1.7976931348623157e309",
    "4.9e-325",
    "0.1e-10",
    "1.0e+2",
    "00",
    "-",
    "1.",
    ".5",
    "true",
    "null",
    "\"\\ud83d\"",
    "\"\\ud800\\udc00\"",
    "\"\\u0000\"",
    "\"x\"",
    " ",
    "[[]]",
    "{}",
    "[{}]",
    "[null]",
    "[1,\"a\"]",
    "\u00e9",
    "\"\uD83D\uDE00\"",
  };

  @Test
  void noPayloadMakesTheMappingThrow() {
    List<RecordMapper> mappers =
        List.of(
            new RecordMapper(settings()),
            new RecordMapper(
                settings().withInferredSchema(new InferredSchema("payload", NullMembers.IGNORE))),
            new RecordMapper(
                settings()
                    .withInferredSchema(
                        new InferredSchema("payload", NullMembers.OPTIONAL_BYTES))));
    Random random = new Random(20261204);
    List<String> thrown = new ArrayList<>();
    for (int i = 0; i < 30_000 && thrown.size() < 10; i++) {
      StringBuilder payload = new StringBuilder();
      for (int pieces = 1 + random.nextInt(12); pieces > 0; pieces--) {
        payload.append(PIECES[random.nextInt(PIECES.length)]);
      }
      for (RecordMapper mapper : mappers) {
        try {
          mapper.map(row().payload(payload.toString().getBytes(StandardCharsets.UTF_8)).build());
        } catch (RuntimeException e) {
          thrown.add(e.getClass().getSimpleName() + " for " + payload);
        }
      }
    }
    assertEquals(List.of(), thrown);
  }

  private static MappingSettings settings() {
    return new MappingSettings("t", RoutingConvention.DEBEZIUM, PayloadFormat.JSON, 1 << 20, null);
  }
}
