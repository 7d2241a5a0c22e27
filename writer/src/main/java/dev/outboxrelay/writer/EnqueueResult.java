package dev.outboxrelay.writer;

/** What appending a message did. */
public enum EnqueueResult {
  /** A new row was written in the caller's transaction. */
  ENQUEUED,
  /**
   * This instance key already has the message id, in the outbox or in its published log; nothing
   * was written.
   */
  DUPLICATE
}
