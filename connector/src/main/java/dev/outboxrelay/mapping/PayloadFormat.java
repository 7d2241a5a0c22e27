package dev.outboxrelay.mapping;

/** How a row's payload becomes the record value. */
public enum PayloadFormat {
  /** The payload bytes as-is, with an optional BYTES schema: any serialization passes through. */
  BYTES,
  /**
   * The payload parsed as JSON and emitted as a structured value, for JsonConverter and friends.
   */
  JSON
}
