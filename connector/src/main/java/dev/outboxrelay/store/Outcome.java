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
  CLAIM_LOST;

  public boolean isApplied() {
    return this != CLAIM_LOST;
  }
}
