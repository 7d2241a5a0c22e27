package dev.outboxrelay.cli.operator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.AbstractDataSource;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A change that failed before its statement was sent is not said to have perhaps been applied (the
 * operator was sent to check the rows): no connection, or a lock timeout that could not be set.
 */
class OperatorStoreFailureTest {
  private static final Duration LOCK_TIMEOUT = Duration.ofSeconds(2);

  @Test
  void noConnectionSentNothing() {
    OperatorStore store = store(new Connections(null));
    for (Runnable change :
        List.<Runnable>of(
            () -> store.park("eu", List.of("m1"), false, false, LOCK_TIMEOUT),
            () -> store.change(ParkedAction.REQUEUE, byId(), 100, LOCK_TIMEOUT),
            () -> store.change(ParkedAction.DISCARD, all(), 100, LOCK_TIMEOUT))) {
      OutboxStoreException e = assertThrows(OutboxStoreException.class, change::run);
      assertEquals("08001", e.sqlState());
      assertFalse(e.mayHaveCommitted(), e.operation());
    }
  }

  @Test
  void aLockTimeoutThatCouldNotBeSetSentNothing() {
    OperatorStore store = store(new Connections(lockTimeoutRefused()));
    for (Runnable change :
        List.<Runnable>of(
            () -> store.park("eu", List.of("m1"), false, false, LOCK_TIMEOUT),
            () -> store.change(ParkedAction.REQUEUE, byId(), 100, LOCK_TIMEOUT))) {
      OutboxStoreException e = assertThrows(OutboxStoreException.class, change::run);
      assertEquals("08006", e.sqlState());
      assertFalse(e.mayHaveCommitted(), e.operation());
    }
    // Batched: after the read of where to stop, the first batch's lock timeout.
    ParkedChangeFailedException batch =
        assertThrows(
            ParkedChangeFailedException.class,
            () -> store.change(ParkedAction.DISCARD, all(), 100, LOCK_TIMEOUT));
    assertEquals(0, batch.changed());
    assertFalse(batch.failure().mayHaveCommitted());
  }

  private static ParkedSelection byId() {
    return new ParkedSelection(
        "eu", ParkedSelection.Selector.MESSAGE_IDS, List.of("m1"), null, null);
  }

  private static ParkedSelection all() {
    return new ParkedSelection("eu", ParkedSelection.Selector.ALL, null, null, null);
  }

  private static OperatorStore store(AbstractDataSource dataSource) {
    return new OperatorStore(dataSource, OutboxTable.parse("outbox"), ColumnMapping.RELAY, false);
  }

  /**
   * A connection that prepares any statement but the one setting lock_timeout, which fails as a
   * connection lost would; a query it runs reads one row of zeros and nulls (the batched change's
   * read of where to stop), and it runs no update.
   */
  private static Connection lockTimeoutRefused() {
    ResultSet oneRow =
        (ResultSet)
            Proxy.newProxyInstance(
                OperatorStoreFailureTest.class.getClassLoader(),
                new Class<?>[] {ResultSet.class},
                (proxy, method, args) ->
                    switch (method.getName()) {
                      case "next" -> true;
                      case "getLong" -> 0L;
                      case "getObject", "close" -> null;
                      default -> throw new AssertionError("not expected: " + method.getName());
                    });
    PreparedStatement idle =
        (PreparedStatement)
            Proxy.newProxyInstance(
                OperatorStoreFailureTest.class.getClassLoader(),
                new Class<?>[] {PreparedStatement.class},
                (proxy, method, args) -> {
                  String name = method.getName();
                  if (name.equals("close") || name.startsWith("set")) {
                    return null;
                  }
                  if (name.equals("executeQuery")) {
                    return oneRow;
                  }
                  throw new AssertionError("not to be run: " + name);
                });
    return (Connection)
        Proxy.newProxyInstance(
            OperatorStoreFailureTest.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "prepareStatement":
                  if (((String) args[0]).contains("lock_timeout")) {
                    throw new SQLException("connection lost", "08006");
                  }
                  return idle;
                case "getAutoCommit":
                  return true;
                case "setAutoCommit":
                case "rollback":
                case "close":
                  return null;
                default:
                  throw new AssertionError("not expected: " + method.getName());
              }
            });
  }

  /** Hands out {@code connection}, or fails to connect when it is null. */
  private static final class Connections extends AbstractDataSource {
    private final Connection connection;

    Connections(Connection connection) {
      this.connection = connection;
    }

    @Override
    public Connection getConnection() throws SQLException {
      if (connection == null) {
        throw new SQLTransientConnectionException("no connection", "08001");
      }
      return connection;
    }
  }
}
