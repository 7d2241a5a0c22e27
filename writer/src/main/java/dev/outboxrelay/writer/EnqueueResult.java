package dev.outboxrelay.writer;

/** What appending a message did. */
public enum EnqueueResult {
  /** A new row was written in the caller's transaction. */
  ENQUEUED,
  /** A row with this message id already exists; nothing was written. */
  DUPLICATE
}
