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
import java.util.Random;
import java.util.stream.Stream;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.internal.AbstractRecords;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
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
  static int producerUpperBound(SourceRecord record, byte[] payload) {
    List<org.apache.kafka.common.header.Header> headers = new ArrayList<>();
    for (Header h : record.headers()) {
      headers.add(
          new RecordHeader(h.key(), String.valueOf(h.value()).getBytes(StandardCharsets.UTF_8)));
    }
    return AbstractRecords.estimateSizeInBytesUpperBound(
        RecordBatch.CURRENT_MAGIC_VALUE,
        CompressionType.NONE,
        record.key() == null ? null : record.key().toString().getBytes(StandardCharsets.UTF_8),
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

  static Stream<Arguments> jsonConverters() {
    return Stream.of(PayloadFormat.BYTES, PayloadFormat.STRING)
        .flatMap(
            format ->
                Stream.of(ConverterKind.JSON, ConverterKind.JSON_WITH_SCHEMAS)
                    .map(converter -> Arguments.of(format, converter)));
  }

  /**
   * JsonConverter writes bytes as base64 (a third more) and a string's quotes and controls as
   * escapes, in quotes, inside an envelope with schemas (its default): a payload under
   * payload.max.bytes that fits the request size as it is but not as written is parked, not handed
   * to a producer that would refuse it and fail the task at every claim of the row.
   */
  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jsonConverters")
  void aPayloadJsonConverterWritesPastTheRequestSizeIsParked(
      PayloadFormat format, ConverterKind converter) {
    byte[] payload =
        format == PayloadFormat.BYTES
            ? new byte[900_000]
            : "a\"".repeat(450_000).getBytes(StandardCharsets.UTF_8);
    ClaimedMessage row = row().payload(payload).build();
    int maxPayload = OutboxSourceConfig.PAYLOAD_MAX_BYTES_DEFAULT;

    MappingResult result =
        converterMapper(format, converter, maxPayload, KAFKA_DEFAULT_MAX_REQUEST_SIZE).map(row);

    assertEquals(
        UnpublishableReasons.RECORD_TOO_LARGE,
        assertInstanceOf(MappingResult.Unpublishable.class, result).reasonCode());
    assertInstanceOf(
        MappingResult.Mapped.class,
        converterMapper(format, ConverterKind.OTHER, maxPayload, KAFKA_DEFAULT_MAX_REQUEST_SIZE)
            .map(row),
        "written as it is, it fits");
  }

  /**
   * The estimate covers what a JsonConverter configured as the mapping says writes, as the producer
   * counts it: every escape (quote, backslash, short and long controls, an emoji as two), base64, a
   * null value and the envelope. A limit just under the producer's count parks the row.
   */
  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jsonConverters")
  void theEstimateCoversWhatJsonConverterWrites(PayloadFormat format, ConverterKind converter) {
    JsonConverter json = new JsonConverter();
    boolean schemas = converter == ConverterKind.JSON_WITH_SCHEMAS;
    json.configure(Map.of("schemas.enable", Boolean.toString(schemas)), false);
    String text = "a\"\\/\b\t\n\f\r\u0001\u001f\u007f\u00e9\u20ac\uD83D\uDE00\u2028";
    Random random = new Random(7);
    for (int units : new int[] {-1, 0, 1, 10_000}) {
      byte[] payload =
          units < 0
              ? null
              : format == PayloadFormat.STRING
                  ? text.repeat(units).getBytes(StandardCharsets.UTF_8)
                  : randomBytes(random, units * 31);
      ClaimedMessage row = row().payload(payload).headersJson("{\"h\":\"v\"}").build();
      SourceRecord record =
          assertInstanceOf(
                  MappingResult.Mapped.class,
                  converterMapper(format, converter, 1 << 20, 1 << 22).map(row))
              .record();
      byte[] written = json.fromConnectData("t", record.valueSchema(), record.value());
      int producers = producerUpperBound(record, written);

      long ours =
          RecordSize.upperBound(record, payload)
              + JsonConverterSize.growth(converter, record, payload, 0);

      assertTrue(ours >= producers, () -> "units " + units + ": " + ours + " < " + producers);
      assertEquals(
          UnpublishableReasons.RECORD_TOO_LARGE,
          assertInstanceOf(
                  MappingResult.Unpublishable.class,
                  converterMapper(format, converter, 1 << 20, producers - 1).map(row))
              .reasonCode(),
          () -> "units " + units);
    }
  }

  /**
   * Exact for what the mapper gives JsonConverter: its null, envelopes and escapes pinned to its
   * output, so that the estimate is no looser than it must be.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void jsonConverterSizeIsExactForTheMappersValues(boolean schemas) {
    JsonConverter json = new JsonConverter();
    json.configure(Map.of("schemas.enable", Boolean.toString(schemas)), false);
    ConverterKind converter = schemas ? ConverterKind.JSON_WITH_SCHEMAS : ConverterKind.JSON;
    String text = "\"q\\\n\u0000\u00e9\uD83D\uDE00";
    byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
    byte[] object = "{\"a\":\"b\"}".getBytes(StandardCharsets.UTF_8);
    Object[][] values = {
      {Schema.OPTIONAL_BYTES_SCHEMA, null, null},
      {Schema.OPTIONAL_BYTES_SCHEMA, utf8, utf8},
      {Schema.OPTIONAL_STRING_SCHEMA, null, null},
      {Schema.OPTIONAL_STRING_SCHEMA, text, utf8},
      {null, Map.of("a", "b"), object}
    };
    for (Object[] value : values) {
      SourceRecord record =
          new SourceRecord(null, null, "t", null, null, "k", (Schema) value[0], value[1]);
      byte[] payload = (byte[]) value[2];
      byte[] written = json.fromConnectData("t", record.valueSchema(), record.value());
      assertEquals(
          written.length,
          (payload == null ? 0 : payload.length)
              + JsonConverterSize.growth(converter, record, payload, 0),
          () -> record.valueSchema() + " " + (payload == null ? "null" : "value"));
    }
  }

  /**
   * A key as a JsonConverter key converter writes it, exactly: in quotes with its escapes, and with
   * schemas in the envelope of a required string; a row without an aggregate id has no key and no
   * key schema, which JsonConverter writes as nothing.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void jsonConverterKeyGrowthIsExact(boolean schemas) {
    JsonConverter json = new JsonConverter();
    json.configure(Map.of("schemas.enable", Boolean.toString(schemas)), true);
    ConverterKind converter = schemas ? ConverterKind.JSON_WITH_SCHEMAS : ConverterKind.JSON;
    for (String key : new String[] {"order-1", "\"q\\\n\u0000\u00e9\uD83D\uDE00", null}) {
      Schema schema = key == null ? null : Schema.STRING_SCHEMA;
      SourceRecord record = new SourceRecord(null, null, "t", null, schema, key, null, null);
      byte[] written = json.fromConnectData("t", schema, key);
      long text = key == null ? 0 : key.getBytes(StandardCharsets.UTF_8).length;
      assertEquals(
          written == null ? 0 : written.length,
          text + JsonConverterSize.keyGrowth(converter, record),
          () -> String.valueOf(key));
    }
    assertEquals(
        0,
        JsonConverterSize.keyGrowth(
            ConverterKind.OTHER,
            new SourceRecord(null, null, "t", null, Schema.STRING_SCHEMA, "k", null, null)));
  }

  /**
   * Headers as a JsonConverter header converter writes them, exactly: each string in quotes with
   * its escapes, with schemas in its envelope; a null one as null.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void jsonConverterHeadersGrowthIsExact(boolean schemas) {
    JsonConverter json = new JsonConverter();
    json.configure(Map.of("schemas.enable", Boolean.toString(schemas), "converter.type", "header"));
    ConverterKind converter = schemas ? ConverterKind.JSON_WITH_SCHEMAS : ConverterKind.JSON;
    ConnectHeaders headers = new ConnectHeaders();
    headers.addString("a", "order-1");
    headers.addString("b", "\"q\\\n\u0000\u00e9\uD83D\uDE00");
    headers.addString("c", null);
    SourceRecord record =
        new SourceRecord(null, null, "t", null, null, null, null, null, null, headers);
    long written = 0;
    long text = 0;
    for (Header h : record.headers()) {
      byte[] bytes = json.fromConnectHeader("t", h.key(), h.schema(), h.value());
      written += bytes == null ? 0 : bytes.length;
      text += h.value() == null ? 0 : h.value().toString().getBytes(StandardCharsets.UTF_8).length;
    }
    assertEquals(written, text + JsonConverterSize.headersGrowth(converter, record));
    assertEquals(0, JsonConverterSize.headersGrowth(ConverterKind.OTHER, record));
  }

  /**
   * A row of many headers that fits with them counted as text (Connect's SimpleHeaderConverter) is
   * parked when the connector's header converter is JsonConverter with schemas, some fifty bytes
   * more a header: the producer refused it and failed the task at every claim of the row.
   */
  @Test
  void aHeaderConverterThatFramesHeadersIsCountedInTheEstimate() {
    byte[] payload = new byte[100];
    StringBuilder many = new StringBuilder("{");
    for (int i = 0; i < 200; i++) {
      many.append(i == 0 ? "" : ",").append("\"h").append(i).append("\":\"v\"");
    }
    ClaimedMessage row = row().payload(payload).headersJson(many.append("}").toString()).build();
    SourceRecord record =
        assertInstanceOf(
                MappingResult.Mapped.class,
                converterMapper(PayloadFormat.BYTES, ConverterKind.OTHER, 1 << 20, 1 << 22)
                    .map(row))
            .record();
    int fits = (int) RecordSize.upperBound(record, payload);
    MappingSettings settings =
        new MappingSettings(
                RoutingConvention.OUTBOX_RELAY.defaultTopicTemplate(),
                RoutingConvention.OUTBOX_RELAY,
                PayloadFormat.BYTES,
                1 << 20,
                null)
            .withRecordMaxBytes(fits);

    assertInstanceOf(MappingResult.Mapped.class, new RecordMapper(settings).map(row));
    assertEquals(
        UnpublishableReasons.RECORD_TOO_LARGE,
        assertInstanceOf(
                MappingResult.Unpublishable.class,
                new RecordMapper(settings.withHeaderConverter(ConverterKind.JSON_WITH_SCHEMAS))
                    .map(row))
            .reasonCode());
    long framed = fits + JsonConverterSize.headersGrowth(ConverterKind.JSON_WITH_SCHEMAS, record);
    assertInstanceOf(
        MappingResult.Mapped.class,
        new RecordMapper(
                settings
                    .withRecordMaxBytes((int) framed)
                    .withHeaderConverter(ConverterKind.JSON_WITH_SCHEMAS))
            .map(row));
  }

  /**
   * A record that fits with its key counted as text (StringConverter) is parked when the
   * connector's key converter is JsonConverter, whose envelope takes it over the limit.
   */
  @Test
  void aKeyConverterThatFramesTheKeyIsCountedInTheEstimate() {
    byte[] payload = new byte[100];
    ClaimedMessage row = row().payload(payload).build();
    SourceRecord record =
        assertInstanceOf(
                MappingResult.Mapped.class,
                converterMapper(PayloadFormat.BYTES, ConverterKind.OTHER, 1 << 20, 1 << 22)
                    .map(row))
            .record();
    int fits = (int) RecordSize.upperBound(record, payload);

    assertInstanceOf(
        MappingResult.Mapped.class,
        converterMapper(PayloadFormat.BYTES, ConverterKind.OTHER, 1 << 20, fits).map(row));
    assertEquals(
        UnpublishableReasons.RECORD_TOO_LARGE,
        assertInstanceOf(
                MappingResult.Unpublishable.class,
                new RecordMapper(
                        new MappingSettings(
                                RoutingConvention.OUTBOX_RELAY.defaultTopicTemplate(),
                                RoutingConvention.OUTBOX_RELAY,
                                PayloadFormat.BYTES,
                                1 << 20,
                                null)
                            .withRecordMaxBytes(fits)
                            .withKeyConverter(ConverterKind.JSON_WITH_SCHEMAS))
                    .map(row))
            .reasonCode());
  }

  private static byte[] randomBytes(Random random, int length) {
    byte[] bytes = new byte[length];
    random.nextBytes(bytes);
    return bytes;
  }

  private static RecordMapper converterMapper(
      PayloadFormat format, ConverterKind converter, int payloadMaxBytes, int recordMaxBytes) {
    return new RecordMapper(
        new MappingSettings(
                RoutingConvention.OUTBOX_RELAY.defaultTopicTemplate(),
                RoutingConvention.OUTBOX_RELAY,
                format,
                payloadMaxBytes,
                null)
            .withRecordMaxBytes(recordMaxBytes)
            .withValueConverter(converter));
  }

  /** A bytes value as JsonConverter writes it: base64 in quotes, exactly. */
  @Test
  void base64GrowthIsWhatJsonConverterAddsToBytes() {
    JsonConverter converter = new JsonConverter();
    converter.configure(Map.of("schemas.enable", "false"), false);
    for (int n : new int[] {0, 1, 2, 3, 4, 5, 6, 7, 100, 7_509}) {
      byte[] written = converter.fromConnectData("t", Schema.BYTES_SCHEMA, new byte[n]);
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
