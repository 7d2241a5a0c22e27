package dev.outboxrelay.mapping;

/** What a record's timestamp is; Kafka's time-based retention judges the record by it. */
public enum RecordTimestamp {
  /**
   * The row's {@code created_at} (event time), unless Kafka would refuse it: then none, as for
   * {@link #SEND_TIME}.
   */
  CREATED_AT,
  /**
   * None: the producer stamps the record when it sends it, about when Debezium's outbox event
   * router stamps its records (when it processes the change).
   */
  SEND_TIME
}
