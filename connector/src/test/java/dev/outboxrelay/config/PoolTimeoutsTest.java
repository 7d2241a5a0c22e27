package dev.outboxrelay.config;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.postgres.DataSourceFactory;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.testing.Postgres;
import dev.outboxrelay.testing.SilentProxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The task's pool never lets a statement hang the task thread: a statement stuck behind a lock is
 * cancelled by the database after {@code statement.timeout.ms}, a connection whose network went
 * silent fails after {@code socket.timeout.ms}, and both failures are retriable.
 */
class PoolTimeoutsTest {
  static final OutboxTable TABLE = OutboxTable.parse("outbox");

  /** Far above any timeout the tests configure: only a hang reaches it. */
  static final Duration HANG = Duration.ofSeconds(60);

  static String url;

  @BeforeAll
  static void database() {
    url = Postgres.freshDatabase("pool_timeouts");
    try (HikariDataSource pool = Postgres.pool(url, 3)) {
      new SchemaMigrator(pool, TABLE).migrate();
    }
  }

  static OutboxSourceConfig config(String jdbcUrl, Map<String, String> extra) {
    Map<String, String> props = new HashMap<>();
    props.put("connection.url", jdbcUrl);
    props.put("connection.user", Postgres.user());
    props.put("connection.pool.size", "2");
    props.put("instance.keys", "orders");
    props.putAll(extra);
    return new OutboxSourceConfig(props);
  }

  static OutboxStore store(OutboxSourceConfig config) {
    HikariDataSource pool = DataSourceFactory.create(config.connectionSettings(), "pool-timeouts");
    return new PostgresOutboxStore(pool, TABLE, RelayClock.database(), pool);
  }

  static ClaimRequest claim() {
    return new ClaimRequest("task-0", Set.of("orders"), 10, Duration.ofMinutes(1), 10, false);
  }

  static void execute(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  static void insertRow(String messageId) throws SQLException {
    try (HikariDataSource pool = Postgres.pool(url, 1);
        Connection c = pool.getConnection()) {
      execute(
          c,
          "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
              + " payload) VALUES ('"
              + messageId
              + "', 'orders', 'order', 'a-1', 'created', 'x')");
    }
  }

  /** Waits for the call to end (a hang fails the test) and returns how it failed. */
  static OutboxStoreException failureOf(CompletableFuture<?> call) throws InterruptedException {
    await("the call to end instead of hanging").atMost(HANG).until(call::isDone);
    try {
      call.get();
    } catch (ExecutionException e) {
      return assertInstanceOf(OutboxStoreException.class, e.getCause());
    }
    throw new AssertionError("the call succeeded");
  }

  /**
   * A claim that never got a connection (every pooled one taken until the pool's wait timed out)
   * sent nothing: nothing of it can have committed, and the task need not look for its rows (a lost
   * claim's release reads the whole backlog).
   */
  @Test
  void aClaimThatGotNoConnectionSentNothing() throws Exception {
    OutboxSourceConfig config = config(url, Map.of("connection.timeout.ms", "250"));
    try (HikariDataSource pool =
            DataSourceFactory.create(config.connectionSettings(), "pool-timeouts-taken");
        OutboxStore store = new PostgresOutboxStore(pool, TABLE, RelayClock.database(), null);
        Connection first = pool.getConnection();
        Connection second = pool.getConnection()) {
      OutboxStoreException e = failureOf(CompletableFuture.supplyAsync(() -> store.claim(claim())));

      assertTrue(e.isRetriable(), e::toString);
      assertFalse(e.mayHaveCommitted(), e::toString);
    }
  }

  @Test
  void claimBehindATableLockIsCancelledAndRetriable() throws Exception {
    OutboxSourceConfig config = config(url, Map.of("statement.timeout.ms", "500"));
    try (OutboxStore store = store(config);
        HikariDataSource other = Postgres.pool(url, 1);
        Connection locker = other.getConnection()) {
      store.claim(claim()); // the pool is up and the statement works
      locker.setAutoCommit(false);
      execute(locker, "LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE");
      CompletableFuture<ClaimResult> stuck =
          CompletableFuture.supplyAsync(() -> store.claim(claim()));
      try {
        OutboxStoreException failure = failureOf(stuck);

        assertTrue(failure.isRetriable(), failure.getMessage());
        assertEquals("57014", failure.sqlState()); // query_canceled: the statement timeout
      } finally {
        locker.rollback(); // releases the lock, also for a claim that would hang
      }
      insertRow("after-lock");

      assertEquals(1, store.claim(claim()).claimed().size()); // the same pool recovers
    }
  }

  @Test
  void silentNetworkFailsTheCallAndTheStoreCloses() throws Exception {
    try (SilentProxy proxy = SilentProxy.to(Postgres.server().getPort())) {
      String database = url.substring(url.lastIndexOf('/') + 1);
      OutboxSourceConfig config =
          config(
              proxy.jdbcUrl(database),
              Map.of("statement.timeout.ms", "1000", "socket.timeout.ms", "2000"));
      OutboxStore store = store(config);
      try {
        store.claim(claim()); // through the proxy while it still forwards
        // The claim's own SQL reaches the server; nothing comes back, and nothing resets.
        proxy.silenceAfterClientSends("lease_owner");
        CompletableFuture<ClaimResult> call =
            CompletableFuture.supplyAsync(() -> store.claim(claim()));

        OutboxStoreException failure = failureOf(call);

        assertTrue(proxy.silenced());
        assertTrue(failure.isRetriable(), failure.getMessage());
        assertEquals("08006", failure.sqlState()); // connection failure: the read timed out
        insertRow("after-silence");
        await("the pool to recover on a new connection")
            .atMost(HANG)
            .ignoreExceptionsInstanceOf(OutboxStoreException.class)
            .until(() -> containsRow(store.claim(claim()), "after-silence"));
      } finally {
        CompletableFuture<Void> closing = CompletableFuture.runAsync(store::close);
        await("close() to return").atMost(HANG).until(closing::isDone);
        closing.join();
      }
    }
  }

  static boolean containsRow(ClaimResult result, String messageId) {
    return result.claimed().stream().anyMatch(m -> m.messageId().equals(messageId));
  }

  @Test
  void timeoutsAreSetOnEveryPooledConnection() throws SQLException {
    OutboxSourceConfig config =
        config(url, Map.of("statement.timeout.ms", "1500", "socket.timeout.ms", "2500"));
    try (HikariDataSource pool =
            DataSourceFactory.create(config.connectionSettings(), "pool-timeouts");
        Connection c = pool.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW statement_timeout")) {
      rs.next();
      assertEquals("1500ms", rs.getString(1));
      assertEquals(3000, c.getNetworkTimeout()); // the driver counts whole seconds, rounded up
    }
  }
}
