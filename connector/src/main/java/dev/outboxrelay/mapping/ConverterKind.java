package dev.outboxrelay.mapping;

/**
 * The connector's value or key converter, as far as a record's written size depends on it ({@link
 * JsonConverterSize}). Read from the connector's own {@code value.converter} and {@code
 * key.converter}: one set only on the worker is not visible to a connector.
 */
public enum ConverterKind {
  /** Any other converter, or none set on the connector: counted as the bytes it is given. */
  OTHER,
  /** Kafka's JsonConverter with {@code schemas.enable=false}. */
  JSON,
  /** Kafka's JsonConverter with {@code schemas.enable=true}, its default: each in an envelope. */
  JSON_WITH_SCHEMAS
}
