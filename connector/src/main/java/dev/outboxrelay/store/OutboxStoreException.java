package dev.outboxrelay.store;

import dev.outboxrelay.writer.Printable;

/**
 * A store failure, classified and sanitized. It never carries the driver's message or cause: those
 * can contain credentials, connection strings or row data, and whatever reaches Connect is shown in
 * its REST status. The SQLState and a reason code are enough to act on.
 */
public final class OutboxStoreException extends RuntimeException {

  /** What the caller should do about it. */
  public enum Kind {
    /** The database is unreachable, restarting or overloaded: retry later. */
    TRANSIENT(true),
    /** Credentials were refused: fail and tell the operator. */
    AUTHENTICATION(false),
    /** The role lacks a privilege on the outbox table or its published log. */
    PERMISSION(false),
    /** The table, a column or a function is missing: the schema is absent or outdated. */
    SCHEMA(false),
    /** A row or value broke a constraint or a type. */
    INVALID_DATA(false),
    /** Anything else. */
    INTERNAL(false);

    private final boolean retriable;

    Kind(boolean retriable) {
      this.retriable = retriable;
    }

    public boolean isRetriable() {
      return retriable;
    }
  }

  private final Kind kind;
  private final String reasonCode;
  private final String sqlState;
  private final String operation;
  private final String libraryCode;
  private final boolean sentNothing;
  private final String messageId;

  public OutboxStoreException(Kind kind, String reasonCode, String sqlState, String operation) {
    this(kind, reasonCode, sqlState, operation, null);
  }

  /**
   * @param libraryCode a library's own code for the failure, such as {@code Flyway VALIDATE_ERROR}:
   *     an enum's name, never the library's message, which may quote the connection; null for none
   */
  public OutboxStoreException(
      Kind kind, String reasonCode, String sqlState, String operation, String libraryCode) {
    this(kind, reasonCode, sqlState, operation, libraryCode, false, null);
  }

  private OutboxStoreException(
      Kind kind,
      String reasonCode,
      String sqlState,
      String operation,
      String libraryCode,
      boolean sentNothing,
      String messageId) {
    super(
        "outbox store "
            + operation
            + (messageId == null ? "" : " of message_id=" + Printable.escape(messageId))
            + " failed: "
            + reasonCode
            + (sqlState == null ? "" : " (SQLState " + sqlState + ")")
            + (libraryCode == null ? "" : " (" + libraryCode + ")"));
    this.kind = kind;
    this.reasonCode = reasonCode;
    this.sqlState = sqlState;
    this.operation = operation;
    this.libraryCode = libraryCode;
    this.sentNothing = sentNothing;
    this.messageId = messageId;
  }

  /**
   * This failure, of an attempt that sent nothing to the database (no connection could be had: the
   * pool's wait timed out, or the connection could not be opened), so nothing of it can have
   * committed, whatever its SQLState.
   */
  public OutboxStoreException beforeSending() {
    return new OutboxStoreException(
        kind, reasonCode, sqlState, operation, libraryCode, true, messageId);
  }

  /**
   * This failure, of a write of one row, naming it: a row the database refuses for good (a
   * constraint or a trigger of the table's owner) must be found from the task's status alone.
   */
  public OutboxStoreException ofMessage(String messageId) {
    return new OutboxStoreException(
        kind, reasonCode, sqlState, operation, libraryCode, sentNothing, messageId);
  }

  /** The row whose write failed, when the failure was of one row's write; else null. */
  public String messageId() {
    return messageId;
  }

  public Kind kind() {
    return kind;
  }

  /** A sanitized, upper-case reason code fit for logs, metrics and the row itself. */
  public String reasonCode() {
    return reasonCode;
  }

  /**
   * A lock another session holds was waited for past the statement's limit (SQLState 55P03): the
   * statement changed nothing, and may succeed once the lock is gone.
   */
  public boolean isLockWait() {
    return "55P03".equals(sqlState);
  }

  /** The SQLState reported by the driver, or null. */
  public String sqlState() {
    return sqlState;
  }

  public boolean isRetriable() {
    return kind.isRetriable();
  }

  /**
   * Whether the failed write may have committed all the same: its reply never came (a connection
   * lost, SQLState class 08; the server shutting the session down, 57P; no SQLState, an I/O
   * failure), possibly after the COMMIT; not one that never got a connection ({@link
   * #beforeSending}). An error the server replied with (a statement timeout, a lock timeout, a
   * serialization failure, a constraint) rolled its transaction back.
   */
  public boolean mayHaveCommitted() {
    return !sentNothing
        && (sqlState == null || sqlState.startsWith("08") || sqlState.startsWith("57P"));
  }

  /** What failed, as the store names it: {@code claim}, {@code migrate}, ... */
  public String operation() {
    return operation;
  }
}
