package dev.outboxrelay.writer;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.postgresql.PGConnection;
import org.postgresql.ds.PGSimpleDataSource;
import org.postgresql.jdbc.AutoSave;

/**
 * The writer against a real PostgreSQL, on the table docs/schema.sql creates: every column lands as
 * given, the row commits and rolls back with the caller's transaction, and a retried message id is
 * a no-op, whether its row still waits in the outbox or was published into the published log.
 */
class PostgresOutboxWriterDatabaseTest {
  private static final String TRACEPARENT = OutboxMessageTest.TRACEPARENT;

  private TestDatabase db;
  private final PostgresOutboxWriter writer = new PostgresOutboxWriter("outbox", "orders-eu");

  @BeforeEach
  void database() {
    db = TestDatabase.withOutbox("writer");
  }

  @Test
  void everyColumnLandsAsGivenAndTheRelayOwnsTheRest() throws SQLException {
    OutboxMessage message =
        OutboxMessage.builder()
            .messageId("o-42:placed")
            .aggregateType("order")
            .aggregateId("o-42")
            .eventType("OrderPlaced")
            .topic("orders")
            .jsonPayload(Map.of("id", "o-42"))
            .traceparent(TRACEPARENT)
            .header("tenant", "acme")
            .correlationId("checkout-7")
            .deliverBefore(Instant.parse("2030-01-02T03:04:05.123456Z"))
            .build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, message));
      c.commit();
    }

    Map<String, String> expected = new TreeMap<>();
    expected.put("message_id", "o-42:placed");
    expected.put("instance_key", "orders-eu");
    expected.put("aggregate_type", "order");
    expected.put("aggregate_id", "o-42");
    expected.put("event_type", "OrderPlaced");
    expected.put("topic", "orders");
    expected.put("payload", "{\"id\":\"o-42\"}");
    expected.put("traceparent", TRACEPARENT);
    expected.put("tenant", "acme");
    expected.put("correlation_id", "checkout-7");
    expected.put("deliver_before", "2030-01-02T03:04:05.123456Z");
    expected.put("status", "PENDING");
    expected.put("attempts", "0");
    expected.put("lease_owner", null);
    assertEquals(
        List.of(expected),
        db.rows(
            "SELECT message_id, instance_key, aggregate_type, aggregate_id, event_type, topic,"
                + " convert_from(payload, 'UTF8') AS payload,"
                + " headers ->> 'traceparent' AS traceparent, headers ->> 'tenant' AS tenant,"
                + " correlation_id,"
                + " to_char(deliver_before AT TIME ZONE 'UTC',"
                + " 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS deliver_before,"
                + " status, attempts, lease_owner FROM outbox"));
  }

  @Test
  void theRowCommitsAndRollsBackWithTheCallersTransaction() throws SQLException {
    db.exec("CREATE TABLE orders (id TEXT PRIMARY KEY)");
    for (boolean commit : new boolean[] {false, true}) {
      String id = commit ? "o-committed" : "o-rolled-back";
      try (Connection c = db.connection();
          PreparedStatement insertOrder = c.prepareStatement("INSERT INTO orders VALUES (?)")) {
        c.setAutoCommit(false);
        insertOrder.setString(1, id);
        insertOrder.executeUpdate();
        writer.enqueue(c, placed(id));
        if (commit) {
          c.commit();
        } else {
          c.rollback();
        }
      }
    }
    assertEquals(List.of(Map.of("id", "o-committed")), db.rows("SELECT id FROM orders"));
    assertEquals(
        List.of(Map.of("aggregate_id", "o-committed")), db.rows("SELECT aggregate_id FROM outbox"));
  }

  /** A pool's fresh connection, in auto-commit: refused, and no row committed on its own. */
  @Test
  void aConnectionInAutoCommitModeWritesNothing() throws SQLException {
    try (Connection c = db.connection()) {
      assertTrue(c.getAutoCommit());
      assertThrows(IllegalStateException.class, () -> writer.enqueue(c, placed("o-1")));
    }
    assertEquals(0, db.count("SELECT count(*) FROM outbox"));
  }

  @Test
  void aRetriedMessageIdIsADuplicateAndChangesNothing() throws SQLException {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, placed("o-1")));
      assertEquals(EnqueueResult.DUPLICATE, writer.enqueue(c, placed("o-1")));
      OutboxMessage sameIdOtherContent =
          OutboxMessage.builder()
              .messageId("o-1:placed")
              .aggregateType("order")
              .aggregateId("o-other")
              .eventType("Other")
              .build();
      assertEquals(EnqueueResult.DUPLICATE, writer.enqueue(c, sameIdOtherContent));
      c.commit();
    }
    assertEquals(
        List.of(Map.of("aggregate_id", "o-1", "event_type", "OrderPlaced")),
        db.rows("SELECT aggregate_id, event_type FROM outbox"));
  }

  /**
   * Two transactions insert one message id at once (a retry racing its first attempt, two instances
   * handling one command): the second waits for the first's row. Once the first commits, the second
   * is a DUPLICATE that wrote nothing; once it rolls back, the second inserts the row. Never two
   * rows, never none.
   */
  @ParameterizedTest(name = "the first commits: {0}")
  @ValueSource(booleans = {true, false})
  void twoTransactionsInsertingOneMessageIdLeaveOneRow(boolean firstCommits) throws Exception {
    try (Connection first = db.connection();
        Connection second = db.connection()) {
      first.setAutoCommit(false);
      second.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(first, placed("o-1")));

      CompletableFuture<EnqueueResult> racing = enqueueBehindALock(writer, second, true);
      if (firstCommits) {
        first.commit();
      } else {
        first.rollback();
      }

      assertEquals(
          firstCommits ? EnqueueResult.DUPLICATE : EnqueueResult.ENQUEUED,
          racing.get(30, TimeUnit.SECONDS));
    }
    assertEquals(
        List.of(Map.of("message_id", "o-1:placed")), db.rows("SELECT message_id FROM outbox"));
  }

  /**
   * An insert something drops (a trigger returning NULL; row-level security hiding the rows does
   * the same to the writer's check) writes nothing and leaves the id in no row: no race, so not
   * 40001, which an application's retry loop would answer for ever, but 55000 naming the causes.
   */
  @Test
  void anInsertSomethingDropsIsNoRetry() throws Exception {
    db.exec(
        "CREATE FUNCTION drop_insert() RETURNS trigger LANGUAGE plpgsql AS"
            + " $$ BEGIN RETURN NULL; END; $$");
    db.exec(
        "CREATE TRIGGER drop_insert BEFORE INSERT ON outbox"
            + " FOR EACH ROW EXECUTE FUNCTION drop_insert()");
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      SQLException e = assertThrows(SQLException.class, () -> writer.enqueue(c, placed("o-1")));
      assertEquals("55000", e.getSQLState());
      assertTrue(e.getMessage().contains("row-level security"), e::getMessage);
      c.rollback();
    }
  }

  /**
   * In a REPEATABLE READ transaction, a retry whose first attempt's row the relay changed after the
   * transaction's snapshot (a claim) gets PostgreSQL's 40001, as writing-rows.md says, and is a
   * DUPLICATE when the transaction is retried; never a second row.
   */
  @Test
  void aRepeatableReadRetryOfARowChangedAfterItsSnapshotIsRetriedByTheCaller() throws Exception {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, placed("o-1")));
      c.commit();
    }
    try (Connection retry = db.connection()) {
      retry.setAutoCommit(false);
      retry.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      try (var s = retry.createStatement()) {
        s.execute("SELECT 1"); // the retry's snapshot, taken before the relay's claim below
      }
      db.exec(
          "UPDATE outbox SET status = 'IN_FLIGHT', lease_owner = 'relay', lease_token = 1,"
              + " lease_expires_at = now() + interval '1 minute' WHERE message_id = 'o-1:placed'");

      SQLException conflict =
          assertThrows(SQLException.class, () -> writer.enqueue(retry, placed("o-1")));
      assertEquals("40001", conflict.getSQLState());
      retry.rollback();

      assertEquals(EnqueueResult.DUPLICATE, writer.enqueue(retry, placed("o-1")));
      retry.commit();
    }
    assertEquals(
        List.of(Map.of("message_id", "o-1:placed")), db.rows("SELECT message_id FROM outbox"));
  }

  /** The same race between two instance keys: the second is refused, not called a duplicate. */
  @Test
  void aRacingInsertOfAnotherInstanceKeysIdIsRefused() throws Exception {
    PostgresOutboxWriter us = new PostgresOutboxWriter("outbox", "orders-us");
    try (Connection first = db.connection();
        Connection second = db.connection()) {
      first.setAutoCommit(false);
      second.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(first, placed("o-1")));

      CompletableFuture<EnqueueResult> racing = enqueueBehindALock(us, second, false);
      first.commit();

      ExecutionException failed =
          assertThrows(ExecutionException.class, () -> racing.get(30, TimeUnit.SECONDS));
      assertTrue(failed.getCause() instanceof MessageIdTakenException, failed::toString);
      second.rollback();
    }
    assertEquals(
        List.of(Map.of("instance_key", "orders-eu")), db.rows("SELECT instance_key FROM outbox"));
  }

  /**
   * {@code racer}'s enqueue of o-1 on {@code connection} (committed after it, if {@code commit}),
   * in another thread, once it waits for another transaction's lock.
   */
  private CompletableFuture<EnqueueResult> enqueueBehindALock(
      PostgresOutboxWriter racer, Connection connection, boolean commit) throws SQLException {
    CompletableFuture<EnqueueResult> racing =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                EnqueueResult result = racer.enqueue(connection, placed("o-1"));
                if (commit) {
                  connection.commit();
                }
                return result;
              } catch (SQLException e) {
                throw new CompletionException(e);
              }
            });
    awaitWaitingOnALock(connection);
    return racing;
  }

  /** Until {@code connection}'s backend waits for another transaction's lock. */
  private void awaitWaitingOnALock(Connection connection) throws SQLException {
    int pid = connection.unwrap(PGConnection.class).getBackendPID();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                !db.rows(
                        "SELECT 1 AS waiting FROM pg_stat_activity WHERE pid = "
                            + pid
                            + " AND wait_event_type = 'Lock'")
                    .isEmpty());
  }

  /**
   * A framework that commits on a checked exception (Spring's default rollback rules) must not keep
   * the business change without its message: the writer aborts the transaction before it throws, so
   * the commit rolls back. With pgjdbc's autosave=always the abort must also outlast the driver's
   * savepoints: the driver rolls back to its latest one after a statement fails, and the savepoints
   * it made before the writer's statements (one for each statement, released only with
   * cleanupSavepoints) are older than the abort. So the application's next statement fails, and
   * every one after it, whatever the driver does.
   */
  @ParameterizedTest(name = "pgjdbc autosave={0}, cleanupSavepoints={1}")
  @MethodSource("autosaveSettings")
  void aTakenMessageIdAbortsTheTransactionSoItsCommitKeepsNothing(
      AutoSave autosave, boolean cleanupSavepoints) throws SQLException {
    PostgresOutboxWriter us = o9TakenByAnotherKey();
    try (Connection c = connection(autosave, cleanupSavepoints)) {
      c.setAutoCommit(false);
      // Many statements before the writer's: under autosave=always, a savepoint each, more than
      // the writer releases in one round trip.
      run(c, "INSERT INTO orders VALUES ('o-9')");
      for (int i = 0; i < 40; i++) {
        run(c, "SELECT count(*) FROM orders");
      }
      if (autosave == AutoSave.ALWAYS) {
        // The savepoint before a failed statement stays, cleanupSavepoints or not.
        assertThrows(SQLException.class, () -> run(c, "SELECT 1 / 0"));
      }
      run(c, "INSERT INTO orders VALUES ('o-10')");
      MessageIdTakenException e =
          assertThrows(MessageIdTakenException.class, () -> us.enqueue(c, placed("o-9")));
      assertEquals(0, e.getSuppressed().length, "the abort failed as it should");
      assertEquals(
          autosave, c.unwrap(PGConnection.class).getAutosave(), "the driver's setting restored");
      assertAbortedForGood(c);
    }
    assertEquals(0, db.count("SELECT count(*) FROM orders"), "the business change rolled back");
  }

  /**
   * pgjdbc out of the writer's reach (an application server's driver module, a wrapper that hides
   * it), with autosave=always: the driver rolls the abort back to its own savepoint, and the writer
   * cannot suspend it. It then throws an unchecked exception, the failure its cause, for which
   * frameworks roll back by default, where a framework committing on the checked one kept the
   * business change without its message, and nothing said so. Otherwise the abort takes, and the
   * failure is thrown as it is.
   */
  @ParameterizedTest(name = "pgjdbc autosave={0}")
  @EnumSource(AutoSave.class)
  void aDriverOutOfReachThatUndidTheAbortFailsUnchecked(AutoSave autosave) throws SQLException {
    PostgresOutboxWriter us = o9TakenByAnotherKey();
    try (Connection pgjdbc = connection(autosave, false)) {
      Connection hidden = hidingTheDriver(pgjdbc);
      hidden.setAutoCommit(false);
      run(hidden, "INSERT INTO orders VALUES ('o-9')");
      if (autosave == AutoSave.ALWAYS) {
        TransactionStillOpenException open =
            assertThrows(
                TransactionStillOpenException.class, () -> us.enqueue(hidden, placed("o-9")));
        assertTrue(open.getCause() instanceof MessageIdTakenException, open::toString);
        assertTrue(open.getMessage().contains("roll it back, do not commit"), open.getMessage());
        assertEquals(0, open.getSuppressed().length);
        pgjdbc.rollback(); // as a framework does for an unchecked exception
      } else {
        MessageIdTakenException e =
            assertThrows(MessageIdTakenException.class, () -> us.enqueue(hidden, placed("o-9")));
        assertEquals(0, e.getSuppressed().length, "aborted, as it must be");
        assertAbortedForGood(pgjdbc);
      }
    }
    assertEquals(0, db.count("SELECT count(*) FROM orders"));
  }

  /** {@code c} as a pool or container may hand it over: pgjdbc's own interface out of reach. */
  private static Connection hidingTheDriver(Connection c) {
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              if (method.getName().equals("isWrapperFor")) {
                return false;
              }
              if (method.getName().equals("unwrap")) {
                throw new SQLException("not a wrapper for " + args[0]); // as isWrapperFor says
              }
              try {
                return method.invoke(c, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  /**
   * A framework that commits at once on the checked exception (Spring's default rollback rules),
   * with no statement between: the commit keeps nothing, whatever the driver's autosave.
   */
  @ParameterizedTest(name = "pgjdbc autosave={0}, cleanupSavepoints={1}")
  @MethodSource("autosaveSettings")
  void aCommitRightAfterTheRefusalKeepsNothing(AutoSave autosave, boolean cleanupSavepoints)
      throws SQLException {
    PostgresOutboxWriter us = o9TakenByAnotherKey();
    try (Connection c = connection(autosave, cleanupSavepoints)) {
      c.setAutoCommit(false);
      run(c, "INSERT INTO orders VALUES ('o-9')");
      assertThrows(MessageIdTakenException.class, () -> us.enqueue(c, placed("o-9")));
      c.commit();
    }
    assertEquals(0, db.count("SELECT count(*) FROM orders"), "the business change rolled back");
  }

  /**
   * An error of the writer's own statement aborts the transaction too, whatever the driver does
   * with it: under pgjdbc's autosave=always the driver rolls back to the savepoint it made before
   * the insert, which leaves the transaction open, and a framework that commits on a checked
   * exception would keep the business change without its message. Here the insert waits for another
   * transaction's row of the same id and gives up (lock_timeout, 55P03).
   */
  @ParameterizedTest(name = "pgjdbc autosave={0}, cleanupSavepoints={1}")
  @MethodSource("autosaveSettings")
  void anInsertTheDatabaseRefusesAbortsTheTransactionSoItsCommitKeepsNothing(
      AutoSave autosave, boolean cleanupSavepoints) throws SQLException {
    db.exec("CREATE TABLE orders (id text PRIMARY KEY)");
    try (Connection holder = db.connection();
        Connection c = connection(autosave, cleanupSavepoints)) {
      holder.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(holder, placed("o-1")));
      c.setAutoCommit(false);
      run(c, "INSERT INTO orders VALUES ('o-1')");
      run(c, "SET LOCAL lock_timeout = '20ms'");
      SQLException e = assertThrows(SQLException.class, () -> writer.enqueue(c, placed("o-1")));
      assertEquals("55P03", e.getSQLState(), e::toString); // lock_not_available
      assertEquals(0, e.getSuppressed().length, "the abort failed as it should");
      assertEquals(
          autosave, c.unwrap(PGConnection.class).getAutosave(), "the driver's setting restored");
      assertAbortedForGood(c);
      holder.rollback();
    }
    assertEquals(0, db.count("SELECT count(*) FROM orders"), "the business change rolled back");
  }

  /**
   * Without autosave=always the application's own savepoints stay: rolling back to one made before
   * enqueue undoes the abort with the rest, as after PostgreSQL's own errors, and the transaction
   * goes on (a nested transaction, Spring's NESTED).
   */
  @ParameterizedTest(name = "pgjdbc autosave={0}")
  @EnumSource(
      value = AutoSave.class,
      names = {"NEVER", "CONSERVATIVE"})
  void aSavepointOfTheApplicationsOwnStillRollsBackPastTheAbort(AutoSave autosave)
      throws SQLException {
    PostgresOutboxWriter us = o9TakenByAnotherKey();
    try (Connection c = connection(autosave, false)) {
      c.setAutoCommit(false);
      run(c, "INSERT INTO orders VALUES ('o-8')");
      // A statement pgjdbc knows the result of: conservative makes its savepoints before such.
      try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM orders")) {
        for (int i = 0; i < 6; i++) {
          ps.executeQuery().close();
        }
      }
      Savepoint nested = c.setSavepoint();
      run(c, "INSERT INTO orders VALUES ('o-9')");
      assertThrows(MessageIdTakenException.class, () -> us.enqueue(c, placed("o-9")));
      c.rollback(nested);
      run(c, "INSERT INTO orders VALUES ('o-10')");
      c.commit();
    }
    assertEquals(
        List.of(Map.of("id", "o-10"), Map.of("id", "o-8")), // o-9 rolled back with the abort
        db.rows("SELECT id FROM orders ORDER BY id COLLATE \"C\""));
  }

  /**
   * Under autosave=always, a release of the driver's savepoints that fails otherwise than "none
   * left" (a cancel, say; here a division by zero slipped into the second round trip) neither keeps
   * the abort statement from running nor leaves a driver savepoint under it to roll back to.
   */
  @Test
  void aReleaseThatFailsOtherwiseStillLeavesTheTransactionAbortedForGood() throws SQLException {
    PostgresOutboxWriter us = o9TakenByAnotherKey();
    java.util.concurrent.atomic.AtomicInteger releases =
        new java.util.concurrent.atomic.AtomicInteger();
    try (Connection real = connection(AutoSave.ALWAYS, false)) {
      Connection c =
          releaseFails(real, releases, 2, "SAVEPOINT outbox_relay_writer_release; SELECT 1 / 0");
      c.setAutoCommit(false);
      run(c, "INSERT INTO orders VALUES ('o-9')");
      for (int i = 0; i < 40; i++) {
        run(c, "SELECT count(*) FROM orders");
      }
      assertThrows(MessageIdTakenException.class, () -> us.enqueue(c, placed("o-9")));
      assertTrue(releases.get() > 2, "released on after the failure: " + releases.get());
      assertEquals(
          AutoSave.ALWAYS, real.unwrap(PGConnection.class).getAutosave(), "none left: restored");
      assertAbortedForGood(c);
    }
    assertEquals(0, db.count("SELECT count(*) FROM orders"), "the business change rolled back");
  }

  /**
   * A release round whose first statement fails (a cancel of the writer's own SAVEPOINT) has no
   * savepoint of the writer's to go back to, and leaves the driver's under the abort: autosave
   * stays off, or the driver's rollback after the application's next statement would revive the
   * transaction, and its commit keep the business change without its message.
   */
  @Test
  void aReleaseThatFailsBeforeItsSavepointLeavesAutosaveOffAndTheTransactionAborted()
      throws SQLException {
    PostgresOutboxWriter us = o9TakenByAnotherKey();
    java.util.concurrent.atomic.AtomicInteger releases =
        new java.util.concurrent.atomic.AtomicInteger();
    try (Connection real = connection(AutoSave.ALWAYS, false)) {
      Connection c = releaseFails(real, releases, 1, "SELECT 1 / 0");
      c.setAutoCommit(false);
      run(c, "INSERT INTO orders VALUES ('o-9')");
      for (int i = 0; i < 40; i++) {
        run(c, "SELECT count(*) FROM orders");
      }
      MessageIdTakenException e =
          assertThrows(MessageIdTakenException.class, () -> us.enqueue(c, placed("o-9")));
      assertEquals(1, releases.get(), "no release after a failure with nothing to go back to");
      SQLException failure = (SQLException) e.getSuppressed()[0];
      assertEquals("22012", failure.getSQLState(), "the release's own failure, not its rollback's");
      assertEquals(
          "3B001",
          ((SQLException) failure.getSuppressed()[0]).getSQLState(),
          "then the rollback's");
      assertEquals(AutoSave.NEVER, real.unwrap(PGConnection.class).getAutosave());
      assertAbortedForGood(c);
    }
    assertEquals(0, db.count("SELECT count(*) FROM orders"), "the business change rolled back");
  }

  /**
   * {@code real}, whose round trip number {@code failing} of savepoint releases runs {@code
   * instead}, which fails.
   */
  private static Connection releaseFails(
      Connection real,
      java.util.concurrent.atomic.AtomicInteger releases,
      int failing,
      String instead) {
    return (Connection)
        java.lang.reflect.Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              Object result = invoke(real, method, args);
              if (!method.getName().equals("createStatement") || args != null) {
                return result;
              }
              Statement statement = (Statement) result;
              return java.lang.reflect.Proxy.newProxyInstance(
                  Statement.class.getClassLoader(),
                  new Class<?>[] {Statement.class},
                  (p, m, a) -> {
                    if (m.getName().equals("execute")
                        && a != null
                        && a.length == 1
                        && a[0] instanceof String sql
                        && sql.startsWith("SAVEPOINT outbox_relay_writer_release; RELEASE")
                        && releases.incrementAndGet() == failing) {
                      return statement.execute(instead);
                    }
                    return invoke(statement, m, a);
                  });
            });
  }

  private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args)
      throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /**
   * An id both this key's row and another key's published-log entry hold (left by two keys' writers
   * racing on one id) is this key's message: DUPLICATE, not "taken", which tells the caller to send
   * it again under another id, twice in Kafka.
   */
  @Test
  void anIdThisKeyHoldsIsADuplicateThoughAnotherKeyHoldsItToo() throws SQLException {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, placed("o-1")));
      c.commit();
    }
    db.exec(
        "INSERT INTO outbox_published (seq, message_id, instance_key, attempts, abandoned_claims,"
            + " lease_token, published_at, kafka_topic, kafka_partition, kafka_offset)"
            + " VALUES (999999, 'o-1:placed', 'orders-us', 1, 0, 1, now(), 'outbox.order', 0, 1)");

    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.DUPLICATE, writer.enqueue(c, placed("o-1")));
      c.commit();
    }
    assertEquals(1, db.count("SELECT count(*) FROM outbox"));
  }

  /**
   * Message o-9 enqueued and committed under orders-eu, and a table of orders; returns a writer of
   * orders-us, whose enqueue of o-9 is refused (MessageIdTakenException).
   */
  private PostgresOutboxWriter o9TakenByAnotherKey() throws SQLException {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, placed("o-9")));
      c.commit();
    }
    db.exec("CREATE TABLE orders (id text PRIMARY KEY)");
    return new PostgresOutboxWriter("outbox", "orders-us");
  }

  static List<Arguments> autosaveSettings() {
    List<Arguments> settings = new ArrayList<>();
    for (AutoSave autosave : AutoSave.values()) {
      settings.add(Arguments.of(autosave, false));
    }
    settings.add(Arguments.of(AutoSave.ALWAYS, true));
    return settings;
  }

  /** A connection of pgjdbc's with these settings. */
  private Connection connection(AutoSave autosave, boolean cleanupSavepoints) throws SQLException {
    PGSimpleDataSource source = new PGSimpleDataSource();
    source.setUrl(db.url());
    source.setUser("postgres");
    source.setAutosave(autosave);
    source.setCleanupSavepoints(cleanupSavepoints);
    return source.getConnection();
  }

  private static void run(Connection c, String sql) throws SQLException {
    try (var s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /**
   * The application's next statement fails as the aborted transaction's (a statement that fails on
   * its own would prove nothing), and so does the one after it (pgjdbc's autosave=always would roll
   * back to a savepoint of its own after the first failure); a commit returns normally (pgjdbc
   * reports no silent rollback: the docs say so) and keeps nothing.
   */
  private static void assertAbortedForGood(Connection c) {
    SQLException next = assertThrows(SQLException.class, () -> run(c, "SELECT 1"));
    assertEquals("25P02", next.getSQLState(), next::toString); // in_failed_sql_transaction
    SQLException later = assertThrows(SQLException.class, () -> run(c, "SELECT 1"));
    assertEquals("25P02", later.getSQLState(), later::toString);
    assertDoesNotThrow(c::commit, "pgjdbc reports no silent rollback: the docs say so");
  }

  /**
   * Two applications sharing a table under their own instance keys, with ids of the same shape
   * (derived from business keys): the second is no retry of the first, and a DUPLICATE would
   * silently lose its message. Same with the first already published, and with a legacy row.
   */
  @Test
  void aMessageIdOfAnotherInstanceKeyIsRefusedNotCalledADuplicate() throws SQLException {
    PostgresOutboxWriter us = new PostgresOutboxWriter("outbox", "orders-us");
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, placed("o-1")));
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, placed("o-2")));
      c.commit();
    }
    publish("o-2:placed");
    db.exec(
        "ALTER TABLE outbox DROP CONSTRAINT outbox_instance_key_required;"
            + " INSERT INTO outbox (message_id, aggregate_type, aggregate_id, event_type)"
            + " VALUES ('o-3:placed', 'order', 'o-3', 'Legacy')");

    for (String orderId : List.of("o-1", "o-2", "o-3")) {
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        MessageIdTakenException e =
            assertThrows(MessageIdTakenException.class, () -> us.enqueue(c, placed(orderId)));
        c.rollback();
        assertEquals("23000", e.getSQLState());
        assertEquals(orderId + ":placed", e.messageId());
        assertFalse(e.getMessage().contains("orders-eu"), "another key's name is not told");
      }
    }
    assertEquals(0, db.count("SELECT count(*) FROM outbox WHERE instance_key = 'orders-us'"));
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.DUPLICATE, writer.enqueue(c, placed("o-1")), "its own retry");
      assertEquals(EnqueueResult.DUPLICATE, writer.enqueue(c, placed("o-2")), "published");
      c.commit();
    }
  }

  @Test
  void aMessageIdAlreadyInThePublishedLogIsADuplicateAndChangesNothing() throws SQLException {
    // What publishing leaves (schema version 9): the row is gone from the outbox, its entry is in
    // the published log.
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, placed("o-1")));
      c.commit();
    }
    publish("o-1:placed");
    assertEquals(0, db.count("SELECT count(*) FROM outbox"));

    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.DUPLICATE, writer.enqueue(c, placed("o-1")));
      c.commit();
    }
    assertEquals(0, db.count("SELECT count(*) FROM outbox"));
    assertEquals(1, db.count("SELECT count(*) FROM outbox_published"));

    // Once retention deleted the entry, the message id is new again.
    db.exec("DELETE FROM outbox_published");
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, placed("o-1")));
      c.commit();
    }
    assertEquals(1, db.count("SELECT count(*) FROM outbox"));
  }

  @Test
  void theApplicationsRoleNeedsSelectOnThePublishedLogToo() throws SQLException {
    // INSERT, and SELECT on the column that ON CONFLICT (message_id) infers its arbiter index from
    // and on instance_key, which tells a retry from another instance key's id: what the insert
    // needed before schema version 9, but for instance_key.
    String role = "writer_app_" + System.nanoTime();
    db.exec(
        "CREATE ROLE "
            + role
            + "; GRANT INSERT, SELECT (message_id, instance_key) ON outbox TO "
            + role);
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      c.createStatement().execute("SET ROLE " + role);
      SQLException e = assertThrows(SQLException.class, () -> writer.enqueue(c, placed("o-1")));
      assertEquals("42501", e.getSQLState(), e::toString); // insufficient_privilege: the log
    }
    db.exec("GRANT SELECT ON outbox_published TO " + role);
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      c.createStatement().execute("SET ROLE " + role);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, placed("o-1")));
      assertEquals(EnqueueResult.DUPLICATE, writer.enqueue(c, placed("o-1")));
      c.commit();
    }
  }

  @Test
  void theDuplicateCheckReadsTheLogsMessageIdIndex() {
    db.exec(
        "INSERT INTO outbox_published (seq, message_id, instance_key, attempts, abandoned_claims,"
            + " lease_token, published_at)"
            + " SELECT i, 'm-' || i, 'orders-eu', 1, 0, 1, now() FROM generate_series(1, 20000) i;"
            + " ANALYZE outbox_published");
    String plan =
        db
            .rows(
                "EXPLAIN "
                    + new OutboxInsert(OutboxTableName.parse("outbox"))
                        .sql()
                        .replace("?", "NULL")
                        .replaceFirst("CAST\\(NULL AS text\\)", "CAST('m-7' AS text)"))
            .stream()
            .map(row -> row.values().iterator().next())
            .reduce("", (a, b) -> a + b + "\n");
    assertTrue(plan.contains("outbox_published_id_hash"), plan);
  }

  @Test
  void everyParameterHasATypeWhenTheDriverSendsStringsUntyped() throws SQLException {
    // pgjdbc's stringtype=unspecified (common where applications bind UUIDs or JSON as strings)
    // sends string parameters without a type: in a SELECT list only the casts give them one.
    PGSimpleDataSource untyped = new PGSimpleDataSource();
    untyped.setUrl(db.url());
    untyped.setUser("postgres");
    untyped.setStringType("unspecified");
    OutboxMessage message =
        OutboxMessage.builder()
            .messageId("o-9:placed")
            .aggregateType("order")
            .aggregateId("o-9")
            .eventType("OrderPlaced")
            .topic("orders")
            .jsonPayload(Map.of("id", "o-9"))
            .header("tenant", "acme")
            .correlationId("checkout-9")
            .deliverBefore(Instant.parse("2030-01-02T03:04:05Z"))
            .build();
    try (Connection c = untyped.getConnection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, message));
      assertEquals(EnqueueResult.DUPLICATE, writer.enqueue(c, message));
      c.commit();
    }
    assertEquals(
        List.of(Map.of("message_id", "o-9:placed", "tenant", "acme", "topic", "orders")),
        db.rows("SELECT message_id, headers ->> 'tenant' AS tenant, topic FROM outbox"));
  }

  /**
   * A writer of app.outbox writes app.outbox and reads app's published log, whatever the
   * connection's search path: here it points at a schema of its own with a table outbox and a log
   * outbox_published, so a statement that named either unqualified would use the wrong one (a row
   * in the decoy, a message id taken for a duplicate or a new one by the decoy's log).
   */
  @Test
  void aSchemaQualifiedTableIsWrittenWhereverTheSearchPathPoints() throws SQLException {
    TestDatabase other = TestDatabase.empty("writer_schema");
    other.exec("CREATE SCHEMA app; SET search_path TO app; " + TestDatabase.schemaSql());
    other.exec("CREATE SCHEMA decoy; SET search_path TO decoy; " + TestDatabase.schemaSql());
    // In the table's log: a retry. In the decoy's: nothing to the writer of app.outbox.
    other.exec(
        "INSERT INTO app.outbox_published (seq, message_id, instance_key, attempts,"
            + " abandoned_claims, lease_token, published_at)"
            + " VALUES (1, 'o-2:placed', 'orders-eu', 1, 0, 1, now());"
            + " INSERT INTO decoy.outbox_published (seq, message_id, instance_key, attempts,"
            + " abandoned_claims, lease_token, published_at)"
            + " VALUES (1, 'o-3:placed', 'orders-eu', 1, 0, 1, now())");
    PostgresOutboxWriter appWriter = new PostgresOutboxWriter("app.outbox", "orders-eu");
    try (Connection c = other.connection()) {
      run(c, "SET search_path TO decoy"); // the writer's own session
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, appWriter.enqueue(c, placed("o-1")));
      assertEquals(EnqueueResult.DUPLICATE, appWriter.enqueue(c, placed("o-2")));
      assertEquals(EnqueueResult.ENQUEUED, appWriter.enqueue(c, placed("o-3")));
      assertEquals(EnqueueResult.DUPLICATE, appWriter.enqueue(c, placed("o-1")));
      c.commit();
    }
    assertEquals(
        List.of(Map.of("message_id", "o-1:placed"), Map.of("message_id", "o-3:placed")),
        other.rows("SELECT message_id FROM app.outbox ORDER BY seq"));
    assertEquals(0, other.count("SELECT count(*) FROM decoy.outbox"));
  }

  /**
   * The index on (instance_key, aggregate_id, seq) refuses an entry over about 2,700 bytes: the
   * longest aggregate id build() accepts fits it with the longest instance key, and a much longer
   * one fails the insert (SQLState 54000), which is why build() refuses it. Random characters, so
   * that PostgreSQL cannot compress the index entry below the limit.
   */
  @Test
  void theLongestAggregateIdFitsTheIndexWithTheLongestInstanceKey() throws SQLException {
    Random random = new Random(42);
    StringBuilder key = new StringBuilder(); // 200 characters of 3 bytes each
    while (key.length() < InstanceKeys.MAX_LENGTH) {
      key.append((char) (0x4e00 + random.nextInt(0x5000)));
    }
    StringBuilder aggregateId = new StringBuilder(); // 256 characters of 4 bytes each
    while (aggregateId.length() < 512) {
      aggregateId.appendCodePoint(0x20000 + random.nextInt(0xa000));
    }
    assertEquals(
        OutboxMessage.MAX_AGGREGATE_ID_BYTES,
        aggregateId.toString().getBytes(StandardCharsets.UTF_8).length);
    PostgresOutboxWriter longestKey = new PostgresOutboxWriter("outbox", key.toString());
    OutboxMessage longest =
        OutboxMessage.builder()
            .aggregateType("order")
            .aggregateId(aggregateId.toString())
            .eventType("OrderPlaced")
            .build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, longestKey.enqueue(c, longest));
      c.commit();
    }
    assertEquals(
        List.of(Map.of("bytes", "1024")),
        db.rows("SELECT octet_length(aggregate_id) AS bytes FROM outbox"));

    while (aggregateId.length() < 1500) { // 3,000 bytes
      aggregateId.appendCodePoint(0x20000 + random.nextInt(0xa000));
    }
    try (Connection c = db.connection();
        PreparedStatement insert =
            c.prepareStatement(
                "INSERT INTO outbox (instance_key, aggregate_type, aggregate_id, event_type)"
                    + " VALUES ('orders-eu', 'order', ?, 'OrderPlaced')")) {
      insert.setString(1, aggregateId.toString());
      SQLException e = assertThrows(SQLException.class, insert::executeUpdate);
      assertEquals("54000", e.getSQLState(), e::toString); // program_limit_exceeded
    }
  }

  /**
   * The headers column is jsonb, which keeps an object's keys in an order of its own: the relay
   * reads them, and sets them on the Kafka record, in that order, not in the order of the header()
   * calls.
   */
  @Test
  void theHeadersColumnDoesNotKeepTheOrderOfTheHeaderCalls() throws SQLException {
    OutboxMessage message =
        OutboxMessage.builder()
            .aggregateType("order")
            .aggregateId("o-1")
            .eventType("OrderPlaced")
            .header("tenant", "acme")
            .traceparent(TRACEPARENT)
            .header("a", "1")
            .build();
    assertEquals(List.of("tenant", "traceparent", "a"), List.copyOf(message.headers().keySet()));
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      writer.enqueue(c, message);
      c.commit();
    }
    assertEquals(
        List.of(
            Map.of(
                "headers",
                "{\"a\": \"1\", \"tenant\": \"acme\", \"traceparent\": \"" + TRACEPARENT + "\"}")),
        db.rows("SELECT headers FROM outbox"));
  }

  @Test
  void theDatabaseErrorReachesTheCallerAsItIs() throws SQLException {
    PostgresOutboxWriter missing = new PostgresOutboxWriter("no_such_outbox", "orders-eu");
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      SQLException e = assertThrows(SQLException.class, () -> missing.enqueue(c, placed("o-1")));
      assertEquals("42P01", e.getSQLState(), e::toString); // undefined_table
    }
  }

  /**
   * Moves a row into the published log as the relay's acknowledgement does (schema version 9): one
   * statement deletes it from the outbox and inserts its entry.
   */
  private void publish(String messageId) {
    db.exec(
        "WITH moved AS (DELETE FROM outbox WHERE message_id = '"
            + messageId
            + "' RETURNING seq, message_id, instance_key, aggregate_type, aggregate_id,"
            + " event_type, correlation_id, created_at, attempts, abandoned_claims, lease_token)"
            + " INSERT INTO outbox_published (seq, message_id, instance_key, aggregate_type,"
            + " aggregate_id, event_type, correlation_id, created_at, attempts, abandoned_claims,"
            + " lease_token, published_at, kafka_topic, kafka_partition, kafka_offset)"
            + " SELECT seq, message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " correlation_id, created_at, attempts + 1, abandoned_claims, lease_token, now(),"
            + " 'outbox.order', 0, 41 FROM moved");
  }

  private static OutboxMessage placed(String orderId) {
    return OutboxMessage.builder()
        .messageId(orderId + ":placed")
        .aggregateType("order")
        .aggregateId(orderId)
        .eventType("OrderPlaced")
        .payload(("{\"id\":\"" + orderId + "\"}").getBytes(StandardCharsets.UTF_8))
        .build();
  }
}
