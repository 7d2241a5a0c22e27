package dev.outboxrelay.mapping;

import static dev.outboxrelay.mapping.TestRows.NOW;
import static dev.outboxrelay.mapping.TestRows.row;
import static dev.outboxrelay.mapping.TestRows.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.outboxrelay.mapping.MappingResult.Mapped;
import dev.outboxrelay.mapping.MappingResult.Unpublishable;
import dev.outboxrelay.store.ClaimedMessage;
import java.time.Duration;
import java.time.Instant;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Each reason a row is unpublishable, and its boundary. */
class UnpublishableRowTest {
  private static final int MAX_BYTES = 32;

  private static RecordMapper mapper(PayloadFormat format) {
    return mapper(RoutingConvention.OUTBOX_RELAY, format);
  }

  private static RecordMapper mapper(RoutingConvention convention, PayloadFormat format) {
    return new RecordMapper(
        new MappingSettings(
            convention.defaultTopicTemplate(), convention, format, MAX_BYTES, null));
  }

  private static String reason(RecordMapper mapper, ClaimedMessage row) {
    return assertInstanceOf(Unpublishable.class, mapper.map(row)).reasonCode();
  }

  private static void assertMapped(RecordMapper mapper, ClaimedMessage row) {
    assertInstanceOf(Mapped.class, mapper.map(row));
  }

  @Test
  void deadlineAtOrBeforeTheClaimIsExpired() {
    RecordMapper mapper = mapper(PayloadFormat.BYTES);

    assertEquals("DEADLINE_EXPIRED", reason(mapper, row().deliverBefore(NOW).build()));
    assertEquals(
        "DEADLINE_EXPIRED",
        reason(mapper, row().deliverBefore(NOW.minus(Duration.ofDays(3))).build()));
    assertMapped(mapper, row().deliverBefore(NOW.plusMillis(1)).build());
    assertMapped(mapper, row().deliverBefore(null).build());
  }

  @Test
  void theDeadlineIsTheClaimsJudgementNotTheMappersClock() {
    RecordMapper mapper = mapper(PayloadFormat.BYTES);
    Instant longAgo = Instant.EPOCH;
    Instant farAhead = Instant.parse("2999-01-01T00:00:00Z");

    assertMapped(mapper, row().deliverBefore(longAgo).deadlineExpired(false).build());
    assertEquals(
        "DEADLINE_EXPIRED",
        reason(mapper, row().deliverBefore(farAhead).deadlineExpired(true).build()));
  }

  @ParameterizedTest
  @EnumSource(PayloadFormat.class)
  void payloadLongerThanTheMaximumIsTooLarge(PayloadFormat format) {
    RecordMapper mapper = mapper(format);
    String fits = "\"" + "x".repeat(MAX_BYTES - 2) + "\"";

    assertMapped(mapper, row().payload(fits).build());
    assertEquals(
        "PAYLOAD_TOO_LARGE",
        reason(mapper, row().payload("\"" + "x".repeat(MAX_BYTES - 1) + "\"").build()));
    // as the claim returns such a row: its payload left in the database, never a tombstone
    assertEquals("PAYLOAD_TOO_LARGE", reason(mapper, row().payloadLeftOut(MAX_BYTES + 1).build()));
    // left out by a claim whose limit was lower than this mapper's maximum: not sent either
    assertEquals("PAYLOAD_TOO_LARGE", reason(mapper, row().payloadLeftOut(MAX_BYTES - 1).build()));
  }

  /**
   * Headers the claim left in the database (their text over the producer's record limit) park the
   * row as RECORD_TOO_LARGE, whatever else it holds: mapped without them, it was sent headerless.
   */
  @ParameterizedTest
  @EnumSource(PayloadFormat.class)
  void headersLeftOutByTheClaimAreTooLarge(PayloadFormat format) {
    RecordMapper mapper = mapper(format);
    assertMapped(mapper, row().payload("{}").build());
    assertEquals("RECORD_TOO_LARGE", reason(mapper, row().payload("{}").headersLeftOut().build()));
  }

  /**
   * Valid JSON beyond Jackson's default limits (strings of 20M characters, member names of 50k) is
   * published, not parked as invalid: payload.max.bytes is what bounds a payload.
   */
  @Test
  void longStringsAndMemberNamesAreValidJson() {
    RecordMapper mapper =
        new RecordMapper(
            new MappingSettings(
                    "t", RoutingConvention.OUTBOX_RELAY, PayloadFormat.JSON, 1 << 25, null)
                .withRecordMaxBytes(1 << 26));
    String longString = "x".repeat(20_000_001);
    String longName = "n".repeat(50_001);

    assertMapped(mapper, row().payload("{\"s\":\"" + longString + "\"}").build());
    assertMapped(mapper, row().payload("{\"" + longName + "\":1}").build());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "   ",
        "{",
        "{\"a\":1,}",
        "[1,2,]",
        "{'a':1}",
        "{a:1}",
        "NaN",
        "{}{}",
        "1 2",
        "{} x",
        "\"unterminated",
        "{\"a\":1,\"a\":2}",
      })
  void payloadThatIsNotExactlyOneJsonValueIsInvalid(String payload) {
    assertEquals(
        "PAYLOAD_INVALID_JSON", reason(mapper(PayloadFormat.JSON), row().payload(payload).build()));
  }

  @Test
  void nestingDeeperThanTheParserAllowsIsInvalidJsonNotAStackOverflow() {
    RecordMapper mapper =
        new RecordMapper(
            new MappingSettings(
                "t", RoutingConvention.OUTBOX_RELAY, PayloadFormat.JSON, 1 << 20, null));
    int depth = 100_000;

    assertEquals(
        "PAYLOAD_INVALID_JSON",
        reason(mapper, row().payload("[".repeat(depth) + "]".repeat(depth)).build()));
    assertEquals(
        "HEADERS_MALFORMED",
        reason(mapper, row().headersJson("{\"a\":" + "[".repeat(depth)).build()));
  }

  @Test
  void payloadThatIsNotUtf8IsInvalidJson() {
    byte[] payload = utf8("[\"..\"]");
    payload[2] = (byte) 0xC3;
    payload[3] = (byte) 0x28;

    assertEquals(
        "PAYLOAD_INVALID_JSON", reason(mapper(PayloadFormat.JSON), row().payload(payload).build()));
  }

  /**
   * UTF-8 is read strictly, as the string format reads it: UTF-16, a surrogate encoded as three
   * bytes and an overlong form are not JSON text. Read from bytes, Jackson took them and sent a
   * string that differs from the payload's (a lone surrogate, which Avro then writes as '?').
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(
      strings = {
        "FF FE 7B 00 7D 00", // {} in UTF-16LE, with its byte order mark
        "7B 00 7D 00", // {} in UTF-16LE
        "5B 22 ED A0 80 22 5D", // ["<U+D800 as three bytes>"]
        "5B 22 C0 A2 22 5D" // ["<an overlong quote>"]
      })
  void payloadThatIsNotStrictUtf8IsInvalidJson(String hex) {
    String[] parts = hex.split(" ");
    byte[] payload = new byte[parts.length];
    for (int i = 0; i < parts.length; i++) {
      payload[i] = (byte) Integer.parseInt(parts[i], 16);
    }

    assertEquals(
        "PAYLOAD_INVALID_JSON", reason(mapper(PayloadFormat.JSON), row().payload(payload).build()));
  }

  /** A UTF-8 byte order mark before the JSON is ignored, as RFC 8259 lets a parser do. */
  @Test
  void aByteOrderMarkBeforeJsonIsIgnored() {
    byte[] payload = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF, '[', '1', ']'};

    assertMapped(mapper(PayloadFormat.JSON), row().payload(payload).build());
  }

  @Test
  void bytesFormatNeverParsesThePayload() {
    assertMapped(mapper(PayloadFormat.BYTES), row().payload("{broken").build());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "123456789012345678901234567890",
        "9223372036854775808",
        "-9223372036854775809",
        "0.1000000000000000055511151231257827",
        "3.14159265358979323846264338327950288",
        "1e400",
        "-1e400",
        // Beyond a BigDecimal's exponent: Jackson's NumberFormatException, uncaught, failed the
        // task at every claim of the row.
        "1e-2147483649",
        "1e2147483648",
      })
  void numberThatNoSchemalessValueCarriesExactlyIsUnrepresentable(String number) {
    RecordMapper mapper =
        new RecordMapper(
            new MappingSettings(
                "t", RoutingConvention.OUTBOX_RELAY, PayloadFormat.JSON, 4096, null));

    assertEquals(
        "PAYLOAD_NUMBER_UNREPRESENTABLE",
        reason(mapper, row().payload("{\"a\":[" + number + "]}").build()));
    assertEquals("PAYLOAD_NUMBER_UNREPRESENTABLE", reason(mapper, row().payload(number).build()));
  }

  @Test
  void numberLongerThanTheParserConvertsIsUnrepresentableNotInvalid() {
    RecordMapper mapper =
        new RecordMapper(
            new MappingSettings(
                "t", RoutingConvention.OUTBOX_RELAY, PayloadFormat.JSON, 1 << 20, null));
    String integer = "1".repeat(1_001);
    String decimal = "0." + "5".repeat(1_000);

    assertEquals("PAYLOAD_NUMBER_UNREPRESENTABLE", reason(mapper, row().payload(integer).build()));
    assertEquals(
        "PAYLOAD_NUMBER_UNREPRESENTABLE",
        reason(mapper, row().payload("{\"a\":[" + decimal + "]}").build()));
    // Still invalid when the JSON around the number is.
    assertEquals(
        "PAYLOAD_INVALID_JSON", reason(mapper, row().payload("[" + integer + ",]").build()));
    assertEquals(
        "PAYLOAD_INVALID_JSON",
        reason(mapper, row().payload("{\"a\":" + integer + ",\"a\":1}").build()));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "[]",
        "\"text\"",
        "42",
        "null",
        "{\"a\":[\"x\"]}",
        "{\"a\":{\"b\":\"c\"}}",
        "{\"a\":\"1\",\"a\":\"2\"}",
        "{\"a\":\"1\"} trailing",
        "{\"a\":\"1\"}{}",
        "{\"a\":",
        "not json",
        "",
      })
  void headersThatAreNotAnObjectOfScalarsAreMalformed(String headersJson) {
    assertEquals(
        "HEADERS_MALFORMED",
        reason(mapper(PayloadFormat.BYTES), row().headersJson(headersJson).build()));
  }

  @ParameterizedTest
  @ValueSource(strings = {"outbox.message_id", "outbox.failure_reason", "outbox.anything"})
  void rowHeaderUnderTheOutboxPrefixIsReserved(String name) {
    for (RoutingConvention convention : RoutingConvention.values()) {
      assertEquals(
          "HEADER_NAME_RESERVED",
          reason(
              mapper(convention, PayloadFormat.BYTES),
              row().headersJson("{\"" + name + "\":\"spoof\"}").build()),
          convention::name);
    }
  }

  @Test
  void debeziumHeaderNamesAreReservedOnlyInTheDebeziumConvention() {
    for (String name : new String[] {"id", "eventType"}) {
      ClaimedMessage row = row().headersJson("{\"" + name + "\":\"spoof\"}").build();

      assertEquals(
          "HEADER_NAME_RESERVED",
          reason(mapper(RoutingConvention.DEBEZIUM, PayloadFormat.BYTES), row));
      assertMapped(mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES), row);
    }
  }

  @Test
  void illegalTopicIsUnroutable() {
    RecordMapper mapper = mapper(PayloadFormat.BYTES);

    assertEquals("TOPIC_UNROUTABLE", reason(mapper, row().topic("no spaces please").build()));
    assertEquals("TOPIC_UNROUTABLE", reason(mapper, row().aggregateType("a/b").build()));
    assertEquals("TOPIC_UNROUTABLE", reason(mapper, row().aggregateType("x".repeat(250)).build()));
    assertEquals(
        "TOPIC_UNROUTABLE",
        reason(mapper, row().topic("__consumer.offsets").build()),
        "collides with an internal topic");
  }

  /**
   * topic.allowed.regex: a row may name any topic, Connect's own included, unless the operator
   * bounds where rows go. The whole name must match; the row's own topic and the template alike.
   */
  @Test
  void aTopicOutsideTheAllowedOnesIsNotAllowed() {
    RecordMapper mapper =
        new RecordMapper(
            new MappingSettings(
                    RoutingConvention.OUTBOX_RELAY.defaultTopicTemplate(),
                    RoutingConvention.OUTBOX_RELAY,
                    PayloadFormat.BYTES,
                    MAX_BYTES,
                    null)
                .withAllowedTopics(Pattern.compile("outbox\\..*")));

    assertEquals("TOPIC_NOT_ALLOWED", reason(mapper, row().topic("connect-configs").build()));
    assertEquals("TOPIC_NOT_ALLOWED", reason(mapper, row().topic("xoutbox.orders").build()));
    assertMapped(mapper, row().topic("outbox.orders").build());
    assertMapped(mapper, row().aggregateType("orders").build()); // outbox.orders, the template
    assertEquals(
        "TOPIC_UNROUTABLE", reason(mapper, row().topic("outbox.no spaces").build()), "first");
    assertMapped(mapper(PayloadFormat.BYTES), row().topic("connect-configs").build());
  }

  /** A row's record in the dead-letter topic would pass for a dead letter. */
  @Test
  void theDeadLetterTopicIsNoRowsTopic() {
    RecordMapper mapper =
        new RecordMapper(
            new MappingSettings(
                "${aggregate_type}",
                RoutingConvention.OUTBOX_RELAY,
                PayloadFormat.BYTES,
                MAX_BYTES,
                "outbox.dead-letter"));

    assertEquals("TOPIC_NOT_ALLOWED", reason(mapper, row().topic("outbox.dead-letter").build()));
    assertEquals(
        "TOPIC_NOT_ALLOWED", reason(mapper, row().aggregateType("outbox.dead-letter").build()));
    assertEquals(
        "TOPIC_NOT_ALLOWED",
        reason(mapper, row().topic("outbox_dead-letter").build()),
        "a name Kafka takes for the dead-letter topic's ('.' and '_' collide)");
    assertMapped(mapper, row().topic("outbox.orders").build());
  }

  @Test
  void theFirstFailingCheckNamesTheReason() {
    RecordMapper mapper = mapper(PayloadFormat.JSON);
    TestRows allBad =
        row()
            .deliverBefore(NOW)
            .payload("{" + "x".repeat(MAX_BYTES))
            .topic("bad topic")
            .headersJson("[]");

    assertEquals("DEADLINE_EXPIRED", reason(mapper, allBad.build()));
    assertEquals("PAYLOAD_TOO_LARGE", reason(mapper, allBad.deliverBefore(null).build()));
    assertEquals("TOPIC_UNROUTABLE", reason(mapper, allBad.payload("{").build()));
    assertEquals("HEADERS_MALFORMED", reason(mapper, allBad.topic("ok").build()));
    assertEquals("PAYLOAD_INVALID_JSON", reason(mapper, allBad.headersJson(null).build()));
  }

  @Test
  void everyReasonIsAValidCodeAndListed() throws IllegalAccessException {
    java.util.Set<Object> declared = new java.util.HashSet<>();
    for (var field : UnpublishableReasons.class.getFields()) {
      if (field.getType() == String.class
          && java.lang.reflect.Modifier.isStatic(field.getModifiers())) {
        declared.add(field.get(null));
      }
    }
    assertEquals(declared, UnpublishableReasons.ALL, "every reason declared is listed");
    assertEquals(11, UnpublishableReasons.ALL.size());
    for (String code : UnpublishableReasons.ALL) {
      assertEquals(code, new Unpublishable(code).reasonCode());
    }
  }
}
