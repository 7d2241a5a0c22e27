package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Tasks of one connector migrate the same table on their first polls: one migrates, the others find
 * it running and are told so at once (retriable, with a reason code of its own, no SQLState),
 * instead of waiting behind Flyway's lock for 50 s and then failing the task.
 */
class ConcurrentMigrationTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");

  @Test
  @Timeout(value = 2, unit = TimeUnit.MINUTES)
  void aTaskFindingAnotherTasksMigrationRunningIsToldSoAtOnce() throws Exception {
    String url = Postgres.freshDatabase("concurrent_migration");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, TABLE).migrateTo("5");
      OutboxSourceConfig config =
          new OutboxSourceConfig(
              Map.of(
                  "connection.url", url,
                  "connection.user", Postgres.user(),
                  "instance.keys", "orders",
                  "schema.migrate.on.start", "true",
                  "schema.migrate.lock.timeout.ms", "0"));
      PostgresStoreProvider first = new PostgresStoreProvider();
      PostgresStoreProvider second = new PostgresStoreProvider();
      try (Connection blocker = admin.getConnection();
          Statement s = blocker.createStatement()) {
        blocker.setAutoCommit(false);
        s.execute("LOCK TABLE outbox IN ACCESS SHARE MODE"); // V6 drops an index: it waits
        CompletableFuture<Void> running = CompletableFuture.runAsync(() -> first.migrate(config));
        await().atMost(Duration.ofSeconds(30)).until(() -> waitingOnLock(admin));

        OutboxStoreException e =
            assertThrows(OutboxStoreException.class, () -> second.migrate(config));
        assertTrue(e.isRetriable());
        assertEquals(StoreProvider.MIGRATION_IN_PROGRESS, e.reasonCode());
        assertNull(e.sqlState());
        assertEquals(StoreProvider.MIGRATE, e.operation());
        assertFalse(running.isDone());
        assertEquals(Optional.of("5"), new SchemaMigrator(admin, TABLE).currentVersion());

        blocker.commit();
        running.get(1, TimeUnit.MINUTES);
      }
      second.migrate(config); // nothing left to apply
      assertTrue(new SchemaMigrator(admin, TABLE).isCurrent());
    }
  }

  private static boolean waitingOnLock(HikariDataSource admin) throws Exception {
    try (Connection c = admin.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    + " AND query ILIKE '%DROP INDEX%' AND datname = current_database()")) {
      rs.next();
      return rs.getInt(1) > 0;
    }
  }
}
