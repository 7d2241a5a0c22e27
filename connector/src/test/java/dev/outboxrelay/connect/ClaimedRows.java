package dev.outboxrelay.connect;

import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.Lease;
import java.time.Instant;

/** Claimed rows for the task's unit tests: instance key eu, aggregate a, leased to "owner". */
final class ClaimedRows {
  private ClaimedRows() {}

  /** A row of {@code id} under lease token {@code token}, with an explicit topic or none. */
  static ClaimedMessage claimed(String id, long token, String topic, byte[] payload, int attempts) {
    return new ClaimedMessage(
        1L,
        id,
        "eu",
        "order",
        "a",
        "OrderPlaced",
        topic,
        payload,
        payload == null ? -1 : payload.length,
        null,
        false,
        null,
        Instant.EPOCH,
        null,
        false,
        attempts,
        new Lease("owner", token),
        Instant.EPOCH,
        0);
  }
}
