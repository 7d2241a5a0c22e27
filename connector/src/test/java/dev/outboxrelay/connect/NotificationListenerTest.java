package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.Postgres;
import dev.outboxrelay.testing.SilentProxy;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Set;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The insert trigger (schema V3) notifies, and the listener wakes the task for its own keys. */
class NotificationListenerTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");
  private HikariDataSource dataSource;
  private String url;
  private NotificationListener listener;
  private final WakeSignal wake = new WakeSignal();

  @BeforeEach
  void setUp() {
    url = Postgres.freshDatabase("notify");
    dataSource = Postgres.pool(url, 3);
    new SchemaMigrator(dataSource, TABLE).migrate();
    listener = listenerOf(TABLE);
  }

  /** A listener for {@code table} (as outbox.table spells it) on the test's database. */
  private NotificationListener listenerOf(OutboxTable table) {
    return new NotificationListener(connections(), table, Set.of("eu"), wake, "test-listener");
  }

  /** New connections to the test's database. */
  private Supplier<Connection> connections() {
    return () -> {
      try {
        return DriverManager.getConnection(url, Postgres.user(), "");
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    };
  }

  @AfterEach
  void tearDown() {
    listener.stop();
    dataSource.close();
  }

  /**
   * An Error on the listener's thread (not a failed connection, which it retries) is logged with
   * the relay's reason code and the error's class, not left to the JVM's stderr.
   */
  @Test
  void anErrorThatEndsTheListenerIsLoggedByClassOnly() {
    long mark = LogCapture.get().mark();
    NotificationListener dying =
        new NotificationListener(
            () -> {
              throw new StackOverflowError("jdbc:postgresql://secret-host/db");
            },
            TABLE,
            Set.of("eu"),
            wake,
            "test-dying-listener");
    dying.start();
    LogCapture.Event said = awaitLine(mark, "reason=BACKGROUND_THREAD_DIED");
    assertEquals("ERROR", said.level());
    assertTrue(said.message().contains("error=java.lang.StackOverflowError"), said::message);
    assertFalse(said.fullText().contains("secret-host"), said::fullText);
    dying.stop();
  }

  /**
   * A connection whose close throws (a driver's RuntimeException) does not fail the stop: the
   * task's stop called it first, and its threads and pool then stayed open for the worker's
   * lifetime.
   */
  @Test
  void aConnectionWhoseCloseThrowsDoesNotFailTheStop() {
    Supplier<Connection> real = connections();
    NotificationListener closeThrows =
        new NotificationListener(
            () -> {
              Connection c = real.get();
              return (Connection)
                  java.lang.reflect.Proxy.newProxyInstance(
                      Connection.class.getClassLoader(),
                      new Class<?>[] {Connection.class},
                      (proxy, method, args) -> {
                        if (method.getName().equals("close")) {
                          c.close();
                          throw new IllegalStateException("close failed");
                        }
                        return invoke(method, c, args);
                      });
            },
            TABLE,
            Set.of("eu"),
            wake,
            "test-close-throws");
    closeThrows.start();
    await().atMost(Duration.ofSeconds(60)).until(wake::isSignalled); // listening

    assertDoesNotThrow(closeThrows::stop);
  }

  /**
   * Behind a pooler in transaction mode the session that answers is not the one that listened
   * (simulated: the LISTEN never reaches the server): the probe finds the channel not listened on,
   * says so at WARN naming notify.enabled, and the listener ends rather than reconnect, which would
   * leave one more pooled session listening each time. It passed every probe before, silent.
   */
  @Test
  void aSessionThatDoesNotListenIsSaidAndNotReconnectedTo() {
    listener.stop();
    long mark = LogCapture.get().mark();
    Supplier<Connection> real = connections();
    int[] opened = {0};
    listener =
        new NotificationListener(
            () -> {
              opened[0]++;
              return withoutListen(real.get());
            },
            TABLE,
            Set.of("eu"),
            wake,
            () -> true,
            "test-pooled-listener",
            Duration.ofMillis(100),
            Duration.ofSeconds(5));
    listener.start();

    LogCapture.Event said = awaitLine(mark, "does not listen on channel");
    assertEquals("WARN", said.level());
    assertTrue(said.message().contains("notify.enabled=false"), said::message);
    assertEquals(0, listener.probes(), "no probe passed");
    await().atMost(Duration.ofSeconds(30)).until(() -> !listener.isAlive()); // it ended, and
    assertEquals(1, opened[0], "not reconnected"); // without a reconnect first
  }

  /** A connection whose LISTEN statements never reach the server, as behind such a pooler. */
  private static Connection withoutListen(Connection c) {
    return (Connection)
        java.lang.reflect.Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              Object result = invoke(method, c, args);
              if (method.getName().equals("createStatement")
                  && result instanceof java.sql.Statement statement) {
                return java.lang.reflect.Proxy.newProxyInstance(
                    java.sql.Statement.class.getClassLoader(),
                    new Class<?>[] {java.sql.Statement.class},
                    (p, m, a) ->
                        m.getName().equals("execute")
                                && a != null
                                && a[0] instanceof String sql
                                && sql.startsWith("LISTEN ")
                            ? Boolean.FALSE
                            : invoke(m, statement, a));
              }
              return result;
            });
  }

  /** The first line logged since {@code mark} that holds {@code fragment}, once there is one. */
  private static LogCapture.Event awaitLine(long mark, String fragment) {
    return await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> LogCapture.get().matching(mark, e -> e.message().contains(fragment)),
            lines -> !lines.isEmpty())
        .get(0);
  }

  private static Object invoke(java.lang.reflect.Method method, Object target, Object[] args)
      throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private void insert(String key) throws SQLException {
    insert(key, true);
  }

  private void insert(String key, boolean notify) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try (var s = c.createStatement()) {
        s.execute("SET LOCAL outbox_relay.notify = '" + (notify ? "on" : "off") + "'");
      }
      new PostgresOutboxWriter(TABLE.tableName(), key)
          .enqueue(
              c,
              OutboxMessage.builder()
                  .aggregateType("order")
                  .aggregateId("a")
                  .eventType("E")
                  .build());
      c.commit();
    }
  }

  /** Starts the listener and waits for its LISTEN to take effect (it wakes the task then). */
  private void listening() {
    listener.start();
    await().atMost(java.time.Duration.ofSeconds(60)).until(wake::isSignalled);
    wake.await(java.time.Duration.ZERO); // consume the signal
  }

  /**
   * Once its LISTEN has taken effect the listener wakes the task: rows committed before it were
   * announced to nobody, and would otherwise wait for the poll interval (at start and after every
   * reconnect).
   */
  @Test
  void theTaskIsWokenOnceListening() {
    listener.start();

    // A first LISTEN on a fresh database reads the trigger's channel from the catalog first.
    await().atMost(Duration.ofSeconds(60)).until(wake::isSignalled);
    assertEquals(0, listener.received(), "woken by the LISTEN, not by a notification");
  }

  @Test
  void aCommittedInsertOfOurKeyWakesTheTask() throws SQLException {
    listening();

    insert("eu");

    // The listener wakes the task first and counts the notification after.
    await().until(() -> listener.received() == 1);
    assertTrue(wake.isSignalled());
  }

  /**
   * A connector that spells the table otherwise than its migration did ({@code public.outbox} for a
   * table migrated as {@code outbox}) listens on the channel the table's trigger announces on, read
   * from the trigger function; by its own spelling it listened on another channel, heard nothing,
   * and fell back to polling without a word.
   */
  @Test
  void aTableSpelledOtherwiseThanAtItsMigrationIsHeardToo() throws SQLException {
    listener.stop();
    OutboxTable qualified = OutboxTable.parse("public.outbox");
    assertNotEquals(TABLE.notifyChannel(), qualified.notifyChannel());
    long mark = LogCapture.get().mark();
    listener = listenerOf(qualified);
    listening();

    insert("eu");

    await().until(() -> listener.received() == 1);
    assertTrue(wake.isSignalled());
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("announces on channel outbox_relay"))
            .size());
  }

  /**
   * A migration after the LISTEN that moves the trigger's channel (version 5 writes it from the
   * migrating connector's spelling of the table: {@code public.outbox} for a table migrated to
   * version 4 as {@code outbox}) is found by the next probe, which reads the channel: the listener
   * stayed on the old one and heard nothing until its connection failed.
   */
  @Test
  void aChannelMovedByAMigrationAfterTheListenIsFollowed() throws SQLException {
    listener.stop();
    String older = Postgres.freshDatabase("notify_moved");
    try (HikariDataSource olderTable = Postgres.pool(older, 3)) {
      new SchemaMigrator(olderTable, TABLE).migrateTo("4");
      OutboxTable qualified = OutboxTable.parse("public.outbox");
      listener =
          new NotificationListener(
              () -> {
                try {
                  return DriverManager.getConnection(older, Postgres.user(), "");
                } catch (SQLException e) {
                  throw new IllegalStateException(e);
                }
              },
              qualified,
              Set.of("eu"),
              wake,
              () -> true,
              "test-moved-listener",
              Duration.ofMillis(100),
              Duration.ofSeconds(5));
      listening();

      new SchemaMigrator(olderTable, qualified).migrate(); // the trigger now says public_outbox
      long probes = listener.probes();
      await().until(() -> listener.probes() > probes);
      try (Connection c = olderTable.getConnection()) {
        c.setAutoCommit(false);
        new PostgresOutboxWriter(TABLE.tableName(), "eu")
            .enqueue(
                c,
                OutboxMessage.builder()
                    .aggregateType("order")
                    .aggregateId("a")
                    .eventType("E")
                    .build());
        c.commit();
      }

      await().until(() -> listener.received() == 1);
    }
  }

  /**
   * While no claim could take rows (the task holds its limit, waiting for Kafka) an insert does not
   * wake it: each wake-up ended poll()'s pause for a claim that found nothing, and a stream of
   * inserts kept the task polling at their rate. The room freed wakes it instead (the outcome
   * writer's, {@link InFlightLedger#freesPoll}); the rows stay in the table for that claim.
   */
  @Test
  void anInsertWhileNoClaimCouldTakeItDoesNotWakeTheTask() throws SQLException {
    listener.stop();
    java.util.concurrent.atomic.AtomicBoolean room =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    listener =
        new NotificationListener(
            connections(), TABLE, Set.of("eu"), wake, room::get, "test-full-listener");
    listening();

    room.set(false);
    insert("eu");
    await().until(() -> listener.received() == 1);
    assertFalse(wake.isSignalled(), "no claim could take it");

    room.set(true);
    insert("eu");
    await().until(() -> listener.received() == 2);
    assertTrue(wake.isSignalled());
  }

  @Test
  void anotherInstancesInsertDoesNotWakeUs() throws SQLException {
    listening();
    insert("eu");
    await().until(() -> listener.received() >= 1);
    wake.await(java.time.Duration.ZERO); // consume the signal
    long before = listener.received();
    insert("us");
    await().until(() -> listener.received() > before);
    assertFalse(wake.isSignalled(), "a foreign instance key's insert must not wake this task");
  }

  @Test
  void theNotificationCanBeSwitchedOffWithoutDdl() throws SQLException {
    listening();
    insert("eu");
    await().until(() -> listener.received() >= 1);
    wake.await(java.time.Duration.ZERO);
    long before = listener.received();
    insert("eu", false);
    insert("us", true); // heard after the silent insert, had there been a notification for it
    await().until(() -> listener.received() > before);
    assertFalse(wake.isSignalled(), "outbox_relay.notify=off sends no notification");
    assertEquals(before + 1, listener.received());
  }

  /**
   * A connection that falls silent (an unplanned failover leaves the socket half open; TCP
   * keepalive would notice after hours) is found by the listener's periodic round trip within its
   * timeout, reported, and replaced: a wait for notifications that times out says nothing of the
   * peer. The new connection wakes the task, as the first did.
   */
  @Test
  void aConnectionThatFallsSilentIsFoundAndReplaced() {
    String database = url.substring(url.lastIndexOf('/') + 1).replaceAll("\\?.*", "");
    try (SilentProxy proxy = SilentProxy.to(Postgres.server().getPort())) {
      NotificationListener probed =
          new NotificationListener(
              () -> {
                try {
                  return DriverManager.getConnection(proxy.jdbcUrl(database), Postgres.user(), "");
                } catch (SQLException e) {
                  throw new IllegalStateException(e);
                }
              },
              TABLE,
              Set.of("eu"),
              wake,
              () -> true,
              "test-probed-listener",
              Duration.ofMillis(100),
              Duration.ofMillis(500));
      long mark = LogCapture.get().mark();
      probed.start();
      try {
        await().until(() -> probed.probes() >= 1);
        proxy.silenceAfterClientSends("pg_proc"); // the probe's read of the channel
        await().until(proxy::silenced);
        wake.await(Duration.ZERO);

        await()
            .atMost(Duration.ofSeconds(20))
            .until(
                () ->
                    !LogCapture.get()
                        .matching(
                            mark,
                            e -> e.message().startsWith("Listening for insert notifications again"))
                        .isEmpty());
        assertEquals(
            1,
            LogCapture.get()
                .matching(mark, e -> e.message().contains("reason=NOTIFY_UNAVAILABLE"))
                .size(),
            "reported once");
        await().until(wake::isSignalled);
        long probesBefore = probed.probes();
        await().until(() -> probed.probes() > probesBefore);
      } finally {
        probed.stop();
      }
    }
  }

  /**
   * A session ended soon after every connect (a server's or proxy's idle timeout shorter than the
   * probe interval; here the test ends it after each LISTEN) is one outage, reported once, not a
   * reconnect logged every cycle; the connection is back once a probe has passed.
   */
  @Test
  void aSessionEndedAfterEveryConnectIsOneOutageUntilAProbePasses() throws SQLException {
    java.util.concurrent.atomic.AtomicInteger pid = new java.util.concurrent.atomic.AtomicInteger();
    NotificationListener ended =
        new NotificationListener(
            () -> {
              try {
                Connection c = DriverManager.getConnection(url, Postgres.user(), "");
                try (var s = c.createStatement();
                    var rs = s.executeQuery("SELECT pg_backend_pid()")) {
                  rs.next();
                  pid.set(rs.getInt(1));
                }
                return c;
              } catch (SQLException e) {
                throw new IllegalStateException(e);
              }
            },
            TABLE,
            Set.of("eu"),
            wake,
            () -> true,
            "test-ended-listener",
            // Long enough that each session is ended before its first probe even when this
            // thread is descheduled for seconds (3 s let a probe pass first, a second outage).
            Duration.ofSeconds(8),
            Duration.ofSeconds(1));
    long mark = LogCapture.get().mark();
    ended.start();
    try {
      for (int i = 0; i < 3; i++) {
        // listening (again), before its first probe
        await().atMost(Duration.ofSeconds(60)).until(wake::isSignalled);
        wake.await(Duration.ZERO);
        try (Connection c = dataSource.getConnection();
            var s = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
          s.setInt(1, pid.get());
          s.execute();
        }
      }
      await().atMost(Duration.ofSeconds(60)).until(wake::isSignalled);
      await().atMost(Duration.ofSeconds(60)).until(() -> ended.probes() >= 1);

      assertEquals(
          1,
          LogCapture.get()
              .matching(
                  mark,
                  e ->
                      e.thread().equals("test-ended-listener")
                          && e.message().startsWith("Not listening for insert notifications"))
              .size(),
          "one outage, reported once (at INFO; then quietly)");
      assertEquals(
          1,
          LogCapture.get()
              .matching(
                  mark,
                  e ->
                      e.thread().equals("test-ended-listener")
                          && e.message().startsWith("Listening for insert notifications again"))
              .size(),
          "back once, after a probe passed");
      assertEquals(0, ended.probes() - 1, "no probe passed before the last connection");
    } finally {
      ended.stop();
    }
  }

  /** A refused login says which: the SQLState of the supplier's classified failure. */
  @Test
  void aConnectionThatCannotBeOpenedIsReportedWithItsSqlState() {
    NotificationListener refused =
        new NotificationListener(
            () -> {
              throw new OutboxStoreException(
                  OutboxStoreException.Kind.AUTHENTICATION,
                  "DB_AUTHENTICATION_FAILED",
                  "28P01",
                  "listen");
            },
            TABLE,
            Set.of("eu"),
            wake,
            "test-refused-listener");
    long mark = LogCapture.get().mark();
    refused.start();
    try {
      await()
          .until(
              () ->
                  !LogCapture.get()
                      .matching(
                          mark,
                          e ->
                              e.message().startsWith("Not listening for insert notifications")
                                  && e.message().contains("sqlState=28P01"))
                      .isEmpty());
    } finally {
      refused.stop();
    }
  }
}
