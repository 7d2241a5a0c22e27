package dev.outboxrelay.cli;

import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.ReplicaIdentity;
import dev.outboxrelay.store.postgres.SqlStates;
import java.util.Set;

/**
 * A failure the CLI reports as one sanitized line and an exit code. Its message is written by the
 * CLI itself, never copied from a driver, Flyway or the pool: those can carry a connection string,
 * a password or row data.
 */
public final class CliException extends RuntimeException {
  /**
   * SQLStates of a transaction the server rolled back for another's sake: a deadlock (40P01), a
   * serialization failure (40001). Retriable, so classified with an unreachable server; the hint
   * must not send the operator to check the network.
   */
  private static final Set<String> TRANSACTION_CONFLICTS = Set.of("40P01", "40001");

  private final int exitCode;

  private CliException(int exitCode, String message) {
    super(message, null, false, false);
    this.exitCode = exitCode;
  }

  public int exitCode() {
    return exitCode;
  }

  public static CliException usage(String message) {
    return new CliException(ExitCode.USAGE, message);
  }

  public static CliException nothingMatched(String message) {
    return new CliException(ExitCode.NOTHING_MATCHED, message);
  }

  /** A database failure without an SQLState, e.g. a schema the CLI must not touch. */
  public static CliException database(String reasonCode, String explanation) {
    return new CliException(ExitCode.DATABASE, reasonCode + ": " + explanation);
  }

  /**
   * A classified store failure, in the words of the command that met it: {@code what} names the
   * command and the step, e.g. {@code "status failed"} or {@code "status could not connect"}. The
   * message carries only that, the reason code, the SQLState and a hint.
   */
  public static CliException database(String what, OutboxStoreException e) {
    String hint = hint(e);
    return new CliException(
        ExitCode.DATABASE,
        what
            + ": "
            + e.reasonCode()
            + (e.sqlState() == null ? "" : " (SQLState " + e.sqlState() + ")")
            + ": "
            + hint);
  }

  /**
   * A failed change by message id (requeue, discard or park: one transaction), as {@link
   * #database(String, OutboxStoreException)}; when its reply never came ({@link
   * OutboxStoreException#mayHaveCommitted()}: a connection lost, perhaps after the commit went
   * through) it says so, since "failed" alone would read as nothing done.
   */
  public static CliException changeFailed(String what, OutboxStoreException e) {
    CliException failure = database(what, e);
    if (!e.mayHaveCommitted()) {
      return failure;
    }
    return new CliException(
        failure.exitCode,
        failure.getMessage()
            + "; the change may have been applied before the connection was lost: run it again"
            + " (it reports what is done) or inspect the ids");
  }

  /** This failure with what the CLI found out after it, said after its own words. */
  public CliException withDetail(String detail) {
    return new CliException(exitCode, getMessage() + "; " + detail);
  }

  /** What the operator can do about {@code e}: by its SQLState or reason where they tell more. */
  private static String hint(OutboxStoreException e) {
    String state = e.sqlState();
    if (SqlStates.QUERY_CANCELED.equals(state)) {
      return "the statement was cancelled, by --statement-timeout or the server's"
          + " statement_timeout; a requeue, discard or purge keeps the batches it finished"
          + " (run it again)";
    }
    if (SqlStates.LOCK_NOT_AVAILABLE.equals(state)) {
      return "another transaction held a lock on the table, one of its rows or an entry of its"
          + " published log for longer than the lock timeout (--lock-timeout of migrate, requeue, discard, park and purge); what"
          + " waited for it was rolled back: run the command again when that transaction has ended";
    }
    if (state != null && TRANSACTION_CONFLICTS.contains(state)) {
      return "the command's transaction conflicted with another one (a deadlock or a"
          + " serialization failure) and was rolled back; a requeue, discard or purge keeps the"
          + " batches it finished: run the command again";
    }
    if (ReplicaIdentity.MISSING.equals(e.reasonCode())) {
      return "a publication that publishes updates or deletes includes the outbox table, which"
          + " has no replica identity: give it a primary key or REPLICA IDENTITY FULL, or take it"
          + " out of the publication";
    }
    if (ReplicaIdentity.LOG_MISSING.equals(e.reasonCode())) {
      return "a publication that publishes deletes includes the published log, whose replica"
          + " identity was taken away: ALTER TABLE <log> REPLICA IDENTITY FULL, or take the log"
          + " out of the publication";
    }
    return hint(e.kind());
  }

  private static String hint(OutboxStoreException.Kind kind) {
    return switch (kind) {
      case TRANSIENT ->
          "the database is unreachable or unavailable; check --jdbc-url, the network and that"
              + " the server accepts connections";
      case AUTHENTICATION -> "the database refused the credentials; check --user and the password";
      case PERMISSION -> "the role lacks a privilege on the outbox table or its published log";
      case SCHEMA ->
          "the database, schema, outbox table, one of its columns or its published log (schema"
              + " version 9) is missing; check --jdbc-url and --table (migrate creates or upgrades"
              + " the table, not a database or schema)";
      case INVALID_DATA -> "the database rejected a value";
      case INTERNAL -> "the database reported an unexpected error";
    };
  }
}
