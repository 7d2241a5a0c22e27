package dev.outboxrelay.store;

import java.util.Objects;

/**
 * A Kafka acknowledgement of one claimed row, to be recorded under the lease that sent it.
 *
 * @param seq the row's {@code seq}, as its claim returned it: the store finds the row by it and
 *     checks that it holds {@code messageId}. Any value is accepted: a seq that names no such row
 *     makes the ack a lost claim, never an error that would fail the whole batch of outcomes
 */
public record PublishedAck(String messageId, long seq, Lease lease, KafkaCoordinates coordinates) {
  public PublishedAck {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(lease, "lease");
    Objects.requireNonNull(coordinates, "coordinates");
  }
}
