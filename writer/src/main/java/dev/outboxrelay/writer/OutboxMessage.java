package dev.outboxrelay.writer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
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

  private static final ObjectMapper JSON = JsonMapper.builder().findAndAddModules().build();

  private final String messageId;
  private final String aggregateType;
  private final String aggregateId;
  private final String eventType;
  private final String topic;
  private final byte[] payload;
  private final Map<String, String> headers;
  private final String correlationId;
  private final Instant deliverBefore;

  /** The longest message id the table takes (its {@code message_id_check}), in characters. */
  public static final int MAX_MESSAGE_ID_LENGTH = 255;

  /**
   * Every value is checked here rather than by the database: a row the database refuses fails with
   * an error whose detail quotes the whole row, payload included ("Failing row contains ..."), and
   * applications log such errors.
   */
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
    this.eventType = requireText(b.eventType, "eventType");
    this.topic = b.topic;
    this.payload = b.payload;
    this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(b.headers));
    this.correlationId = b.correlationId;
    this.deliverBefore = b.deliverBefore;
    requireNoNul(messageId, "messageId");
    requireNoNul(aggregateType, "aggregateType");
    requireNoNul(aggregateId, "aggregateId");
    requireNoNul(eventType, "eventType");
    requireNoNul(topic, "topic");
    requireNoNul(correlationId, "correlationId");
    headers.forEach(
        (name, value) -> {
          requireNoNul(name, "a header name");
          requireNoNul(value, "header " + (name.indexOf('\0') < 0 ? name : "?"));
        });
  }

  /** PostgreSQL's text and jsonb cannot hold U+0000. */
  private static void requireNoNul(String value, String name) {
    if (value != null && value.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(
          name + " must not contain the character U+0000, which PostgreSQL text cannot hold");
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

  /** The headers, in the order they were set; a value may be null. */
  public Map<String, String> headers() {
    return headers;
  }

  /** The headers as a JSON object text, as the row's {@code headers} column holds them, or null. */
  public String headersJson() {
    if (headers.isEmpty()) {
      return null;
    }
    try {
      return JSON.writeValueAsString(headers);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("headers could not be serialized", e);
    }
  }

  public String correlationId() {
    return correlationId;
  }

  public Instant deliverBefore() {
    return deliverBefore;
  }

  @Override
  public String toString() {
    return "OutboxMessage[messageId=" + messageId + ", eventType=" + eventType + "]";
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

    /** The Kafka record key: rows of one aggregate keep their order. */
    public Builder aggregateId(String aggregateId) {
      this.aggregateId = aggregateId;
      return this;
    }

    public Builder eventType(String eventType) {
      this.eventType = eventType;
      return this;
    }

    /** Optional explicit topic; it wins over the connector's routing template. */
    public Builder topic(String topic) {
      this.topic = topic;
      return this;
    }

    /** The payload exactly as given: JSON, Avro, Protobuf or anything else. */
    public Builder payload(byte[] payload) {
      this.payload = payload == null ? null : payload.clone();
      return this;
    }

    /**
     * Serializes the object as JSON with Jackson (a mapper with the Jackson modules found on the
     * classpath, such as jackson-datatype-jsr310 for {@code java.time}). For a mapper of your own,
     * pass its bytes to {@link #payload}.
     */
    public Builder jsonPayload(Object value) {
      try {
        this.payload = JSON.writeValueAsBytes(value);
      } catch (JsonProcessingException e) {
        throw new IllegalArgumentException(
            "payload could not be serialized as JSON: " + e.getOriginalMessage(), e);
      }
      return this;
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
     * transaction outside any trace, leaves the message without the header.
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

    public Builder correlationId(String correlationId) {
      this.correlationId = correlationId;
      return this;
    }

    /**
     * Optional deadline: past it (by the database's clock, when the relay claims the row), the row
     * is recorded FAILED ({@code DEADLINE_EXPIRED}) instead of being published late. There is no
     * "deliver not before": the row has no such column yet.
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
