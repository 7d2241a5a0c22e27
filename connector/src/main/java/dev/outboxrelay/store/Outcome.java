package dev.outboxrelay.store;

/** Result of a fenced write. Never treat anything but {@link #isApplied()} as success. */
public enum Outcome {
  /** The write matched the row under the caller's lease and changed it. */
  APPLIED,
  /** A retry was applied and spent the last attempt: the row is now EXHAUSTED. */
  EXHAUSTED,
  /**
   * The row is no longer held by the caller's owner and token (reclaimed after expiry, requeued, or
   * already resolved). Nothing was changed. The caller may have produced a duplicate.
   */
  CLAIM_LOST,
  /**
   * Only from {@link OutboxStore#markPublishedSkippingLocked}: another session holds the row's
   * lock, and the write skipped it. Nothing was changed; the row, as last committed, is still held
   * under the caller's lease. Write it again later.
   */
  ROW_LOCKED;

  public boolean isApplied() {
    return this == APPLIED || this == EXHAUSTED;
  }
}
