package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.OutboxStoreException.Kind;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;

class SqlStatesTest {

  private static OutboxStoreException classify(String state) {
    return SqlStates.classify(new SQLException("driver text", state), "claim");
  }

  @Test
  void aMissingPasswordFailsTheTaskInsteadOfBeingRetriedForEver() {
    // pgjdbc: "The server requested password-based authentication, but no password was provided."
    OutboxStoreException e = classify("08004");
    assertEquals(Kind.AUTHENTICATION, e.kind());
    assertFalse(e.isRetriable());
    assertEquals("DB_AUTHENTICATION_FAILED", e.reasonCode());
  }

  @Test
  void connectionLossesAndCancelledStatementsAreRetried() {
    for (String state :
        new String[] {"08006", "08001", "57014", "57P01", "53300", "40001", "25P03", "25P04"}) {
      assertTrue(classify(state).isRetriable(), state);
    }
  }

  @Test
  void aLockTimeoutIsRetriedUnderAReasonOfItsOwn() {
    OutboxStoreException e = classify("55P03");
    assertTrue(e.isRetriable());
    assertEquals("DB_LOCK_NOT_AVAILABLE", e.reasonCode());
    assertEquals("DB_UNAVAILABLE", classify("08006").reasonCode());
  }

  /** The database answered, cancelling after the statement timeout: no outage, said as such. */
  @Test
  void aCancelledStatementIsRetriedUnderAReasonOfItsOwn() {
    OutboxStoreException e = classify("57014");
    assertTrue(e.isRetriable());
    assertEquals("DB_QUERY_CANCELED", e.reasonCode());
  }

  /**
   * PgBouncer answers a login it refuses itself (a wrong password in its auth file) with 08P01:
   * retried, under a reason that says a pooler refused, not that the database is away.
   */
  @Test
  void aPoolersRefusalIsRetriedUnderAReasonOfItsOwn() {
    OutboxStoreException e = classify("08P01");
    assertTrue(e.isRetriable());
    assertEquals("DB_POOLER_REFUSED", e.reasonCode());
  }

  /** HikariCP's "Interrupted during connection acquisition": retried, not a task failure. */
  @Test
  void aWaitForAConnectionEndedByAnInterruptIsRetried() {
    SQLException interrupted = new SQLException("pool text", new InterruptedException());
    assertTrue(SqlStates.classify(interrupted, "claim").isRetriable());
    assertFalse(SqlStates.classify(new SQLException("pool text"), "claim").isRetriable());
  }

  @Test
  void theDriversTextNeverReachesTheException() {
    assertFalse(classify("08006").getMessage().contains("driver text"));
  }
}
