package dev.outboxrelay.store;

import java.util.Objects;

/**
 * Exactly once: where Kafka committed the dead-letter record of a row parked before its batch left,
 * to be recorded in the row as that park left it ({@link OutboxStore#recordDeadLetterCopies}).
 *
 * @param seq the row's {@code seq}: the store finds the row by it and checks that it holds {@code
 *     messageId}
 * @param token the lease token the row was claimed and parked under
 * @param epoch the claim's exactly-once epoch
 * @param batch the claim's batch
 * @param position the committed dead-letter record's topic, partition and offset
 */
public record DeadLetterCopy(
    String messageId, long seq, long token, long epoch, long batch, KafkaCoordinates position) {
  public DeadLetterCopy {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(position, "position");
  }
}
