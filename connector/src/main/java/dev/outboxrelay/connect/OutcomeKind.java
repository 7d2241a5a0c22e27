package dev.outboxrelay.connect;

/** What an outcome write records, for its metric and its log line. */
enum OutcomeKind {
  /** Kafka acknowledged the record with an offset. */
  PUBLISHED,
  /** Delivery is unconfirmed: retried later, or EXHAUSTED past the attempt budget. */
  RETRY,
  /** The row can never be published. */
  FAILED,
  /** The row went to the dead-letter topic and is FAILED. */
  DEAD_LETTERED,
  /** A claim never handed to Connect, given back. */
  RELEASED
}
