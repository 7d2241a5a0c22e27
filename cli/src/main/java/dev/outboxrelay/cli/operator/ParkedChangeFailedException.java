package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.OutboxStoreException;

/**
 * A batched requeue or discard whose batch failed: the batches before it stay applied (each was its
 * own transaction), and this says how many rows they changed. It carries no text of its own: {@link
 * #failure()} is the classified failure of the batch.
 */
public final class ParkedChangeFailedException extends RuntimeException {
  private final long changed;
  private final long deadlinePassed;
  private final OutboxStoreException failure;

  ParkedChangeFailedException(long changed, long deadlinePassed, OutboxStoreException failure) {
    super(null, failure, false, false);
    this.changed = changed;
    this.deadlinePassed = deadlinePassed;
    this.failure = failure;
  }

  /** Rows changed by the batches that committed before the failure. */
  public long changed() {
    return changed;
  }

  /**
   * Of those, the rows whose deliver_before had passed (as {@link ParkedChange#deadlinePassed}).
   */
  public long deadlinePassed() {
    return deadlinePassed;
  }

  public OutboxStoreException failure() {
    return failure;
  }
}
