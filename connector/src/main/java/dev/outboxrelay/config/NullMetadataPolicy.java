package dev.outboxrelay.config;

/**
 * What a {@code commitRecord} without metadata means for the row. Connect passes null both when a
 * transform or predicate dropped the record and when its send failed under {@code
 * errors.tolerance=all}; the task cannot tell which, so it never records PUBLISHED.
 */
public enum NullMetadataPolicy {
  /** AMBIGUOUS, retried with backoff and charged an attempt (the safe default). */
  RETRY,
  /** FAILED with reason {@code DROPPED_OR_UNDELIVERED}: for pipelines that filter on purpose. */
  FAIL
}
