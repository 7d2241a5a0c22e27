package dev.outboxrelay.connect;

import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;

/** An outcome waiting to be written, fenced by the lease it was produced under. */
sealed interface PendingOutcome {
  String messageId();

  Lease lease();

  /** Kafka acknowledged the record. */
  record Published(String messageId, Lease lease, KafkaCoordinates coordinates)
      implements PendingOutcome {}

  /** Connect reported no metadata: dropped by a transform, or a tolerated send failure. */
  record Unconfirmed(String messageId, Lease lease) implements PendingOutcome {}

  /** The row can never be published (or was dead-lettered): FAILED with a reason code. */
  record Failed(String messageId, Lease lease, String reasonCode, boolean deadLettered)
      implements PendingOutcome {}

  /** A claim that was never handed to Connect. */
  record Released(String messageId, Lease lease) implements PendingOutcome {}
}
