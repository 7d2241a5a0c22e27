package dev.outboxrelay.store;

import java.util.Objects;

/**
 * Exactly-once: the position of the last record of one bucket that Kafka committed, as its source
 * offset says. A row of the bucket leased under {@code epoch} at a position {@code (claim_batch,
 * seq)} up to {@code (batch, seq)} was committed with it or before it.
 */
public record CommittedPosition(String instanceKey, int bucket, long epoch, long batch, long seq) {
  public CommittedPosition {
    Objects.requireNonNull(instanceKey, "instanceKey");
  }

  /** Whether a row of this bucket, leased under {@code rowEpoch} at that position, is covered. */
  public boolean covers(long rowEpoch, long rowBatch, long rowSeq) {
    return rowEpoch == epoch && (rowBatch < batch || (rowBatch == batch && rowSeq <= seq));
  }
}
