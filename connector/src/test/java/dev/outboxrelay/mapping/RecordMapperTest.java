package dev.outboxrelay.mapping;

import static dev.outboxrelay.mapping.TestRows.CREATED_AT;
import static dev.outboxrelay.mapping.TestRows.NOW;
import static dev.outboxrelay.mapping.TestRows.row;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.outboxrelay.mapping.MappingResult.Mapped;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.Lease;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.kafka.connect.converters.ByteArrayConverter;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

class RecordMapperTest {

  static RecordMapper mapper(RoutingConvention convention, PayloadFormat format) {
    return new RecordMapper(
        new MappingSettings(
            convention.defaultTopicTemplate(), convention, format, 1024, "outbox.dead-letter"));
  }

  static SourceRecord mapped(RecordMapper mapper, ClaimedMessage row) {
    return assertInstanceOf(Mapped.class, mapper.map(row)).record();
  }

  /** Header names and values in order; values as the strings they are. */
  static List<String> headers(SourceRecord record) {
    List<String> rendered = new ArrayList<>();
    for (Header header : record.headers()) {
      rendered.add(header.key() + "=" + header.value());
    }
    return rendered;
  }

  @Test
  void recordCarriesRoutingKeyTimestampAndSourcePosition() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES);
    ClaimedMessage row =
        row()
            .seq(99)
            .messageId("m-99")
            .instanceKey("tenant-b")
            .aggregateType("invoice")
            .aggregateId("inv-5")
            .lease(new Lease("worker-2", 12))
            .build();

    SourceRecord record = mapped(mapper, row);

    assertEquals("outbox.invoice", record.topic());
    assertNull(record.kafkaPartition());
    assertEquals(Schema.STRING_SCHEMA, record.keySchema());
    assertEquals("inv-5", record.key());
    assertEquals(CREATED_AT.toEpochMilli(), record.timestamp());
    assertEquals(Map.of("instance_key", "tenant-b"), record.sourcePartition());
    assertEquals(
        Map.of("message_id", "m-99", "lease_token", 12L, "seq", 99L), record.sourceOffset());
    assertInstanceOf(Long.class, record.sourceOffset().get("lease_token"));
    assertInstanceOf(Long.class, record.sourceOffset().get("seq"));
  }

  @Test
  void outboxRelayHeadersThenTheRowsOwnInOrder() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES);
    ClaimedMessage row =
        row()
            .messageId("m-1")
            .instanceKey("tenant-a")
            .aggregateType("order")
            .eventType("OrderPlaced")
            .correlationId("corr-9")
            .headersJson("{\"trace\":\"abc\",\"id\":\"app-id\"}")
            .build();

    SourceRecord record = mapped(mapper, row);

    assertEquals(
        List.of(
            "outbox.message_id=m-1",
            "outbox.event_type=OrderPlaced",
            "outbox.aggregate_type=order",
            "outbox.instance_key=tenant-a",
            "outbox.correlation_id=corr-9",
            "trace=abc",
            "id=app-id"),
        headers(record));
    for (Header header : record.headers()) {
      assertEquals(Schema.STRING_SCHEMA, header.schema(), header.key());
    }
  }

  @Test
  void correlationIdHeaderOnlyWhenPresent() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES);

    SourceRecord record = mapped(mapper, row().correlationId(null).build());

    assertNull(record.headers().lastWithName(OutboxHeaders.CORRELATION_ID));
    assertEquals(4, record.headers().size());
  }

  @Test
  void debeziumConventionUsesDebeziumHeaderNamesAndTopic() {
    RecordMapper mapper = mapper(RoutingConvention.DEBEZIUM, PayloadFormat.BYTES);
    ClaimedMessage row =
        row()
            .messageId("8d4c-uuid")
            .aggregateType("customer")
            .aggregateId("cust-3")
            .eventType("CustomerCreated")
            .correlationId("corr-1")
            .headersJson("{\"traceparent\":\"00-abc-01\"}")
            .build();

    SourceRecord record = mapped(mapper, row);

    assertEquals("outbox.event.customer", record.topic());
    assertEquals("cust-3", record.key());
    assertEquals(
        List.of("id=8d4c-uuid", "eventType=CustomerCreated", "traceparent=00-abc-01"),
        headers(record));
    assertArrayEquals(row.payload(), (byte[]) record.value());
  }

  @Test
  void rowHeaderScalarsBecomeStringsAsWritten() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES);
    ClaimedMessage row =
        row()
            .headersJson(
                "{\"s\":\"t\\u00e9xt \\\"q\\\"\",\"i\":42,\"d\":1.50,\"e\":1e3,"
                    + "\"t\":true,\"f\":false,\"n\":null,\"empty\":\"\"}")
            .build();

    SourceRecord record = mapped(mapper, row);

    Map<String, Object> values = new LinkedHashMap<>();
    Map<String, Schema> schemas = new LinkedHashMap<>();
    for (Header header : record.headers()) {
      if (!header.key().startsWith(OutboxHeaders.RESERVED_PREFIX)) {
        values.put(header.key(), header.value());
        schemas.put(header.key(), header.schema());
      }
    }
    Map<String, Object> expected = new LinkedHashMap<>();
    expected.put("s", "t\u00e9xt \"q\"");
    expected.put("i", "42");
    expected.put("d", "1.50");
    expected.put("e", "1e3");
    expected.put("t", "true");
    expected.put("f", "false");
    expected.put("n", null);
    expected.put("empty", "");
    assertEquals(expected, values);
    assertEquals(List.copyOf(expected.keySet()), List.copyOf(values.keySet()));
    assertEquals(Schema.OPTIONAL_STRING_SCHEMA, schemas.get("n"));
    assertEquals(Schema.STRING_SCHEMA, schemas.get("i"));
  }

  @Test
  void rowHeaderNumberLongerThanTheParserConvertsStaysAsWritten() {
    String digits = "9".repeat(5_000);
    ClaimedMessage row = row().headersJson("{\"n\":" + digits + "}").build();

    SourceRecord record = mapped(mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES), row);

    assertEquals(digits, record.headers().lastWithName("n").value());
  }

  @Test
  void emptyHeaderObjectAddsNothing() {
    RecordMapper mapper = mapper(RoutingConvention.DEBEZIUM, PayloadFormat.BYTES);

    SourceRecord record = mapped(mapper, row().headersJson("{}").build());

    assertEquals(List.of("id=msg-1", "eventType=OrderPlaced"), headers(record));
  }

  @Test
  void bytesValuePassesThroughTheRealByteArrayConverterUnchanged() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES);
    byte[] payload = new byte[512];
    new Random(20260301L).nextBytes(payload);
    // Make sure the bytes are not UTF-8 whatever the random draw: a lone continuation byte, an
    // overlong encoding and 0xFF never are.
    payload[0] = (byte) 0x80;
    payload[1] = (byte) 0xC0;
    payload[2] = (byte) 0xAF;
    payload[3] = (byte) 0xFF;
    byte[] original = payload.clone();

    SourceRecord record = mapped(mapper, row().payload(payload).build());

    assertEquals(Schema.OPTIONAL_BYTES_SCHEMA, record.valueSchema());
    assertArrayEquals(original, (byte[]) record.value());
    ByteArrayConverter converter = new ByteArrayConverter();
    converter.configure(Map.of(), false);
    byte[] written =
        converter.fromConnectData(record.topic(), record.valueSchema(), record.value());
    assertArrayEquals(original, written);
  }

  /**
   * A null payload is a tombstone in every format and convention: no value and no schema, which
   * JsonConverter too writes as no value (with a schema it wrote the text null, or an envelope: a
   * value compaction keeps).
   */
  @Test
  void nullPayloadIsATombstoneInEveryFormat() {
    for (RoutingConvention convention : RoutingConvention.values()) {
      for (PayloadFormat format : PayloadFormat.values()) {
        String name = convention + " " + format;
        SourceRecord record =
            mapped(mapper(convention, format), row().payload((byte[]) null).build());

        assertNull(record.value(), name);
        assertNull(record.valueSchema(), name);
        assertEquals("order-17", record.key(), name);
        for (boolean schemas : new boolean[] {false, true}) {
          org.apache.kafka.connect.json.JsonConverter values =
              new org.apache.kafka.connect.json.JsonConverter();
          values.configure(Map.of("schemas.enable", Boolean.toString(schemas)), false);
          assertNull(
              values.fromConnectData(record.topic(), record.valueSchema(), record.value()), name);
        }
      }
    }
  }

  @Test
  void emptyBytesPayloadIsAnEmptyValueNotATombstone() {
    SourceRecord record =
        mapped(
            mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES), row().payload("").build());

    assertArrayEquals(new byte[0], (byte[]) record.value());
  }

  @Test
  void mappingIsPerRowSoPoisonNeverAffectsNeighbours() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.JSON);
    List<ClaimedMessage> rows =
        List.of(
            row().messageId("a").build(),
            row().messageId("b").payload("{broken").build(),
            row().messageId("c").build(),
            row().messageId("d").deliverBefore(NOW).build(),
            row().messageId("e").headersJson("[1]").build(),
            row().messageId("f").topic("bad topic").build(),
            row().messageId("g").build());

    List<String> outcomes = new ArrayList<>();
    for (ClaimedMessage row : rows) {
      MappingResult result = mapper.map(row);
      if (result instanceof Mapped mapped) {
        assertEquals(row.messageId(), SourceOffsets.messageId(mapped.record()));
        assertEquals(Map.of("id", 17L, "total", 19.99), mapped.record().value());
        outcomes.add(row.messageId() + ":mapped");
      } else {
        outcomes.add(row.messageId() + ":" + ((MappingResult.Unpublishable) result).reasonCode());
      }
    }

    assertEquals(
        List.of(
            "a:mapped",
            "b:PAYLOAD_INVALID_JSON",
            "c:mapped",
            "d:DEADLINE_EXPIRED",
            "e:HEADERS_MALFORMED",
            "f:TOPIC_UNROUTABLE",
            "g:mapped"),
        outcomes);
  }

  @Test
  void mappingTheSameRowTwiceGivesEqualRecords() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.JSON);
    ClaimedMessage row = row().headersJson("{\"trace\":\"abc\"}").build();

    SourceRecord first = mapped(mapper, row);
    SourceRecord second = mapped(mapper, row);

    assertEquals(first, second);
    assertEquals(5, second.headers().size());
  }

  /**
   * Kafka would refuse these timestamps (Connect fails the task on one before 1970; brokers refuse
   * one far in the future): the record goes without one, and the producer stamps it.
   */
  @Test
  void aCreationTimeKafkaWouldRefuseLeavesTheRecordWithoutATimestamp() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES);
    for (String createdAt : List.of("1969-12-31T23:59:59Z", "3000-01-01T00:00:00Z")) {
      SourceRecord record =
          mapped(mapper, row().createdAt(java.time.Instant.parse(createdAt)).build());
      assertNull(record.timestamp(), createdAt);
    }
    assertEquals(0L, mapped(mapper, row().createdAt(java.time.Instant.EPOCH).build()).timestamp());
  }

  /** An adopted table's aggregate id may be NULL: a record without a key, not a failed task. */
  @Test
  void aRowWithoutAnAggregateIdIsARecordWithoutAKey() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES);

    SourceRecord record = mapped(mapper, row().aggregateId(null).build());

    assertNull(record.key());
    // No schema either: with an optional one JsonConverter wrote the text null (one key for all
    // such rows).
    assertNull(record.keySchema());
    for (boolean schemas : new boolean[] {false, true}) {
      org.apache.kafka.connect.json.JsonConverter keys =
          new org.apache.kafka.connect.json.JsonConverter();
      keys.configure(Map.of("schemas.enable", Boolean.toString(schemas)), true);
      assertNull(keys.fromConnectData(record.topic(), record.keySchema(), record.key()));
    }
  }

  /** A row must not write into Kafka's internal topics; the broker would fail the task too. */
  @Test
  void anInternalTopicIsUnroutable() {
    RecordMapper mapper = mapper(RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES);
    for (String topic :
        List.of("__consumer_offsets", "__transaction_state", "__share_group_state")) {
      assertEquals(
          UnpublishableReasons.TOPIC_UNROUTABLE,
          assertInstanceOf(
                  MappingResult.Unpublishable.class, mapper.map(row().topic(topic).build()))
              .reasonCode(),
          topic);
    }
    assertEquals("__ours", mapped(mapper, row().topic("__ours").build()).topic());
  }

  /**
   * Deeper than 900 levels is parked: Jackson writes at most 1,000 and a converter's envelope adds
   * one, so a payload near Jackson's reading limit would fail the task when the converter writes.
   */
  @Test
  void jsonNestedDeeperThanTheLimitIsInvalid() {
    String deep = "[".repeat(901) + "]".repeat(901);
    String deepest = "[".repeat(900) + "]".repeat(900);
    RecordMapper large =
        new RecordMapper(
            new MappingSettings(
                RoutingConvention.OUTBOX_RELAY.defaultTopicTemplate(),
                RoutingConvention.OUTBOX_RELAY,
                PayloadFormat.JSON,
                4096,
                null));

    assertEquals(
        UnpublishableReasons.PAYLOAD_INVALID_JSON,
        assertInstanceOf(MappingResult.Unpublishable.class, large.map(row().payload(deep).build()))
            .reasonCode());
    SourceRecord record = mapped(large, row().payload(deepest).build());
    org.apache.kafka.connect.json.JsonConverter values =
        new org.apache.kafka.connect.json.JsonConverter();
    values.configure(Map.of("schemas.enable", "true"), false);
    values.fromConnectData(record.topic(), record.valueSchema(), record.value()); // writes
  }
}
