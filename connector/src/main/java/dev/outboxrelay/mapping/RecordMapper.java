package dev.outboxrelay.mapping;

import dev.outboxrelay.mapping.MappingResult.Mapped;
import dev.outboxrelay.mapping.MappingResult.Unpublishable;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.ReasonCodes;
import java.nio.charset.CharacterCodingException;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * Turns claimed rows into source records, one row at a time: a row that cannot be published never
 * affects another. Stateless and thread-safe.
 *
 * <h2>The record</h2>
 *
 * <ul>
 *   <li>Topic: see {@link TopicRouter}. Kafka partition: none, the producer partitions by key.
 *   <li>Key: the aggregate id, {@link Schema#STRING_SCHEMA}, so an aggregate's records share a
 *       partition and keep their order; none, without a schema, for a row without one (an adopted
 *       table's column may allow NULL), so that every converter writes no key.
 *   <li>Value, {@link PayloadFormat#BYTES}: the payload bytes as they are, {@link
 *       Schema#OPTIONAL_BYTES_SCHEMA}; a null payload, in every format, is a tombstone: a null
 *       value without a schema, which every converter writes as no value.
 *   <li>Value, {@link PayloadFormat#STRING}: the payload decoded as UTF-8, {@link
 *       Schema#OPTIONAL_STRING_SCHEMA}, as Debezium's outbox event router sends a text-like payload
 *       column; bytes that are not UTF-8 make the row unpublishable ({@link
 *       UnpublishableReasons#PAYLOAD_INVALID_TEXT}).
 *   <li>Value, {@link PayloadFormat#JSON}: the payload parsed and emitted <em>schemaless</em> (null
 *       schema): objects as {@code Map<String, Object>} in member order, arrays as {@code List},
 *       strings, booleans and nulls as themselves, integers as {@code Long} and other numbers as
 *       {@code Double}. {@code JsonConverter} with {@code schemas.enable=false} then writes the
 *       same JSON the application stored: same members in the same order, same strings, same
 *       numbers (a number may be spelled differently, {@code 1e2} as {@code 100.0}, but never
 *       changes value). By default no Connect schema is inferred: JSON has none to offer, and one
 *       guessed per row changes from row to row (see below for the opt-in). Numbers that neither
 *       type carries exactly (integers beyond 64 bits, decimals with more precision than a double)
 *       make the row unpublishable rather than silently rounded; {@code BigDecimal} is no way out,
 *       as {@code JsonConverter} cannot write one without a schema and would fail the task. A null
 *       payload and the JSON literal {@code null} both give a null value (a tombstone).
 *   <li>Value, {@link PayloadFormat#JSON} with {@link MappingSettings#inferredSchema()}: the
 *       payload object as a {@code Struct} with a schema inferred from it as Debezium's outbox
 *       event router infers one ({@link JsonSchemaInference}), for Avro, Protobuf or JSON Schema
 *       converters; a null payload and the JSON literal {@code null} are a tombstone (null value,
 *       null schema).
 *   <li>Timestamp: the row's {@code created_at}, or none ({@link RecordTimestamp}).
 *   <li>Headers, all strings: for {@link RoutingConvention#OUTBOX_RELAY} the {@link OutboxHeaders}
 *       {@code outbox.message_id}, {@code outbox.event_type}, {@code outbox.aggregate_type}, {@code
 *       outbox.instance_key} and {@code outbox.correlation_id} (when present); for {@link
 *       RoutingConvention#DEBEZIUM} {@code id} (message id) and {@code eventType}. Then the row's
 *       own headers under their own names, in order.
 *   <li>Source partition and offset: see {@link SourceOffsets}.
 * </ul>
 *
 * <h2>Unpublishable rows</h2>
 *
 * <p>{@link #map} checks, in this order, and reports the first that applies: {@link
 * UnpublishableReasons#DEADLINE_EXPIRED}, {@link UnpublishableReasons#PAYLOAD_TOO_LARGE}, {@link
 * UnpublishableReasons#RECORD_TOO_LARGE} for headers the claim left out ({@link
 * ClaimedMessage#headersOmitted}), {@link UnpublishableReasons#TOPIC_UNROUTABLE}, {@link
 * UnpublishableReasons#TOPIC_NOT_ALLOWED}, {@link UnpublishableReasons#HEADERS_MALFORMED} / {@link
 * UnpublishableReasons#HEADER_NAME_RESERVED}, then (format JSON) {@link
 * UnpublishableReasons#PAYLOAD_INVALID_JSON} / {@link
 * UnpublishableReasons#PAYLOAD_NUMBER_UNREPRESENTABLE} / {@link
 * UnpublishableReasons#PAYLOAD_SCHEMA_UNINFERABLE}, then {@link
 * UnpublishableReasons#RECORD_TOO_LARGE} (see {@link RecordSize}). Nothing about the row's data is
 * logged or put into a message; the reason code is all there is.
 */
public final class RecordMapper {
  private final MappingSettings settings;
  private final TopicRouter router;
  private final JsonSchemaInference inference;

  public RecordMapper(MappingSettings settings) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.router = new TopicRouter(settings.topicTemplate());
    this.inference =
        settings.inferredSchema() == null
            ? null
            : new JsonSchemaInference(settings.inferredSchema(), settings.recordMaxBytes());
  }

  public MappingSettings settings() {
    return settings;
  }

  /**
   * Maps one row. Never throws for anything in the row's data. Whether {@code deliver_before} has
   * passed is the claim's judgement ({@link ClaimedMessage#deadlineExpired()}, by the store's
   * clock), never this worker's clock.
   */
  public MappingResult map(ClaimedMessage row) {
    if (row.deadlineExpired()) {
      return new Unpublishable(UnpublishableReasons.DEADLINE_EXPIRED);
    }
    if (isTooLarge(row)) {
      return new Unpublishable(UnpublishableReasons.PAYLOAD_TOO_LARGE);
    }
    if (row.headersOmitted()) {
      return new Unpublishable(UnpublishableReasons.RECORD_TOO_LARGE);
    }
    Optional<String> topic = router.route(row);
    if (topic.isEmpty()) {
      return new Unpublishable(UnpublishableReasons.TOPIC_UNROUTABLE);
    }
    if (!settings.allows(topic.get())) {
      return new Unpublishable(UnpublishableReasons.TOPIC_NOT_ALLOWED);
    }
    Map<String, String> rowHeaders;
    try {
      rowHeaders = rowHeaders(row);
    } catch (JsonValues.MalformedJson e) {
      return new Unpublishable(UnpublishableReasons.HEADERS_MALFORMED);
    }
    if (rowHeaders.keySet().stream().anyMatch(this::isReserved)) {
      return new Unpublishable(UnpublishableReasons.HEADER_NAME_RESERVED);
    }
    Schema valueSchema;
    Object value;
    long filledBytes = 0;
    if (settings.inferredSchema() != null) {
      try {
        JsonSchemaInference.Inferred inferred =
            row.payload() == null ? null : inference.infer(row.payload());
        // A tombstone stays one: with a schema, JsonConverter would write an envelope instead.
        valueSchema = inferred == null ? null : inferred.schema();
        value = inferred == null ? null : inferred.value();
        filledBytes = inferred == null ? 0 : inferred.filledBytes();
      } catch (JsonValues.MalformedJson e) {
        return new Unpublishable(UnpublishableReasons.PAYLOAD_INVALID_JSON);
      } catch (JsonValues.UnrepresentableNumber e) {
        return new Unpublishable(UnpublishableReasons.PAYLOAD_NUMBER_UNREPRESENTABLE);
      } catch (JsonSchemaInference.Uninferable e) {
        return new Unpublishable(UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE);
      } catch (JsonSchemaInference.TooLarge e) {
        return new Unpublishable(UnpublishableReasons.RECORD_TOO_LARGE);
      }
    } else if (settings.payloadFormat() == PayloadFormat.JSON) {
      valueSchema = null;
      try {
        value = row.payload() == null ? null : JsonValues.toConnectValue(row.payload());
      } catch (JsonValues.MalformedJson e) {
        return new Unpublishable(UnpublishableReasons.PAYLOAD_INVALID_JSON);
      } catch (JsonValues.UnrepresentableNumber e) {
        return new Unpublishable(UnpublishableReasons.PAYLOAD_NUMBER_UNREPRESENTABLE);
      }
    } else if (row.payload() == null) {
      // A tombstone: with a schema, JsonConverter would write the text null (or an envelope),
      // which compaction keeps and consumers read as a value.
      valueSchema = null;
      value = null;
    } else if (settings.payloadFormat() == PayloadFormat.STRING) {
      valueSchema = Schema.OPTIONAL_STRING_SCHEMA;
      try {
        value = StrictUtf8.decode(row.payload());
      } catch (CharacterCodingException e) {
        return new Unpublishable(UnpublishableReasons.PAYLOAD_INVALID_TEXT);
      }
    } else {
      valueSchema = Schema.OPTIONAL_BYTES_SCHEMA;
      value = row.payload();
    }
    ConnectHeaders headers = conventionHeaders(row);
    rowHeaders.forEach(headers::addString);
    SourceRecord record = record(row, topic.get(), valueSchema, value, headers);
    long size =
        RecordSize.upperBound(record, row.payload())
            + JsonConverterSize.keyGrowth(settings.keyConverter(), record)
            + JsonConverterSize.headersGrowth(settings.headerConverter(), record)
            + filledBytes;
    size +=
        JsonConverterSize.growth(
            settings.valueConverter(), record, row.payload(), settings.recordMaxBytes() - size);
    if (valueSchema == null && value != null) { // schemaless JSON, written back by the converter
      size += RecordSize.jsonGrowth(value, row.payload().length, settings.recordMaxBytes() - size);
    } else if (settings.inferredSchema() != null && value != null) {
      size += RecordSize.escapeGrowth(row.payload(), settings.recordMaxBytes() - size);
    }
    if (size > settings.recordMaxBytes()) {
      return new Unpublishable(UnpublishableReasons.RECORD_TOO_LARGE);
    }
    return new Mapped(record);
  }

  /**
   * A record of the row for the dead-letter topic, whatever it was unpublishable for: key the
   * aggregate id, value the raw payload bytes ({@link Schema#OPTIONAL_BYTES_SCHEMA}), the headers
   * {@link #map} would set plus {@link OutboxHeaders#FAILURE_REASON}, and the same source partition
   * and offset, so its acknowledgement maps back to the row. With format STRING the value is the
   * payload's text ({@link Schema#OPTIONAL_STRING_SCHEMA}), as the converter of such a connector
   * renders it (StringConverter would write bytes as {@code [B@…}); a payload that is not UTF-8 is
   * left out then (header {@link OutboxHeaders#PAYLOAD_OMITTED}), the row's headers kept.
   *
   * <p>Row headers that are malformed or use reserved names are left out, all of them. When the
   * payload is larger than the maximum, or the record would be larger than the producer takes, the
   * payload and the row's own headers are left out (null value, header {@link
   * OutboxHeaders#PAYLOAD_OMITTED}), since the producer would refuse the record and fail the task;
   * both stay in the outbox row.
   *
   * @throws IllegalStateException if no dead-letter topic is configured
   * @throws IllegalArgumentException if {@code reasonCode} is not a reason code
   */
  public SourceRecord deadLetter(ClaimedMessage row, String reasonCode) {
    SourceRecord copy = deadLetterRecord(row, reasonCode);
    return new SourceRecord(
        copy.sourcePartition(),
        SourceOffsets.deadLetterOffset(row, reasonCode),
        copy.topic(),
        copy.kafkaPartition(),
        copy.keySchema(),
        copy.key(),
        copy.valueSchema(),
        copy.value(),
        copy.timestamp(),
        copy.headers());
  }

  private SourceRecord deadLetterRecord(ClaimedMessage row, String reasonCode) {
    if (!settings.hasDeadLetterTopic()) {
      throw new IllegalStateException("no dead-letter topic is configured");
    }
    ReasonCodes.require(reasonCode);
    ConnectHeaders headers = conventionHeaders(row);
    if (row.headersOmitted()) {
      headers.addString(OutboxHeaders.HEADERS_OMITTED, "true"); // never read: over the limit
    }
    try {
      Map<String, String> rowHeaders = rowHeaders(row);
      if (rowHeaders.keySet().stream().noneMatch(this::isReserved)) {
        rowHeaders.forEach(headers::addString);
      }
    } catch (JsonValues.MalformedJson e) {
      // Left out; the failure reason tells why when it is the headers' fault.
    }
    headers.addString(OutboxHeaders.FAILURE_REASON, reasonCode);
    Optional<SourceRecord> withPayload = withPayload(row, headers);
    if (withPayload.isPresent()
        && !isTooLarge(row)
        && deadLetterSize(withPayload.get(), row.payload()) <= settings.recordMaxBytes()) {
      return withPayload.get();
    }
    if (withPayload.isEmpty() && !isTooLarge(row)) {
      // Not text (format string): the payload alone is left out, the row's headers kept.
      headers.addString(OutboxHeaders.PAYLOAD_OMITTED, "true");
      SourceRecord withHeaders =
          record(row, settings.deadLetterTopic(), Schema.OPTIONAL_BYTES_SCHEMA, null, headers);
      if (deadLetterSize(withHeaders, null) <= settings.recordMaxBytes()) {
        return withHeaders;
      }
    }
    // Without the payload, and without the row's own headers, which may be what was too large.
    ConnectHeaders bare = conventionHeaders(row);
    bare.addString(OutboxHeaders.FAILURE_REASON, reasonCode);
    bare.addString(OutboxHeaders.PAYLOAD_OMITTED, "true");
    if (row.headersOmitted()) {
      bare.addString(OutboxHeaders.HEADERS_OMITTED, "true");
    }
    SourceRecord withoutPayload =
        record(row, settings.deadLetterTopic(), Schema.OPTIONAL_BYTES_SCHEMA, null, bare);
    if (deadLetterSize(withoutPayload, null) <= settings.recordMaxBytes()) {
      return withoutPayload;
    }
    // Still too large: an event type, aggregate type or correlation id of the row's own making
    // (the table bounds none of them). The producer would refuse the record and fail the task on
    // every claim of the row; the message id, bounded by the table, still leads back to it.
    ConnectHeaders minimal = new ConnectHeaders();
    minimal.addString(
        settings.convention() == RoutingConvention.DEBEZIUM
            ? OutboxHeaders.DEBEZIUM_ID
            : OutboxHeaders.MESSAGE_ID,
        row.messageId());
    minimal.addString(OutboxHeaders.FAILURE_REASON, reasonCode);
    minimal.addString(OutboxHeaders.PAYLOAD_OMITTED, "true");
    minimal.addString(OutboxHeaders.HEADERS_OMITTED, "true");
    SourceRecord bareOfHeaders =
        record(row, settings.deadLetterTopic(), Schema.OPTIONAL_BYTES_SCHEMA, null, minimal);
    if (deadLetterSize(bareOfHeaders, null) <= settings.recordMaxBytes()) {
      return bareOfHeaders;
    }
    // The key itself, an aggregate id of the row's own making (the table bounds none): no key.
    return bareOfHeaders.newRecord(
        bareOfHeaders.topic(),
        null,
        null,
        null,
        bareOfHeaders.valueSchema(),
        null,
        bareOfHeaders.timestamp(),
        minimal);
  }

  /**
   * The reason code {@code record} is a dead-letter copy for, or null for a row's own record. A
   * copy is told by its topic (the dead-letter topic, where no row's own record may go; a record's
   * topic is fixed once made) and its reason read from its source offset ({@link
   * SourceOffsets#deadLetterOffset}), not from its header, which a transform may remove in place.
   * Told by the record, not by what the task holds of its row: a row the same owner claimed again
   * under the same token (the first claim lost in a database crash) may map otherwise the second
   * time.
   *
   * @throws IllegalStateException for a record on the dead-letter topic without a reason (not of
   *     this mapper's making)
   */
  public String deadLetterReasonOf(SourceRecord record) {
    if (!settings.hasDeadLetterTopic() || !settings.deadLetterTopic().equals(record.topic())) {
      return null;
    }
    return ReasonCodes.require(
        SourceOffsets.deadLetterReason(record)
            .orElseThrow(
                () -> new IllegalStateException("a dead-letter record without its reason code")));
  }

  /**
   * A dead-letter record's size bound, {@code payload} the bytes behind its value (null for none).
   * With the connector's value converter known to be JsonConverter, as it writes the value ({@link
   * JsonConverterSize}: base64, a string's escapes, a null, its envelope). Else, with format JSON,
   * the payload's bytes as base64 in quotes, a third more: JsonConverter (the only one of Kafka's
   * that writes a schemaless value) always, and with an inferred schema JsonConverter with schemas
   * or a JSON Schema converter. Avro and Protobuf write bytes as they are, but a converter set only
   * on the worker is not seen: judged as base64, a dead letter near the limit goes without its
   * payload ({@link OutboxHeaders#PAYLOAD_OMITTED}; the row keeps it), where judged as raw bytes it
   * failed the task at every claim.
   */
  private long deadLetterSize(SourceRecord record, byte[] payload) {
    long size =
        RecordSize.upperBound(record, payload)
            + JsonConverterSize.keyGrowth(settings.keyConverter(), record)
            + JsonConverterSize.headersGrowth(settings.headerConverter(), record);
    if (settings.valueConverter() != ConverterKind.OTHER) {
      return size
          + JsonConverterSize.growth(
              settings.valueConverter(), record, payload, settings.recordMaxBytes() - size);
    }
    if (payload != null && settings.payloadFormat() == PayloadFormat.JSON) {
      size += RecordSize.base64Growth(payload.length);
    }
    return size;
  }

  /** The dead-letter record with the payload as its value; empty if format STRING cannot be. */
  private Optional<SourceRecord> withPayload(ClaimedMessage row, ConnectHeaders headers) {
    String topic = settings.deadLetterTopic();
    if (settings.payloadFormat() != PayloadFormat.STRING || row.payload() == null) {
      return Optional.of(record(row, topic, Schema.OPTIONAL_BYTES_SCHEMA, row.payload(), headers));
    }
    try {
      return Optional.of(
          record(
              row,
              topic,
              Schema.OPTIONAL_STRING_SCHEMA,
              StrictUtf8.decode(row.payload()),
              headers));
    } catch (CharacterCodingException e) {
      return Optional.empty();
    }
  }

  /**
   * By the stored size. A payload the claim left out was over its read limit, payload.max.bytes:
   * mapped as a null payload it would go out as a tombstone.
   */
  private boolean isTooLarge(ClaimedMessage row) {
    return row.payloadOmitted() || row.payloadBytes() > settings.payloadMaxBytes();
  }

  private boolean isReserved(String headerName) {
    return OutboxHeaders.isReserved(headerName, settings.convention());
  }

  private static Map<String, String> rowHeaders(ClaimedMessage row)
      throws JsonValues.MalformedJson {
    return row.headersJson() == null ? Map.of() : JsonValues.toHeaderValues(row.headersJson());
  }

  private ConnectHeaders conventionHeaders(ClaimedMessage row) {
    ConnectHeaders headers = new ConnectHeaders();
    switch (settings.convention()) {
      case OUTBOX_RELAY:
        headers.addString(OutboxHeaders.MESSAGE_ID, row.messageId());
        headers.addString(OutboxHeaders.EVENT_TYPE, row.eventType());
        headers.addString(OutboxHeaders.AGGREGATE_TYPE, row.aggregateType());
        headers.addString(OutboxHeaders.INSTANCE_KEY, row.instanceKey());
        if (row.correlationId() != null) {
          headers.addString(OutboxHeaders.CORRELATION_ID, row.correlationId());
        }
        break;
      case DEBEZIUM:
        headers.addString(OutboxHeaders.DEBEZIUM_ID, row.messageId());
        headers.addString(OutboxHeaders.DEBEZIUM_EVENT_TYPE, row.eventType());
        break;
      default:
        throw new IllegalStateException("unknown convention " + settings.convention());
    }
    return headers;
  }

  private SourceRecord record(
      ClaimedMessage row, String topic, Schema valueSchema, Object value, ConnectHeaders headers) {
    return new SourceRecord(
        SourceOffsets.partition(row),
        SourceOffsets.offset(row),
        topic,
        null,
        // An adopted table's aggregate id column may allow NULL: a record without a key, and
        // without a key schema, which every converter writes as no key (with an optional string
        // schema JsonConverter wrote the text null, one key for all such rows).
        row.aggregateId() == null ? null : Schema.STRING_SCHEMA,
        row.aggregateId(),
        valueSchema,
        value,
        settings.recordTimestamp() == RecordTimestamp.CREATED_AT
            ? timestamp(row.createdAt())
            : null,
        headers);
  }

  /**
   * The row's creation time, unless Kafka would refuse it: Connect fails the task on a timestamp
   * before 1970, and brokers refuse one too far in the future ({@code
   * log.message.timestamp.after.max.ms}, which recent Kafka releases set to an hour: an imported
   * row, or a database clock far ahead of the broker's). Then none: the producer stamps the record
   * when it sends it.
   */
  static Long timestamp(Instant createdAt) {
    if (createdAt == null
        || createdAt.isBefore(Instant.EPOCH)
        || createdAt.isAfter(Instant.now().plus(MAX_FUTURE_TIMESTAMP))) {
      return null;
    }
    return createdAt.toEpochMilli();
  }

  /** How far ahead of this worker's clock a row's creation time may be and still stamp it. */
  static final Duration MAX_FUTURE_TIMESTAMP = Duration.ofMinutes(10);

  @Override
  public String toString() {
    return "RecordMapper[" + settings + "]";
  }
}
