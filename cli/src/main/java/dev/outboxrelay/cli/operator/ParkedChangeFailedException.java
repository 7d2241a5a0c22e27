package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.OutboxStoreException;

/**
 * A batched requeue or discard whose batch failed: the batches before it stay applied (each was its
 * own transaction), and this says how many rows they changed. It carries no text of its own: {@link
 * #failure()} is the classified failure of the batch.
 */
public final class ParkedChangeFailedException extends RuntimeException {
  private final long changed;
  private final OutboxStoreException failure;

  ParkedChangeFailedException(long changed, OutboxStoreException failure) {
    super(null, failure, false, false);
    this.changed = changed;
    this.failure = failure;
  }

  /** Rows changed by the batches that committed before the failure. */
  public long changed() {
    return changed;
  }

  public OutboxStoreException failure() {
    return failure;
  }
}
