package dev.outboxrelay.store;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/** A message an application appends to the outbox. Build with {@link #builder()}. */
public final class OutboxMessage {
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

  private OutboxMessage(Builder b) {
    this.messageId = b.messageId != null ? b.messageId : UUID.randomUUID().toString();
    if (messageId.isBlank()) {
      throw new IllegalArgumentException("message id must not be blank");
    }
    this.aggregateType = requireText(b.aggregateType, "aggregateType");
    this.aggregateId = requireText(b.aggregateId, "aggregateId");
    this.eventType = requireText(b.eventType, "eventType");
    this.topic = b.topic;
    this.payload = b.payload;
    this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(b.headers));
    this.correlationId = b.correlationId;
    this.deliverBefore = b.deliverBefore;
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

  public byte[] payload() {
    return payload;
  }

  public Map<String, String> headers() {
    return headers;
  }

  /** The headers as a JSON object text, or null when there are none. */
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

    /** Serializes the object as JSON with Jackson. */
    public Builder jsonPayload(Object value) {
      try {
        this.payload = JSON.writeValueAsBytes(value);
      } catch (JsonProcessingException e) {
        throw new IllegalArgumentException(
            "payload could not be serialized as JSON: " + e.getOriginalMessage(), e);
      }
      return this;
    }

    public Builder header(String name, String value) {
      this.headers.put(Objects.requireNonNull(name, "header name"), value);
      return this;
    }

    public Builder correlationId(String correlationId) {
      this.correlationId = correlationId;
      return this;
    }

    /** Optional deadline: past it, the row is recorded FAILED instead of being published late. */
    public Builder deliverBefore(Instant deliverBefore) {
      this.deliverBefore = deliverBefore;
      return this;
    }

    public OutboxMessage build() {
      return new OutboxMessage(this);
    }
  }
}
