package dev.outboxrelay.store.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * One migration of an outbox table at a time, without waiting: a transaction-level advisory lock on
 * a connection of its own, held while Flyway migrates on others, released by ending that
 * transaction (or by the connection's end, if the process dies). A session that finds it taken
 * fails at once with {@link MigrationInProgressException} instead of queueing behind Flyway's own
 * lock, which it retries 50 times a second apart and then fails without an SQLState.
 *
 * <p>Transaction-level, not session-level: behind a pooler in transaction mode a session lock
 * outlives the transaction that took it, on a server connection the next client gets, and could not
 * be released. The lock's key names the history table, its schema resolved by the server, so {@code
 * outbox} and {@code public.outbox} are the same migration.
 */
final class MigrationLock implements AutoCloseable {
  private static final String TRY_LOCK =
      "SELECT pg_try_advisory_xact_lock(hashtextextended("
          + "'outbox-relay migrate ' || coalesce(?, current_schema()) || '.' || ?, 0))";

  private final Connection connection;

  private MigrationLock(Connection connection) {
    this.connection = connection;
  }

  /**
   * Takes the lock of {@code table}'s migrations.
   *
   * @throws MigrationInProgressException another session holds it
   */
  static MigrationLock take(DataSource dataSource, OutboxTable table) throws SQLException {
    Connection connection = dataSource.getConnection();
    try {
      connection.setAutoCommit(false);
      boolean taken;
      try (PreparedStatement ps = connection.prepareStatement(TRY_LOCK)) {
        ps.setString(1, table.schema());
        ps.setString(2, table.historyTable());
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          taken = rs.getBoolean(1);
        }
      }
      if (!taken) {
        throw new MigrationInProgressException(table);
      }
      return new MigrationLock(connection);
    } catch (SQLException | RuntimeException e) {
      try {
        end(connection);
      } catch (SQLException ending) {
        e.addSuppressed(ending);
      }
      throw e;
    }
  }

  @Override
  public void close() throws SQLException {
    end(connection);
  }

  private static void end(Connection connection) throws SQLException {
    try (connection) {
      if (!connection.getAutoCommit()) {
        connection.rollback(); // releases the lock; the transaction wrote nothing
      }
    }
  }
}
