package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.outboxrelay.store.OutboxStoreException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A failed change by message id whose reply never came may have committed: its report says so
 * rather than reading as "nothing done", and only then.
 */
class CliExceptionTest {
  private static final String MAY_HAVE_BEEN_APPLIED =
      "; the change may have been applied before the connection was lost: run it again (it reports"
          + " what is done) or inspect the ids";

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      nullValues = "none",
      value = {
        "08006, TRANSIENT, DB_UNAVAILABLE, true", // the connection lost
        "57P01, TRANSIENT, DB_UNAVAILABLE, true", // the server ended the session
        "none,  INTERNAL,  DB_ERROR,       true", // an I/O or pool failure, no SQLState
        "55P03, TRANSIENT, DB_LOCK_NOT_AVAILABLE, false", // the server replied: rolled back
        "57014, TRANSIENT, DB_QUERY_CANCELED, false",
        "42501, PERMISSION, DB_PERMISSION_DENIED, false"
      })
  void aChangeThatMayHaveCommittedSaysSo(
      String sqlState, OutboxStoreException.Kind kind, String reason, boolean mayHaveCommitted) {
    OutboxStoreException failure = new OutboxStoreException(kind, reason, sqlState, "discard");

    CliException e = CliException.changeFailed("discard failed", failure);

    assertEquals(ExitCode.DATABASE, e.exitCode());
    String plain = CliException.database("discard failed", failure).getMessage();
    assertEquals(mayHaveCommitted ? plain + MAY_HAVE_BEEN_APPLIED : plain, e.getMessage());
  }

  /**
   * A deadlock or a serialization failure is retriable, classified with an unreachable server: the
   * hint says the transaction lost a conflict and to run the command again, not to check the
   * network. A failure without a SQLState still reads as the connection's.
   */
  @ParameterizedTest(name = "{0}")
  @CsvSource(
      nullValues = "none",
      value = {
        "40P01, true", // deadlock detected
        "40001, true", // serialization failure
        "08006, false",
        "none,  false"
      })
  void aTransactionThatLostAConflictIsNotReportedAsAnUnreachableServer(
      String sqlState, boolean conflict) {
    java.sql.SQLException driver =
        sqlState == null
            ? new java.sql.SQLTransientConnectionException("x")
            : new java.sql.SQLException("x", sqlState);

    String message =
        CliException.database(
                "requeue failed",
                dev.outboxrelay.store.postgres.SqlStates.classify(driver, "requeue"))
            .getMessage();

    assertEquals(conflict, message.contains("conflicted with another one"), message);
    assertEquals(!conflict, message.contains("unreachable"), message);
  }
}
