package dev.outboxrelay.writer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceConfigurationError;
import java.util.UUID;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A message an application appends to the outbox. Build with {@link #builder()}; immutable.
 *
 * <p>The relay publishes it as one Kafka record: key the aggregate id, value the payload, and the
 * headers as string headers under their own names, next to the relay's own ({@code outbox.*}).
 */
public final class OutboxMessage {
  /** The W3C Trace Context header that {@link Builder#traceparent} sets. */
  public static final String TRACEPARENT = "traceparent";

  /** The prefix of the headers the relay sets itself ({@code outbox.message_id}, ...). */
  public static final String RESERVED_HEADER_PREFIX = "outbox.";

  /** Version 00 of W3C Trace Context: {@code 00-<trace id>-<parent id>-<flags>}, lower-case hex. */
  private static final Pattern TRACEPARENT_FORMAT =
      Pattern.compile("00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}");

  /**
   * The headers, a map of strings, are written by a plain mapper: no module found on the classpath
   * can change the one column that must be a JSON object of strings, or break writing it.
   */
  private static final ObjectMapper HEADERS_JSON =
      JsonMapper.builder().enable(StreamWriteFeature.STRICT_DUPLICATE_DETECTION).build();

  /**
   * How deep {@code json} (UTF-8, as Jackson wrote it) nests: arrays and objects, outside strings.
   * Counted on the bytes, not by Jackson's write constraints, which need jackson-core 2.16 and
   * applications pin older ones; no byte of a multi-byte UTF-8 character is an ASCII one.
   */
  static int nestingDepth(byte[] json) {
    int depth = 0;
    int deepest = 0;
    boolean inString = false;
    for (int i = 0; i < json.length; i++) {
      byte b = json[i];
      if (inString) {
        if (b == '\\') {
          i++; // the escaped character, whatever it is
        } else if (b == '"') {
          inString = false;
        }
      } else if (b == '"') {
        inString = true;
      } else if (b == '{' || b == '[') {
        deepest = Math.max(deepest, ++depth);
      } else if (b == '}' || b == ']') {
        depth--;
      }
    }
    return deepest;
  }

  /**
   * How deep a {@link Builder#jsonPayload} may nest: the relay reads at most 900 levels (with
   * {@code payload.format=json}) and parks a deeper payload's row PAYLOAD_INVALID_JSON after the
   * business change committed; Jackson alone writes up to 1,000.
   */
  static final int MAX_PAYLOAD_NESTING = 900;

  private static final byte[] JSON_NULL = "null".getBytes(StandardCharsets.US_ASCII);

  /**
   * The mapper of {@link Builder#jsonPayload}: the Jackson modules this library's loader finds;
   * dates and durations as ISO-8601 strings, not as numbers: Jackson's default writes an {@code
   * Instant} as a decimal of seconds with nine fractional digits (1700000000.123456789), which a
   * double cannot carry unchanged, so a connector with {@code payload.format=json} would not
   * publish the row (PAYLOAD_NUMBER_UNREPRESENTABLE).
   */
  static ObjectMapper payloadMapper() {
    // The modules this library's class loader sees, not the first caller's context class loader
    // (Jackson's default): a first call from a pool thread that cannot see the application's jars
    // (ForkJoinPool's in a Spring Boot fat jar) would leave java.time unsupported for good.
    return JsonMapper.builder()
        .addModules(ObjectMapper.findModules(OutboxMessage.class.getClassLoader()))
        .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
        .disable(SerializationFeature.WRITE_DURATIONS_AS_TIMESTAMPS)
        // A member written twice (a type id property beside a field of that name, an any-getter
        // key): the relay reads payloads strictly and would park the row PAYLOAD_INVALID_JSON.
        .enable(StreamWriteFeature.STRICT_DUPLICATE_DETECTION)
        .build();
  }

  /**
   * A mapper built once, or why it could not be: a module on the classpath that fails to load (a
   * version that does not match, a broken service file) fails {@link Builder#jsonPayload} alone,
   * saying so, instead of this class's initialization and with it every use of the writer.
   */
  record LoadedMapper(ObjectMapper mapper, String failure) {
    static LoadedMapper of(Supplier<ObjectMapper> build) {
      try {
        return new LoadedMapper(build.get(), null);
      } catch (RuntimeException | ServiceConfigurationError | LinkageError e) {
        return new LoadedMapper(null, e.getClass().getName());
      }
    }

    ObjectMapper get() {
      if (mapper == null) {
        throw new IllegalStateException(
            "jsonPayload: a Jackson module found on the classpath failed to load ("
                + failure
                + "); payload(byte[]) needs no mapper");
      }
      return mapper;
    }
  }

  /** Loaded at the first JSON payload (a holder class), not with {@link OutboxMessage}. */
  private static final class PayloadJson {
    static final LoadedMapper LOADED = LoadedMapper.of(OutboxMessage::payloadMapper);
  }

  private final String messageId;
  private final String aggregateType;
  private final String aggregateId;
  private final String eventType;
  private final String topic;
  private final byte[] payload;
  private final Map<String, String> headers;
  private final String correlationId;
  private final Instant deliverBefore;

  /** The deadlines the table stores: years 1 to 9999, well inside PostgreSQL's timestamptz. */
  static final Instant EARLIEST_DEADLINE = Instant.parse("0001-01-01T00:00:00Z");

  static final Instant LATEST_DEADLINE = Instant.parse("9999-12-31T23:59:59.999999Z");

  /** The longest message id the table takes (its {@code message_id_check}), in characters. */
  public static final int MAX_MESSAGE_ID_LENGTH = 255;

  /**
   * The longest aggregate id, in UTF-8 bytes. The table's btree index on {@code (instance_key,
   * aggregate_id, seq)} refuses an entry over about 2,700 bytes (SQLState 54000); with an instance
   * key of at most {@value InstanceKeys#MAX_LENGTH} characters, an aggregate id of this length
   * always fits.
   */
  public static final int MAX_AGGREGATE_ID_BYTES = 1024;

  /**
   * The largest payload any connector relays: the most its {@code payload.max.bytes} may be set to
   * (100 MiB). A larger one would be parked by every connector (PAYLOAD_TOO_LARGE) after the
   * business change committed, so it is refused here.
   */
  public static final int MAX_PAYLOAD_BYTES = 104_857_600;

  /**
   * Every value is checked here rather than by the database: a row the database refuses fails with
   * an error whose detail quotes the whole row, payload included ("Failing row contains ..."), and
   * applications log such errors.
   */
  /** Refuses a payload of {@code length} bytes over {@link #MAX_PAYLOAD_BYTES}. */
  static void requirePayloadSize(int length) {
    if (length > MAX_PAYLOAD_BYTES) {
      throw new IllegalArgumentException(
          "payload must be at most "
              + MAX_PAYLOAD_BYTES
              + " bytes, the most any connector's payload.max.bytes allows: it was "
              + length);
    }
  }

  private OutboxMessage(Builder b) {
    this.messageId = b.messageId != null ? b.messageId : UUID.randomUUID().toString();
    if (messageId.isBlank()) {
      throw new IllegalArgumentException("message id must not be blank");
    }
    if (messageId.codePointCount(0, messageId.length()) > MAX_MESSAGE_ID_LENGTH) {
      throw new IllegalArgumentException(
          "message id must be at most " + MAX_MESSAGE_ID_LENGTH + " characters");
    }
    this.aggregateType = requireText(b.aggregateType, "aggregateType");
    this.aggregateId = requireText(b.aggregateId, "aggregateId");
    if (aggregateId.getBytes(StandardCharsets.UTF_8).length > MAX_AGGREGATE_ID_BYTES) {
      throw new IllegalArgumentException(
          "aggregateId must be at most "
              + MAX_AGGREGATE_ID_BYTES
              + " bytes in UTF-8 (the table's index on it refuses longer ones)");
    }
    this.eventType = requireText(b.eventType, "eventType");
    this.topic = b.topic;
    this.payload = b.payload;
    if (payload != null) {
      requirePayloadSize(payload.length);
    }
    this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(b.headers));
    // Blank is none: an empty header no operator could select rows by (the CLI refuses a blank
    // one), and an application passing on an absent request header must not fail its business
    // change for it.
    this.correlationId =
        b.correlationId == null || b.correlationId.isBlank() ? null : b.correlationId;
    this.deliverBefore = b.deliverBefore;
    if (deliverBefore != null
        && (deliverBefore.isBefore(EARLIEST_DEADLINE) || deliverBefore.isAfter(LATEST_DEADLINE))) {
      // Instant reaches far past PostgreSQL's timestamptz: the insert would fail with 22008 (or
      // the driver with a DateTimeException) inside the caller's transaction, naming no field.
      throw new IllegalArgumentException(
          "deliverBefore must be between "
              + EARLIEST_DEADLINE
              + " and "
              + LATEST_DEADLINE
              + "; leave it unset for no deadline");
    }
    requireStorable(messageId, "messageId");
    requireStorable(aggregateType, "aggregateType");
    requireStorable(aggregateId, "aggregateId");
    requireStorable(eventType, "eventType");
    requireStorable(topic, "topic");
    requireStorable(correlationId, "correlationId");
    headers.forEach(
        (name, value) -> {
          requireStorable(name, "a header name");
          requireStorable(value, "header " + Printable.escape(name));
        });
    if (topic != null && !TopicNames.isRoutable(topic)) {
      // The relay would record the row FAILED (TOPIC_UNROUTABLE) after the business change
      // committed; it never falls back to the template for an explicit topic.
      throw new IllegalArgumentException(
          "topic must be "
              + TopicNames.RULE
              + ", and not one of Kafka's internal topics, or null for the connector's template");
    }
  }

  /**
   * PostgreSQL's text and jsonb cannot hold U+0000, nor a UTF-16 surrogate without its pair (no
   * character at all): the driver, encoding to UTF-8, would store a '?' in its place, so two
   * different message ids could be stored as one and the second be answered DUPLICATE, lost.
   */
  private static void requireStorable(String value, String name) {
    if (value == null) {
      return;
    }
    if (value.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(
          name + " must not contain the character U+0000, which PostgreSQL text cannot hold");
    }
    if (StorableText.hasUnpairedSurrogate(value)) {
      throw new IllegalArgumentException(
          name
              + " must not contain a UTF-16 surrogate without its pair, which is no character:"
              + " UTF-8 cannot hold it, and it would be stored as '?'");
    }
  }

  private static String requireTraceparent(String traceparent) {
    Matcher m = TRACEPARENT_FORMAT.matcher(traceparent);
    if (!m.matches()) {
      throw new IllegalArgumentException(
          "traceparent must be 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>,"
              + " lower-case");
    }
    if (m.group(1).chars().allMatch(c -> c == '0') || m.group(2).chars().allMatch(c -> c == '0')) {
      throw new IllegalArgumentException(
          "traceparent must not have an all-zero trace or parent id");
    }
    return traceparent;
  }

  private static String requireText(String value, String name) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(name + " is required");
    }
    return value;
  }

  public static Builder builder() {
    return new Builder();
  }

  public String messageId() {
    return messageId;
  }

  public String aggregateType() {
    return aggregateType;
  }

  public String aggregateId() {
    return aggregateId;
  }

  public String eventType() {
    return eventType;
  }

  public String topic() {
    return topic;
  }

  /** A copy of the payload, or null (a tombstone). */
  public byte[] payload() {
    return payload == null ? null : payload.clone();
  }

  /** The payload itself, for the insert's bind: not copied again for each attempt. */
  byte[] payloadForInsert() {
    return payload;
  }

  /**
   * The headers, in the order they were set here; a value may be null. That order is not kept
   * beyond this object: the row's {@code headers} column is {@code jsonb}, which stores an object's
   * keys in an order of its own, not the order they were written in, and the relay adds the headers
   * to the Kafka record in the order it reads them from the column. Consumers must look headers up
   * by name.
   */
  public Map<String, String> headers() {
    return headers;
  }

  /** The headers as a JSON object text, as the row's {@code headers} column holds them, or null. */
  public String headersJson() {
    if (headers.isEmpty()) {
      return null;
    }
    try {
      return HEADERS_JSON.writeValueAsString(headers);
    } catch (JsonProcessingException e) {
      // Not the exception as a cause: its message may quote a header's name or value.
      throw new IllegalStateException(
          "headers could not be serialized (" + e.getClass().getSimpleName() + ")");
    }
  }

  public String correlationId() {
    return correlationId;
  }

  public Instant deliverBefore() {
    return deliverBefore;
  }

  /**
   * The message id and event type, with control and format characters escaped ({@link Printable}):
   * an id taken from a client's idempotency key, say, cannot forge a log line that prints the
   * message.
   */
  @Override
  public String toString() {
    return "OutboxMessage[messageId="
        + Printable.escape(messageId)
        + ", eventType="
        + Printable.escape(eventType)
        + "]";
  }

  /** Builder; aggregate type, aggregate id and event type are required. */
  public static final class Builder {
    private String messageId;
    private String aggregateType;
    private String aggregateId;
    private String eventType;
    private String topic;
    private byte[] payload;
    private final Map<String, String> headers = new LinkedHashMap<>();
    private String correlationId;
    private Instant deliverBefore;

    private Builder() {}

    /** Optional: a message id of the application's own; a random UUID otherwise. */
    public Builder messageId(String messageId) {
      this.messageId = messageId;
      return this;
    }

    public Builder aggregateType(String aggregateType) {
      this.aggregateType = aggregateType;
      return this;
    }

    /**
     * The Kafka record key: rows of one aggregate keep their order. At most {@value
     * OutboxMessage#MAX_AGGREGATE_ID_BYTES} bytes in UTF-8.
     */
    public Builder aggregateId(String aggregateId) {
      this.aggregateId = aggregateId;
      return this;
    }

    public Builder eventType(String eventType) {
      this.eventType = eventType;
      return this;
    }

    /**
     * Optional explicit topic; it wins over the connector's routing template. {@link #build()}
     * refuses a topic the relay would not publish to ({@link TopicNames#isRoutable}): not a legal
     * Kafka topic name, or one of Kafka's internal topics.
     */
    public Builder topic(String topic) {
      this.topic = topic;
      return this;
    }

    /**
     * The payload exactly as given: JSON, Avro, Protobuf or anything else, stored unchanged. The
     * connector's {@code payload.format} decides what goes to Kafka: {@code bytes} these bytes;
     * {@code string} UTF-8 text (other bytes park the row, PAYLOAD_INVALID_TEXT); {@code json} one
     * strict JSON value (else PAYLOAD_INVALID_JSON), which the converter writes again.
     */
    public Builder payload(byte[] payload) {
      this.payload = payload == null ? null : payload.clone();
      return this;
    }

    /**
     * Serializes the object as JSON with the library's own Jackson mapper: the Jackson modules this
     * library's class loader finds (such as jackson-datatype-jsr310 for {@code java.time}), and
     * dates and durations as ISO-8601 strings ({@code "2023-11-14T22:13:20.123456789Z"}, {@code
     * "PT1H"}), not Jackson's default numbers. For a mapper of your own, pass its bytes to {@link
     * #payload}.
     *
     * <p>With the connector's {@code payload.format=json}, every number in the payload must be an
     * integer of at most 64 bits or a decimal that a double carries unchanged (as it does 0.1, and
     * not 1700000000.123456789); otherwise the relay records the row FAILED ({@code
     * PAYLOAD_NUMBER_UNREPRESENTABLE}). A {@code BigDecimal} of more than 15 significant digits
     * (which a double may not carry unchanged) or a {@code BigInteger} beyond 64 bits breaks that
     * (send it as a string, for example with {@code @JsonFormat(shape = JsonFormat.Shape.STRING)}),
     * as do dates written as numbers by a mapper of your own with {@code WRITE_DATES_AS_TIMESTAMPS}
     * on.
     *
     * <p>Null is no payload, a tombstone, as {@code payload(null)} is: not the four bytes {@code
     * null}, which the relay would send as that text with {@code payload.format=bytes}. So is a
     * value that serializes to JSON null (a {@code NullNode}, an empty {@code Optional}).
     *
     * @throws IllegalArgumentException the value does not serialize (naming Jackson's exception
     *     class only), or nests deeper than 900 levels, which the relay does not read; or it is
     *     text or bytes (a {@code String} or other {@code CharSequence}, {@code byte[]}, {@code
     *     char[]}, {@code ByteBuffer}), which would be written as one JSON string: pass those to
     *     {@link #payload}
     */
    public Builder jsonPayload(Object value) {
      if (value == null) {
        this.payload = null;
        return this;
      }
      if (value instanceof CharSequence
          || value instanceof byte[]
          || value instanceof char[]
          || value instanceof java.nio.ByteBuffer) {
        // Serialized, JSON text already would be one quoted JSON string (bytes one base64 string):
        // consumers would get a string, and an inferred schema parks every such row.
        throw new IllegalArgumentException(
            "jsonPayload was given a "
                + value.getClass().getSimpleName()
                + ", which it would write as one JSON string, not as the JSON it may hold: pass"
                + " JSON text or bytes to payload(byte[]) (text.getBytes(StandardCharsets.UTF_8))");
      }
      try {
        byte[] json = PayloadJson.LOADED.get().writeValueAsBytes(value);
        if (nestingDepth(json) > MAX_PAYLOAD_NESTING) {
          throw tooDeep();
        }
        // A value that serializes to JSON null (a NullNode, an empty Optional with Jackson's Jdk8
        // module) is no payload either, as null is.
        this.payload = Arrays.equals(json, JSON_NULL) ? null : json;
      } catch (JsonProcessingException e) {
        if (stoppedAtItsNestingLimit(e)) {
          throw tooDeep(); // Jackson 2.16 and later stop at 1,000 levels
        }
        // The class only, and not the exception as a cause: Jackson's message (and a getter's
        // exception it wraps) may quote the value or a key, and a logged cause prints it.
        throw new IllegalArgumentException(
            "payload could not be serialized as JSON (" + e.getClass().getSimpleName() + ")");
      }
      return this;
    }

    private static IllegalArgumentException tooDeep() {
      return new IllegalArgumentException(
          "payload nests deeper than "
              + MAX_PAYLOAD_NESTING
              + " levels, more than the relay reads (PAYLOAD_INVALID_JSON)");
    }

    /**
     * Whether Jackson stopped at its own nesting limit (it may wrap its generator's exception). By
     * the class's name: it exists only from jackson-core 2.15, and the library runs on older.
     */
    private static boolean stoppedAtItsNestingLimit(Throwable e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t.getClass()
            .getName()
            .equals("com.fasterxml.jackson.core.exc.StreamConstraintsException")) {
          return true;
        }
      }
      return false;
    }

    /**
     * A record header: the relay sets it on the Kafka record as a string header of this name (a
     * null value gives a header with a null value). Setting a name again replaces its value. Names
     * starting with {@code outbox.} are the relay's own and refused here; {@code id} and {@code
     * eventType} are the relay's too under the connector's Debezium convention (a setting this
     * library cannot see): a row that uses one is not published but recorded FAILED ({@code
     * HEADER_NAME_RESERVED}).
     *
     * @throws IllegalArgumentException if {@code name} starts with {@code outbox.}
     */
    public Builder header(String name, String value) {
      Objects.requireNonNull(name, "header name");
      if (name.startsWith(RESERVED_HEADER_PREFIX)) {
        throw new IllegalArgumentException(
            "header names starting with "
                + RESERVED_HEADER_PREFIX
                + " are the relay's own; a row with one would be recorded FAILED"
                + " (HEADER_NAME_RESERVED) instead of published");
      }
      this.headers.put(name, value);
      return this;
    }

    /**
     * The W3C Trace Context {@code traceparent} of the business transaction, as the {@value
     * OutboxMessage#TRACEPARENT} header: the relay copies it onto the Kafka record, so a consumer
     * continues the trace. Checked here: version {@code 00}, {@code 00-<32 hex trace id>-<16 hex
     * parent id>-<2 hex flags>} in lower-case hex, neither id all zeros. Null, for a business
     * transaction outside any trace, leaves the message without the header. Give it your own
     * tracer's current span context, not a request's header as it came: a client's malformed value
     * would throw here and fail the business transaction.
     *
     * @throws IllegalArgumentException if {@code traceparent} is not null and not such a value
     */
    public Builder traceparent(String traceparent) {
      if (traceparent == null) {
        this.headers.remove(TRACEPARENT);
        return this;
      }
      return header(TRACEPARENT, requireTraceparent(traceparent));
    }

    /**
     * The id operators select the message's row by ({@code outbox-relay-cli --correlation-id}),
     * sent as the header {@code outbox.correlation_id} under the connector's default routing
     * convention (the {@code debezium} convention sends only Debezium's headers; its {@code
     * column.additional.placement} can send the column); null, empty or blank for none.
     */
    public Builder correlationId(String correlationId) {
      this.correlationId = correlationId;
      return this;
    }

    /**
     * Optional deadline: past it (by the database's clock, when the relay claims the row), the row
     * is recorded FAILED ({@code DEADLINE_EXPIRED}) instead of being published late. There is no
     * "deliver not before": the row has no such column yet. Between the years 1 and 9999 ({@link
     * #build()} refuses others); null for none.
     */
    public Builder deliverBefore(Instant deliverBefore) {
      this.deliverBefore = deliverBefore;
      return this;
    }

    public OutboxMessage build() {
      return new OutboxMessage(this);
    }
  }
}
