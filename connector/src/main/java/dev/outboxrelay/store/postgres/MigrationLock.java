package dev.outboxrelay.store.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * outbox} and {@code public.outbox} are the same migration. The transaction sits idle while the
 * migration runs, so the server's idle-in-transaction and transaction timeouts are lifted for it: a
 * long index build must not end the lock half-way.
 */
final class MigrationLock implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(MigrationLock.class);

  /** The schema the key names: null when the table names none and the search path has none. */
  private static final String SCHEMA = "SELECT coalesce(?, current_schema())";

  private static final String TRY_LOCK =
      "SELECT set_config('idle_in_transaction_session_timeout', '0', true),"
          + " CASE WHEN current_setting('server_version_num')::int >= 170000"
          + " THEN set_config('transaction_timeout', '0', true) END,"
          + " pg_try_advisory_xact_lock(hashtextextended('outbox-relay migrate ' || ?, 0))";

  private final Connection connection;
  private final OutboxTable table;

  private MigrationLock(Connection connection, OutboxTable table) {
    this.connection = connection;
    this.table = table;
  }

  /**
   * Takes the lock of {@code table}'s migrations.
   *
   * @throws MigrationInProgressException another session holds it
   * @throws SQLException as the driver reports it; SQLState 3F000 when the table names no schema
   *     and the connection's search path names no existing one
   */
  static MigrationLock take(DataSource dataSource, OutboxTable table) throws SQLException {
    Connection connection = dataSource.getConnection();
    try {
      connection.setAutoCommit(false);
      Object schema = query(connection, SCHEMA, table.schema());
      if (schema == null) {
        throw new SQLException("no schema to migrate in", "3F000"); // invalid_schema_name
      }
      if (!Boolean.TRUE.equals(query(connection, TRY_LOCK, schema + "." + table.historyTable()))) {
        throw new MigrationInProgressException(table);
      }
      return new MigrationLock(connection, table);
    } catch (SQLException | RuntimeException e) {
      try {
        end(connection);
      } catch (SQLException ending) {
        e.addSuppressed(ending);
      }
      throw e;
    }
  }

  /** The last column of the statement's one row. */
  private static Object query(Connection connection, String sql, String parameter)
      throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(sql)) {
      ps.setString(1, parameter);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getObject(rs.getMetaData().getColumnCount());
      }
    }
  }

  /**
   * Releases the lock. Never throws: a connection that fails to end its transaction has lost its
   * session, and the lock with it; what the migration did stands.
   */
  @Override
  public void close() {
    try {
      end(connection);
    } catch (SQLException e) {
      log.warn(
          "The migration lock of table {} ended with its connection (sqlState={})",
          table,
          e.getSQLState());
    }
  }

  private static void end(Connection connection) throws SQLException {
    try (connection) {
      if (!connection.getAutoCommit()) {
        connection.rollback(); // releases the lock; the transaction wrote nothing
      }
    }
  }
}
