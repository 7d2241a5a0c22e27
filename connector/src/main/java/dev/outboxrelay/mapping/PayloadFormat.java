package dev.outboxrelay.mapping;

/** How a row's payload becomes the record value. */
public enum PayloadFormat {
  /** The payload bytes as-is, with an optional BYTES schema: any serialization passes through. */
  BYTES,
  /**
   * The payload parsed as JSON and emitted as a structured value, for JsonConverter and friends.
   */
  JSON,
  /**
   * The payload as UTF-8 text, a Connect string with an optional string schema: what Debezium's
   * outbox event router sends for a jsonb, json, text or varchar payload column (without {@code
   * table.expand.json.payload}).
   */
  STRING
}
