package dev.outboxrelay.mapping;

import static dev.outboxrelay.mapping.RecordMapperTest.headers;
import static dev.outboxrelay.mapping.TestRows.row;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.mapping.InferredSchema.NullMembers;
import dev.outboxrelay.mapping.MappingResult.Unpublishable;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.Lease;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.StringConverter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class DeadLetterTest {
  private static final String DLQ = "outbox.dead-letter";

  private static RecordMapper mapper(RoutingConvention convention, String deadLetterTopic) {
    return new RecordMapper(
        new MappingSettings(
            convention.defaultTopicTemplate(),
            convention,
            PayloadFormat.JSON,
            64,
            deadLetterTopic));
  }

  /** Format JSON, payloads of at most 64 bytes, records of at most {@code recordMaxBytes}. */
  private static RecordMapper jsonMapper(int recordMaxBytes) {
    return new RecordMapper(
        new MappingSettings(
                RoutingConvention.OUTBOX_RELAY.defaultTopicTemplate(),
                RoutingConvention.OUTBOX_RELAY,
                PayloadFormat.JSON,
                64,
                DLQ)
            .withRecordMaxBytes(recordMaxBytes));
  }

  @Test
  void deadLetterCarriesTheRawPayloadTheHeadersAndTheReason() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, DLQ);
    ClaimedMessage row =
        row()
            .messageId("m-5")
            .seq(5)
            .aggregateId("order-5")
            .payload("{not json")
            .correlationId("c-1")
            .headersJson("{\"trace\":\"t-1\"}")
            .lease(new Lease("worker-3", 31))
            .build();
    String reason = assertInstanceOf(Unpublishable.class, mapper.map(row)).reasonCode();

    SourceRecord record = mapper.deadLetter(row, reason);

    assertEquals(DLQ, record.topic());
    assertNull(record.kafkaPartition());
    assertEquals(Schema.STRING_SCHEMA, record.keySchema());
    assertEquals("order-5", record.key());
    assertEquals(Schema.OPTIONAL_BYTES_SCHEMA, record.valueSchema());
    assertArrayEquals(row.payload(), (byte[]) record.value());
    assertEquals(TestRows.CREATED_AT.toEpochMilli(), record.timestamp());
    assertEquals(
        List.of(
            "outbox.message_id=m-5",
            "outbox.event_type=OrderPlaced",
            "outbox.aggregate_type=order",
            "outbox.instance_key=tenant-a",
            "outbox.correlation_id=c-1",
            "trace=t-1",
            "outbox.failure_reason=PAYLOAD_INVALID_JSON"),
        headers(record));
    assertEquals(SourceOffsets.partition(row), record.sourcePartition());
    assertEquals("m-5", SourceOffsets.messageId(record));
    assertEquals(31L, SourceOffsets.leaseToken(record));
  }

  @Test
  void debeziumDeadLetterUsesDebeziumHeaderNames() {
    RecordMapper mapper = mapper(RoutingConvention.DEBEZIUM, DLQ);

    SourceRecord record =
        mapper.deadLetter(row().messageId("m-6").topic("bad topic").build(), "TOPIC_UNROUTABLE");

    assertEquals(DLQ, record.topic());
    assertEquals(
        List.of("id=m-6", "eventType=OrderPlaced", "outbox.failure_reason=TOPIC_UNROUTABLE"),
        headers(record));
  }

  @Test
  void malformedOrReservedRowHeadersAreLeftOutEntirely() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, DLQ);
    List<String> expected =
        List.of(
            "outbox.message_id=msg-1",
            "outbox.event_type=OrderPlaced",
            "outbox.aggregate_type=order",
            "outbox.instance_key=tenant-a");

    for (String headersJson :
        new String[] {
          "{\"ok\":\"1\",\"bad\":[1]}", "{\"ok\":\"1\",\"outbox.message_id\":\"spoofed\"}"
        }) {
      SourceRecord record =
          mapper.deadLetter(row().headersJson(headersJson).build(), "HEADERS_MALFORMED");

      List<String> actual = headers(record);
      assertEquals(expected, actual.subList(0, 4), headersJson);
      assertEquals(
          List.of("outbox.failure_reason=HEADERS_MALFORMED"), actual.subList(4, actual.size()));
    }
  }

  @ParameterizedTest(name = "payload read by the claim: {0}")
  @ValueSource(booleans = {true, false})
  void payloadLargerThanTheMaximumIsLeftOutAndSaidSo(boolean read) {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, DLQ);
    ClaimedMessage row =
        read ? row().payload("x".repeat(65)).build() : row().payloadLeftOut(65).build();

    SourceRecord record = mapper.deadLetter(row, "PAYLOAD_TOO_LARGE");

    assertNull(record.value());
    assertEquals("true", record.headers().lastWithName(OutboxHeaders.PAYLOAD_OMITTED).value());
    assertEquals(
        "PAYLOAD_TOO_LARGE", record.headers().lastWithName(OutboxHeaders.FAILURE_REASON).value());
  }

  /**
   * A row too large for the producer because of its headers: its dead-letter record leaves them out
   * with the payload, and fits.
   */
  @Test
  void aRecordTooLargeForItsHeadersIsDeadLetteredWithoutThem() {
    RecordMapper mapper = jsonMapper(2_000);
    ClaimedMessage row =
        row().payload("{}").headersJson("{\"big\":\"" + "x".repeat(3_000) + "\"}").build();
    String reason = assertInstanceOf(Unpublishable.class, mapper.map(row)).reasonCode();
    assertEquals("RECORD_TOO_LARGE", reason);

    SourceRecord record = mapper.deadLetter(row, reason);

    assertNull(record.value());
    assertNull(record.headers().lastWithName("big"));
    assertEquals("true", record.headers().lastWithName(OutboxHeaders.PAYLOAD_OMITTED).value());
    assertEquals(reason, record.headers().lastWithName(OutboxHeaders.FAILURE_REASON).value());
    assertTrue(RecordSize.upperBound(record, null) <= 2_000);
  }

  /**
   * Headers the claim never read (over the producer's limit): the dead-letter record says they are
   * left out, and keeps the payload, which fits.
   */
  @Test
  void headersTheClaimLeftOutAreSaidToBeLeftOut() {
    RecordMapper mapper = jsonMapper(2_000);
    ClaimedMessage row = row().payload("{\"a\":1}").headersLeftOut().build();

    SourceRecord record = mapper.deadLetter(row, "RECORD_TOO_LARGE");

    assertEquals("true", record.headers().lastWithName(OutboxHeaders.HEADERS_OMITTED).value());
    assertNull(record.headers().lastWithName(OutboxHeaders.PAYLOAD_OMITTED));
    assertEquals("{\"a\":1}", new String((byte[]) record.value(), StandardCharsets.UTF_8));

    // Its payload left out too (over payload.max.bytes): the bare record says both.
    SourceRecord bare =
        mapper.deadLetter(row().payloadLeftOut(65).headersLeftOut().build(), "PAYLOAD_TOO_LARGE");
    assertEquals("true", bare.headers().lastWithName(OutboxHeaders.PAYLOAD_OMITTED).value());
    assertEquals("true", bare.headers().lastWithName(OutboxHeaders.HEADERS_OMITTED).value());
  }

  /**
   * The table bounds neither the event type, nor the aggregate type, nor the correlation id: one
   * too large for the producer even without the payload leaves only the message id in the
   * dead-letter record. Handed over as it was, the producer would refuse it and fail the task on
   * every claim of the row.
   */
  @ParameterizedTest
  @EnumSource(RoutingConvention.class)
  void aRecordTooLargeForTheRelaysOwnHeadersIsDeadLetteredWithTheMessageIdOnly(
      RoutingConvention convention) {
    RecordMapper mapper =
        new RecordMapper(
            new MappingSettings(
                    convention.defaultTopicTemplate(), convention, PayloadFormat.JSON, 64, DLQ)
                .withRecordMaxBytes(2_000));
    ClaimedMessage row = row().messageId("m-9").payload("{}").eventType("E".repeat(3_000)).build();
    String reason = assertInstanceOf(Unpublishable.class, mapper.map(row)).reasonCode();

    SourceRecord record = mapper.deadLetter(row, reason);

    assertTrue(RecordSize.upperBound(record, null) <= 2_000);
    assertNull(record.value());
    String idHeader =
        convention == RoutingConvention.DEBEZIUM
            ? OutboxHeaders.DEBEZIUM_ID
            : OutboxHeaders.MESSAGE_ID;
    assertEquals("m-9", record.headers().lastWithName(idHeader).value());
    assertEquals(reason, record.headers().lastWithName(OutboxHeaders.FAILURE_REASON).value());
    assertEquals("true", record.headers().lastWithName(OutboxHeaders.HEADERS_OMITTED).value());
    assertEquals(4, record.headers().size());
    assertEquals(row.aggregateId(), record.key());
  }

  /**
   * record.timestamp=send_time: neither a record nor a dead letter (in full, bare of the payload,
   * or with the message id only) carries the row's creation time; the producer stamps each.
   */
  @Test
  void underSendTimeNoRecordCarriesTheRowsCreationTime() {
    MappingSettings sendTime =
        new MappingSettings(
                RoutingConvention.OUTBOX_RELAY.defaultTopicTemplate(),
                RoutingConvention.OUTBOX_RELAY,
                PayloadFormat.JSON,
                64,
                DLQ)
            .withRecordMaxBytes(2_000)
            .withRecordTimestamp(RecordTimestamp.SEND_TIME);
    RecordMapper mapper = new RecordMapper(sendTime);
    RecordMapper createdAt =
        new RecordMapper(sendTime.withRecordTimestamp(RecordTimestamp.CREATED_AT));
    ClaimedMessage valid = row().payload("{}").build();
    ClaimedMessage invalid = row().payload("{not json").build();
    ClaimedMessage tooLarge = row().payload("{}").eventType("E".repeat(3_000)).build();

    assertNull(RecordMapperTest.mapped(mapper, valid).timestamp());
    assertEquals(
        TestRows.CREATED_AT.toEpochMilli(), RecordMapperTest.mapped(createdAt, valid).timestamp());
    for (ClaimedMessage row : List.of(invalid, tooLarge)) {
      String reason = assertInstanceOf(Unpublishable.class, mapper.map(row)).reasonCode();
      assertNull(mapper.deadLetter(row, reason).timestamp(), reason);
      assertEquals(
          TestRows.CREATED_AT.toEpochMilli(),
          createdAt.deadLetter(row, reason).timestamp(),
          reason);
    }
    String reason = "PAYLOAD_TOO_LARGE";
    SourceRecord bare = mapper.deadLetter(row().payload("x".repeat(1_900)).build(), reason);
    assertNull(bare.value());
    assertNull(bare.timestamp());
  }

  /**
   * An aggregate id too large for the record (the table bounds none): the dead letter goes without
   * a key rather than be refused by the producer on every claim; the message id leads back.
   */
  @Test
  void aKeyTooLargeForTheRecordIsDeadLetteredWithoutIt() {
    RecordMapper mapper = jsonMapper(2_000);
    ClaimedMessage row =
        row().messageId("m-key").aggregateId("k".repeat(3_000)).payload("{}").build();
    String reason = assertInstanceOf(Unpublishable.class, mapper.map(row)).reasonCode();

    SourceRecord record = mapper.deadLetter(row, reason);

    assertNull(record.key());
    assertEquals("m-key", record.headers().lastWithName(OutboxHeaders.MESSAGE_ID).value());
    assertTrue(RecordSize.upperBound(record, null) <= 2_000);
    assertEquals("m-key", SourceOffsets.messageId(record), "its acknowledgement maps to the row");
  }

  @Test
  void payloadAtTheMaximumIsKept() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, DLQ);
    ClaimedMessage row = row().payload("x".repeat(64)).build();

    SourceRecord record = mapper.deadLetter(row, "PAYLOAD_INVALID_JSON");

    assertArrayEquals(row.payload(), (byte[]) record.value());
    assertNull(record.headers().lastWithName(OutboxHeaders.PAYLOAD_OMITTED));
  }

  /**
   * Format STRING: the dead-letter value is the payload's text, which the StringConverter of such a
   * connector writes as it is (bytes would become "[B@…"), and with StringConverter it reads back
   * as the payload; a payload that is not UTF-8 (why such a row is unpublishable) is left out.
   */
  @Test
  void withFormatStringTheDeadLetterValueIsThePayloadsText() {
    RecordMapper mapper =
        new RecordMapper(
            new MappingSettings(
                RoutingConvention.DEBEZIUM.defaultTopicTemplate(),
                RoutingConvention.DEBEZIUM,
                PayloadFormat.STRING,
                64,
                DLQ));
    ClaimedMessage text = row().payload("{\"total\":\"19.99 €\"}").build();

    SourceRecord record = mapper.deadLetter(text, "TOPIC_NOT_ALLOWED");

    assertEquals(Schema.OPTIONAL_STRING_SCHEMA, record.valueSchema());
    assertEquals("{\"total\":\"19.99 €\"}", record.value());
    StringConverter converter = new StringConverter();
    converter.configure(Map.of(), false);
    assertArrayEquals(
        text.payload(), converter.fromConnectData(DLQ, record.valueSchema(), record.value()));
    assertNull(record.headers().lastWithName(OutboxHeaders.PAYLOAD_OMITTED));

    ClaimedMessage notText =
        row()
            .payload(new byte[] {'a', (byte) 0xC3, 'b'})
            .headersJson("{\"trace\":\"t-1\"}")
            .build();
    String reason = assertInstanceOf(Unpublishable.class, mapper.map(notText)).reasonCode();
    SourceRecord omitted = mapper.deadLetter(notText, reason);
    assertNull(omitted.value());
    assertEquals("true", omitted.headers().lastWithName(OutboxHeaders.PAYLOAD_OMITTED).value());
    assertEquals("t-1", omitted.headers().lastWithName("trace").value(), "the row's headers kept");
  }

  /**
   * With format JSON the converter is JsonConverter, which writes a dead letter's payload bytes as
   * base64: a payload that fits as it is but not as base64 is left out, not sent for the producer
   * to refuse (and fail the task on every claim of the row). With an inferred schema too: the
   * converter may be JsonConverter with schemas or a JSON Schema one, which write bytes as base64;
   * counted as raw bytes there, the dead letter of a row that is no JSON object (a top-level array:
   * valid JSON, but no schema holds it) failed the task at every claim of the row.
   */
  @ParameterizedTest(name = "inferred schema: {0}")
  @ValueSource(booleans = {false, true})
  void withFormatJsonTheDeadLetterPayloadIsCountedAsBase64(boolean inferred) {
    MappingSettings settings =
        new MappingSettings(
                RoutingConvention.OUTBOX_RELAY.defaultTopicTemplate(),
                RoutingConvention.OUTBOX_RELAY,
                PayloadFormat.JSON,
                10_000,
                DLQ)
            .withRecordMaxBytes(9_000);
    RecordMapper mapper =
        new RecordMapper(
            inferred
                ? settings.withInferredSchema(new InferredSchema("payload", NullMembers.IGNORE))
                : settings);
    String payload = inferred ? "[\"" + "x".repeat(7_500) + "\"]" : "{not json" + "x".repeat(7_500);
    ClaimedMessage row = row().payload(payload).build();
    String reason = assertInstanceOf(Unpublishable.class, mapper.map(row)).reasonCode();
    assertEquals(
        inferred
            ? UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE
            : UnpublishableReasons.PAYLOAD_INVALID_JSON,
        reason);

    SourceRecord record = mapper.deadLetter(row, reason);

    JsonConverter converter = new JsonConverter();
    converter.configure(Map.of("schemas.enable", Boolean.toString(inferred)), false);
    byte[] base64 = converter.fromConnectData(DLQ, Schema.OPTIONAL_BYTES_SCHEMA, row.payload());
    assertTrue(base64.length > 9_000, "as base64 the payload alone is over the limit");
    assertNull(record.value());
    assertEquals("true", record.headers().lastWithName(OutboxHeaders.PAYLOAD_OMITTED).value());
  }

  /**
   * With JsonConverter set on the connector, a dead letter is counted as it writes the value: bytes
   * as base64, a string with its escapes, a left-out payload as null, in its envelope with schemas.
   * Payloads and event types across the limit: what the producer is given always fits, where
   * counted as raw bytes a payload over about three quarters of the limit (or, with schemas, a dead
   * letter without one just under it) failed the task at every claim of the row.
   */
  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("dev.outboxrelay.mapping.RecordSizeTest#jsonConverters")
  void withJsonConverterADeadLetterIsCountedAsItIsWritten(
      PayloadFormat format, ConverterKind converter) {
    int limit = 3_000;
    // Debezium's two headers: less margin in the varints than the relay's four
    RecordMapper mapper =
        new RecordMapper(
            new MappingSettings(
                    RoutingConvention.DEBEZIUM.defaultTopicTemplate(),
                    RoutingConvention.DEBEZIUM,
                    format,
                    10_000,
                    DLQ)
                .withRecordMaxBytes(limit)
                .withValueConverter(converter));
    JsonConverter json = new JsonConverter();
    json.configure(
        Map.of("schemas.enable", Boolean.toString(converter == ConverterKind.JSON_WITH_SCHEMAS)),
        false);
    List<ClaimedMessage> rows = new ArrayList<>();
    for (int n = limit / 3; n <= limit; n += 3) {
      rows.add(row().payload("\"".repeat(n)).build());
    }
    for (int n = limit - 400; n <= limit; n++) {
      rows.add(row().payload("p").eventType("E".repeat(n)).build());
    }
    for (ClaimedMessage row : rows) {
      SourceRecord record = mapper.deadLetter(row, "TOPIC_NOT_ALLOWED");
      byte[] written = json.fromConnectData(DLQ, record.valueSchema(), record.value());
      int size = RecordSizeTest.producerUpperBound(record, written);
      assertTrue(size <= limit, () -> size + " bytes, over " + limit);
    }
  }

  @Test
  void withoutADeadLetterTopicItIsAnIllegalState() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, null);

    assertThrows(
        IllegalStateException.class, () -> mapper.deadLetter(row().build(), "DEADLINE_EXPIRED"));
  }

  @Test
  void reasonMustBeAReasonCode() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, DLQ);

    for (String reason : new String[] {null, "", "lower_case", "WITH SPACE", "X".repeat(65)}) {
      assertThrows(IllegalArgumentException.class, () -> mapper.deadLetter(row().build(), reason));
    }
  }
}
