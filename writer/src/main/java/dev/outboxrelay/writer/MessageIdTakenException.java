package dev.outboxrelay.writer;

import java.sql.SQLIntegrityConstraintViolationException;

/**
 * The message id is already used by a row of another instance key, or by a legacy row without one:
 * nothing was written. Message ids are unique across the whole table, whichever instance key owns a
 * row; treating this as a retried duplicate would drop the message. The writer aborts the
 * transaction before it throws this, as PostgreSQL aborts one on its own errors, so a COMMIT rolls
 * back (and pgjdbc's {@code commit()} returns normally all the same): roll it back and retry with
 * another id. SQLState {@code 23000} (integrity_constraint_violation), not {@code 23505}: code that
 * takes a unique violation for "already done" (Spring's {@code DuplicateKeyException}) and commits
 * would lose the message.
 */
public final class MessageIdTakenException extends SQLIntegrityConstraintViolationException {
  private static final long serialVersionUID = 1L;

  private final String messageId;

  MessageIdTakenException(String messageId) {
    super(
        "outbox message id "
            + Printable.escape(messageId)
            + " is already used by a row of another instance key (or a legacy row without one);"
            + " nothing was written, roll the transaction back: message ids are unique across the"
            + " whole table",
        "23000");
    this.messageId = messageId;
  }

  /** The message id as given, unescaped (the exception's message escapes it: {@link Printable}). */
  public String messageId() {
    return messageId;
  }
}
