package dev.outboxrelay.store.postgres;

/** The server is older than the oldest PostgreSQL the relay supports; nothing was changed. */
public final class ServerTooOldException extends RuntimeException {
  /** A fixed reason code for logs, the task's status and the CLI. */
  public static final String REASON_CODE = "SERVER_TOO_OLD";

  ServerTooOldException(String message) {
    super(message);
  }
}
