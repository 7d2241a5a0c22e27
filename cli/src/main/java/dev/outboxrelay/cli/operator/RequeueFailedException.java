package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.OutboxStoreException;

/**
 * A batched requeue whose batch failed: the batches before it stay requeued (each was its own
 * transaction), and this says how many rows they requeued. It carries no text of its own: {@link
 * #failure()} is the classified failure of the batch.
 */
public final class RequeueFailedException extends RuntimeException {
  private final long requeued;
  private final OutboxStoreException failure;

  RequeueFailedException(long requeued, OutboxStoreException failure) {
    super(null, failure, false, false);
    this.requeued = requeued;
    this.failure = failure;
  }

  /** Rows requeued by the batches that committed before the failure. */
  public long requeued() {
    return requeued;
  }

  public OutboxStoreException failure() {
    return failure;
  }
}
