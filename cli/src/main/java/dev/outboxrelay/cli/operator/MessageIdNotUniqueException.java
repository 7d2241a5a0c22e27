package dev.outboxrelay.cli.operator;

/**
 * A change by message id refused, and rolled back (a dry run: not counted), because the message id
 * column gives a requested id to more than one row of the key: it is no id column (an aggregate
 * id's, say), and the change would have changed each of those rows. Carries no text of its own: the
 * command words it, naming its option.
 */
public final class MessageIdNotUniqueException extends RuntimeException {
  private final String messageId;
  private final long rows;

  MessageIdNotUniqueException(String messageId, long rows) {
    super(null, null, false, false);
    this.messageId = messageId;
    this.rows = rows;
  }

  /** The first requested id, in the order given, that several rows hold. */
  public String messageId() {
    return messageId;
  }

  /** How many rows of the key hold it. */
  public long rows() {
    return rows;
  }
}
