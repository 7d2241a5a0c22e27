package dev.outboxrelay.mapping;

import static dev.outboxrelay.mapping.TestRows.row;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.store.ClaimedMessage;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.internal.AbstractRecords;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A row the producer would refuse as too large is parked, never handed to Connect. */
class RecordSizeTest {
  private static final int KAFKA_DEFAULT_MAX_REQUEST_SIZE = 1_048_576;

  private static RecordMapper mapper(int payloadMaxBytes, int recordMaxBytes) {
    return new RecordMapper(
        new MappingSettings(
                RoutingConvention.OUTBOX_RELAY.defaultTopicTemplate(),
                RoutingConvention.OUTBOX_RELAY,
                PayloadFormat.BYTES,
                payloadMaxBytes,
                null)
            .withRecordMaxBytes(recordMaxBytes));
  }

  private static ClaimedMessage rowWithPayload(int size) {
    return row().payload(new byte[size]).headersJson("{\"traceparent\":\"00-abc-def-01\"}").build();
  }

  /** What the producer itself computes and checks against max.request.size. */
  private static int producerUpperBound(SourceRecord record, byte[] payload) {
    List<org.apache.kafka.common.header.Header> headers = new ArrayList<>();
    for (Header h : record.headers()) {
      headers.add(
          new RecordHeader(h.key(), String.valueOf(h.value()).getBytes(StandardCharsets.UTF_8)));
    }
    return AbstractRecords.estimateSizeInBytesUpperBound(
        RecordBatch.CURRENT_MAGIC_VALUE,
        CompressionType.NONE,
        record.key().toString().getBytes(StandardCharsets.UTF_8),
        payload,
        headers.toArray(new org.apache.kafka.common.header.Header[0]));
  }

  /**
   * JsonConverter writes a schemaless JSON value back, and may write more than the payload held: a
   * character outside the Basic Multilingual Plane as two escapes (12 bytes for 4), a number in
   * exponent form as Double.toString writes it. A payload that fits as it is but not as written is
   * parked; one whose written form fits is published, and the producer takes what was written.
   */
  @ParameterizedTest
  @ValueSource(strings = {"emoji", "exponents"})
  void aJsonPayloadIsMeasuredAsJsonConverterWritesIt(String kind) {
    StringBuilder json = new StringBuilder("[");
    for (int i = 0; i < 20_000; i++) {
      json.append(i == 0 ? "" : ",").append(kind.equals("emoji") ? "\"\uD83D\uDE00\"" : "1e9");
    }
    byte[] payload = json.append(']').toString().getBytes(StandardCharsets.UTF_8);
    JsonConverter converter = new JsonConverter();
    converter.configure(Map.of("schemas.enable", "false"), false);
    int tight = payload.length + 4_096; // room for the payload as it is, and the headers

    RecordMapper tightMapper = jsonMapper(tight);
    ClaimedMessage row = row().payload(payload).build();
    assertEquals(
        UnpublishableReasons.RECORD_TOO_LARGE,
        assertInstanceOf(MappingResult.Unpublishable.class, tightMapper.map(row)).reasonCode());

    SourceRecord record =
        assertInstanceOf(MappingResult.Mapped.class, jsonMapper(4 * payload.length).map(row))
            .record();
    byte[] written = converter.fromConnectData("t", record.valueSchema(), record.value());
    assertTrue(written.length > tight, "the tight limit is below what is written");
    assertTrue(
        producerUpperBound(record, written)
            <= RecordSize.upperBound(record, payload)
                + RecordSize.jsonGrowth(record.value(), payload.length, 0),
        "the estimate covers what the producer is given");
  }

  /** A bytes value as JsonConverter writes it: base64 in quotes, exactly. */
  @Test
  void base64GrowthIsWhatJsonConverterAddsToBytes() {
    JsonConverter converter = new JsonConverter();
    converter.configure(Map.of("schemas.enable", "false"), false);
    for (int n : new int[] {0, 1, 2, 3, 4, 5, 6, 7, 100, 7_509}) {
      byte[] written =
          converter.fromConnectData(
              "t", org.apache.kafka.connect.data.Schema.BYTES_SCHEMA, new byte[n]);
      assertEquals(written.length, n + RecordSize.base64Growth(n), "n=" + n);
    }
  }

  private static RecordMapper jsonMapper(int recordMaxBytes) {
    return new RecordMapper(
        new MappingSettings(
                RoutingConvention.OUTBOX_RELAY.defaultTopicTemplate(),
                RoutingConvention.OUTBOX_RELAY,
                PayloadFormat.JSON,
                1 << 24,
                null)
            .withRecordMaxBytes(recordMaxBytes));
  }

  @Test
  void aPayloadAtTheDefaultMaximumStillFitsTheProducersDefaultRequestSize() {
    int max = OutboxSourceConfig.PAYLOAD_MAX_BYTES_DEFAULT;
    ClaimedMessage row = rowWithPayload(max);
    MappingResult result = mapper(max, KAFKA_DEFAULT_MAX_REQUEST_SIZE).map(row);
    if (result instanceof MappingResult.Mapped mapped) {
      assertTrue(
          producerUpperBound(mapped.record(), row.payload()) <= KAFKA_DEFAULT_MAX_REQUEST_SIZE,
          "handed to Connect, the producer would refuse it and fail the task");
    }
  }

  @Test
  void aRowWhoseRecordWouldExceedTheRequestSizeIsUnpublishable() {
    ClaimedMessage row = rowWithPayload(KAFKA_DEFAULT_MAX_REQUEST_SIZE - 40);
    MappingResult result =
        mapper(KAFKA_DEFAULT_MAX_REQUEST_SIZE, KAFKA_DEFAULT_MAX_REQUEST_SIZE).map(row);
    assertEquals(
        UnpublishableReasons.RECORD_TOO_LARGE,
        assertInstanceOf(MappingResult.Unpublishable.class, result).reasonCode());
  }

  @Test
  void theEstimateIsNeverBelowTheProducersOwn() {
    RecordMapper mapper = mapper(2_000_000, 4_000_000);
    for (int size : new int[] {0, 1, 127, 128, 16_383, 16_384, 1_000_000}) {
      ClaimedMessage row = rowWithPayload(size);
      SourceRecord record = assertInstanceOf(MappingResult.Mapped.class, mapper.map(row)).record();
      long ours = RecordSize.upperBound(record, row.payload());
      assertTrue(ours >= producerUpperBound(record, row.payload()), "size " + size);
    }
  }

  /**
   * Without the headers' margin (every varint counted at its widest): a record with no headers,
   * whose key and value lengths take 3 bytes each in the producer's count.
   */
  @Test
  void theEstimateOfARecordWithoutHeadersIsNeverBelowTheProducersOwn() {
    for (int size : new int[] {0, 127, 128, 16_384, 1_000_000}) {
      byte[] payload = new byte[size];
      SourceRecord record =
          new SourceRecord(null, null, "t", null, null, "k".repeat(20_000), null, payload);
      assertTrue(
          RecordSize.upperBound(record, payload) >= producerUpperBound(record, payload),
          "size " + size);
    }
  }

  @Test
  void aRecordThatFitsIsMapped() {
    ClaimedMessage row = rowWithPayload(900_000);
    assertInstanceOf(
        MappingResult.Mapped.class,
        mapper(KAFKA_DEFAULT_MAX_REQUEST_SIZE, KAFKA_DEFAULT_MAX_REQUEST_SIZE).map(row));
  }
}
