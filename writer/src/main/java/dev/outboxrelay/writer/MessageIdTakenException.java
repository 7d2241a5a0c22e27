package dev.outboxrelay.writer;

import java.sql.SQLIntegrityConstraintViolationException;

/**
 * The message id is already used by a row of another instance key, or by a legacy row without one:
 * nothing was written. Message ids are unique across the whole table, whichever instance key owns a
 * row; treating this as a retried duplicate would drop the message. SQLState {@code 23505}
 * (unique_violation), so that transaction handling that knows unique violations applies.
 */
public final class MessageIdTakenException extends SQLIntegrityConstraintViolationException {
  private static final long serialVersionUID = 1L;

  private final String messageId;

  MessageIdTakenException(String messageId) {
    super(
        "outbox message id "
            + messageId
            + " is already used by a row of another instance key (or a legacy row without one);"
            + " nothing was written: message ids are unique across the whole table",
        "23505");
    this.messageId = messageId;
  }

  public String messageId() {
    return messageId;
  }
}
