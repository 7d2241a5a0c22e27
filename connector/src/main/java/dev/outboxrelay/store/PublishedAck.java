package dev.outboxrelay.store;

import java.util.Objects;

/** A Kafka acknowledgement of one claimed row, to be recorded under the lease that sent it. */
public record PublishedAck(String messageId, Lease lease, KafkaCoordinates coordinates) {
  public PublishedAck {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(lease, "lease");
    Objects.requireNonNull(coordinates, "coordinates");
  }
}
