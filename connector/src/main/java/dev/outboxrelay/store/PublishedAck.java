package dev.outboxrelay.store;

import java.util.Objects;

/**
 * A Kafka acknowledgement of one claimed row, to be recorded under the lease that sent it.
 *
 * @param seq the row's {@code seq}, as its claim returned it: the store finds the row by it (its
 *     primary key) and checks that it holds {@code messageId}
 */
public record PublishedAck(String messageId, long seq, Lease lease, KafkaCoordinates coordinates) {
  public PublishedAck {
    Objects.requireNonNull(messageId, "messageId");
    if (seq < 1) {
      throw new IllegalArgumentException("a row's seq is at least 1");
    }
    Objects.requireNonNull(lease, "lease");
    Objects.requireNonNull(coordinates, "coordinates");
  }
}
