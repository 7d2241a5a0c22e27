package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The task's statement timeout bounds claims and outcome writes, not schema migrations: an index
 * change on a busy table may wait for locks, or build, far longer than any claim.
 */
class MigrationTimeoutTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");
  private static final String LOCK_TIMEOUT = "schema.migrate.lock.timeout.ms";

  /** A connector that migrates on start, with {@code settings} besides. */
  private static OutboxSourceConfig migratingConfig(String url, Map<String, String> settings) {
    Map<String, String> props = new HashMap<>(settings);
    props.put("connection.url", url);
    props.put("connection.user", Postgres.user());
    props.put("instance.keys", "orders");
    props.put("schema.migrate.on.start", "true");
    return new OutboxSourceConfig(props);
  }

  @Test
  void aMigrationWaitingForALockOutlivesTheTasksStatementTimeout() throws Exception {
    String url = Postgres.freshDatabase("migration_timeout");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, TABLE).migrateTo("5");
      OutboxSourceConfig config =
          migratingConfig(url, Map.of("statement.timeout.ms", "100", LOCK_TIMEOUT, "0"));
      PostgresStoreProvider provider = new PostgresStoreProvider();
      try (Connection blocker = admin.getConnection();
          Statement s = blocker.createStatement()) {
        blocker.setAutoCommit(false);
        s.execute("LOCK TABLE outbox IN ACCESS SHARE MODE"); // V6 drops an index: it must wait
        provider.open(config, "migration-timeout").close();
        CompletableFuture<Void> migration =
            CompletableFuture.runAsync(() -> provider.migrate(config));

        // Ten times the statement timeout spent waiting, and still not cancelled.
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> waitingOnLockFor(admin, Duration.ofSeconds(1)) || migration.isDone());
        migration.getNow(null); // rethrows a cancelled migration's failure
        blocker.commit();
        migration.get();
      }
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery("SELECT max(version::int) FROM outbox_schema_history WHERE success")) {
        rs.next();
        assertEquals(Integer.parseInt(SchemaMigrator.CURRENT_VERSION), rs.getInt(1));
      }
    }
  }

  /**
   * Nor by a role's or database's transaction_timeout (PostgreSQL 17), which would end the whole
   * migration's transaction, at every retry, on a table big enough to need the time.
   */
  @Test
  void aMigrationOutlivesATransactionTimeoutOfTheDatabase() throws Exception {
    assumeTrue(Postgres.majorVersion() >= 17, "no transaction_timeout before PostgreSQL 17");
    String url = Postgres.freshDatabase("migration_transaction_timeout");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, TABLE).migrateTo("5");
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET transaction_timeout = ''500ms''',"
                + " current_database()); END $$");
      }
      OutboxSourceConfig config = migratingConfig(url, Map.of(LOCK_TIMEOUT, "0"));
      PostgresStoreProvider provider = new PostgresStoreProvider();
      try (Connection blocker = admin.getConnection();
          Statement s = blocker.createStatement()) {
        s.execute("SET transaction_timeout = 0"); // the blocker's lock must outlast 500 ms
        blocker.setAutoCommit(false);
        s.execute("LOCK TABLE outbox IN ACCESS SHARE MODE");
        provider.open(config, "migration-transaction-timeout").close();
        CompletableFuture<Void> migration =
            CompletableFuture.runAsync(() -> provider.migrate(config));

        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> waitingOnLockFor(admin, Duration.ofSeconds(1)) || migration.isDone());
        migration.getNow(null); // rethrows a migration ended by the timeout
        blocker.commit();
        migration.get();
      }
      assertTrue(new SchemaMigrator(admin, TABLE).isCurrent());
    }
  }

  /**
   * What a migration does not do is wait long for its lock: inserts queue behind it. Past {@code
   * schema.migrate.lock.timeout.ms} it fails, retriable, naming the lock; nothing has changed, and
   * the next attempt applies once the lock is free.
   */
  @Test
  @Timeout(value = 2, unit = TimeUnit.MINUTES) // without the lock timeout it would wait for ever
  void aMigrationGivesUpOnALockPastTheLockTimeoutAndIsRetriable() throws Exception {
    String url = Postgres.freshDatabase("migration_lock_timeout");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, TABLE).migrateTo("5");
      OutboxSourceConfig config = migratingConfig(url, Map.of(LOCK_TIMEOUT, "50"));
      PostgresStoreProvider provider = new PostgresStoreProvider();
      try (Connection blocker = admin.getConnection();
          Statement s = blocker.createStatement()) {
        blocker.setAutoCommit(false);
        s.execute("LOCK TABLE outbox IN ACCESS SHARE MODE");
        OutboxStoreException e =
            assertThrows(OutboxStoreException.class, () -> provider.migrate(config));
        assertTrue(e.isRetriable());
        assertEquals("DB_LOCK_NOT_AVAILABLE", e.reasonCode());
        assertEquals(StoreProvider.MIGRATE, e.operation());
        assertEquals(Optional.of("5"), new SchemaMigrator(admin, TABLE).currentVersion());
        blocker.commit();
      }
      provider.migrate(config);
      assertTrue(new SchemaMigrator(admin, TABLE).isCurrent());
    }
  }

  private static boolean waitingOnLockFor(HikariDataSource admin, Duration atLeast)
      throws Exception {
    try (Connection c = admin.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    + " AND query ILIKE '%DROP INDEX%' AND now() - query_start > interval '"
                    + atLeast.toMillis()
                    + " milliseconds'")) {
      rs.next();
      return rs.getInt(1) > 0;
    }
  }
}
