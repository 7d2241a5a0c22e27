package dev.outboxrelay.mapping;

/**
 * The connector's value converter, as far as a record's written size depends on it ({@link
 * JsonConverterSize}). Read from the connector's own {@code value.converter}: one set only on the
 * worker is not visible to a connector.
 */
public enum ValueConverterKind {
  /** Any other converter, or none set on the connector: the payload is counted as its bytes. */
  OTHER,
  /** Kafka's JsonConverter with {@code schemas.enable=false}. */
  JSON,
  /** Kafka's JsonConverter with {@code schemas.enable=true}, its default: values in an envelope. */
  JSON_WITH_SCHEMAS
}
