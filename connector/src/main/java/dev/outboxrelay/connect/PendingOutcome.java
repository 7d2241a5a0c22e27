package dev.outboxrelay.connect;

import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;

/** An outcome waiting to be written, fenced by the lease it was produced under. */
sealed interface PendingOutcome {
  String messageId();

  Lease lease();

  /** Kafka acknowledged the record of the row {@code seq} at an offset. */
  record Published(String messageId, long seq, Lease lease, KafkaCoordinates coordinates)
      implements PendingOutcome {}

  /**
   * Delivery cannot be confirmed: Connect reported no metadata (dropped by a transform, or a
   * tolerated send failure; reason {@code DELIVERY_UNCONFIRMED}), or the acknowledgement carried no
   * offset (a producer with {@code acks=0}; reason {@code ACK_WITHOUT_OFFSET}).
   */
  record Unconfirmed(String messageId, Lease lease, String reasonCode) implements PendingOutcome {
    static final String NO_METADATA = "DELIVERY_UNCONFIRMED";
    static final String NO_OFFSET = "ACK_WITHOUT_OFFSET";

    /** Only a missing acknowledgement may mean "dropped on purpose" (see null.metadata.policy). */
    boolean mayBeDropped() {
      return NO_METADATA.equals(reasonCode);
    }
  }

  /**
   * The row can never be published: FAILED with a reason code; with the position of its dead-letter
   * record when Kafka confirmed one ({@code deadLetter}, else null).
   */
  record Failed(String messageId, Lease lease, String reasonCode, KafkaCoordinates deadLetter)
      implements PendingOutcome {
    boolean deadLettered() {
      return deadLetter != null;
    }
  }

  /** A claim that was never handed to Connect. */
  record Released(String messageId, Lease lease) implements PendingOutcome {}
}
