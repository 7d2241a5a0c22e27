package dev.outboxrelay.store;

import java.util.Objects;

/** Where Kafka stored a published record: the audit trail from a row to its record. */
public record KafkaCoordinates(String topic, int partition, long offset) {
  public KafkaCoordinates {
    Objects.requireNonNull(topic, "topic");
  }
}
