package dev.outboxrelay.store.postgres;

import static java.time.ZoneOffset.UTC;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.DeadLetterCopy;
import dev.outboxrelay.store.EndedLeases;
import dev.outboxrelay.store.HeldLease;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.ManualClock;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreContract;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.ParkRequest;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.Recoveries;
import dev.outboxrelay.store.Recovery;
import dev.outboxrelay.store.RecoveryPage;
import dev.outboxrelay.store.RecoveryRequest;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.Renewal;
import dev.outboxrelay.store.memory.InMemoryOutboxStore.RowState;
import dev.outboxrelay.testing.Postgres;
import dev.outboxrelay.writer.EnqueueResult;
import dev.outboxrelay.writer.MessageIdTakenException;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The store contract against a real PostgreSQL: one database for the class, truncated per test. */
class PostgresOutboxStoreTest extends OutboxStoreContract {
  static final OutboxTable TABLE = OutboxTable.parse("outbox");
  static String url;
  static HikariDataSource dataSource;
  private PostgresOutboxWriter euWriter;

  @BeforeAll
  static void database() {
    url = Postgres.freshDatabase("store");
    dataSource = Postgres.pool(url, 8);
    new SchemaMigrator(dataSource, TABLE).migrate();
  }

  @AfterAll
  static void closePool() {
    dataSource.close();
  }

  @BeforeEach
  void emptyTable() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("TRUNCATE outbox, outbox_published RESTART IDENTITY");
    }
  }

  @Override
  protected OutboxStore newStore(ManualClock clock) {
    return new PostgresOutboxStore(dataSource, TABLE, clock, null);
  }

  @Override
  protected EnqueueResult enqueue(String instanceKey, OutboxMessage message) {
    PostgresOutboxWriter writer = new PostgresOutboxWriter(TABLE.tableName(), instanceKey);
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      EnqueueResult result = writer.enqueue(c, message);
      c.commit();
      return result;
    } catch (MessageIdTakenException e) {
      throw new MessageIdTaken(e);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  protected void insertLegacy(OutboxMessage message) {
    // Legacy rows predate V2's ownership check; replica mode skips triggers and NOT VALID checks
    // are still enforced, so drop to a raw insert with the check briefly bypassed.
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("ALTER TABLE outbox DROP CONSTRAINT outbox_instance_key_required");
      }
      try (PreparedStatement ps =
          c.prepareStatement(
              "INSERT INTO outbox (message_id, aggregate_type, aggregate_id, event_type, payload)"
                  + " VALUES (?, ?, ?, ?, ?)")) {
        ps.setString(1, message.messageId());
        ps.setString(2, message.aggregateType());
        ps.setString(3, message.aggregateId());
        ps.setString(4, message.eventType());
        ps.setBytes(5, message.payload());
        ps.executeUpdate();
      }
      try (Statement s = c.createStatement()) {
        s.execute(
            "ALTER TABLE outbox ADD CONSTRAINT outbox_instance_key_required"
                + " CHECK (instance_key IS NOT NULL) NOT VALID");
      }
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * A recovery page reads its rows before it locks them: a row that changes hands meanwhile (here a
   * successor of a later epoch takes it, committing while the page waits on the row's lock) is
   * checked again once locked and left to its new holder, not released from under it (which would
   * fence off the successor's publish and send the row twice).
   */
  @Test
  void aRecoveryPageChecksEachRowAgainOnceItHoldsItsLock() throws Exception {
    String a = add(EU, "a", "agg-1");
    long old = store.newEpoch();
    store.claim(exactlyOnce("old", 1, old, 1, ALL_BUCKETS));
    clock.advance(Duration.ofMinutes(5)); // the old instance's lease ran out
    long mine = store.newEpoch();
    long successor = store.newEpoch();
    // At the start (a sweep waits a second at most: below).
    RecoveryRequest sweep = new RecoveryRequest(Set.of(EU), ALL_BUCKETS, mine, List.of(), false);
    RecoveryPage page;
    try (Connection holder = dataSource.getConnection();
        PreparedStatement take =
            holder.prepareStatement(
                "UPDATE outbox SET lease_owner = 'successor', lease_epoch = ?,"
                    + " lease_token = lease_token + 1, lease_expires_at = ? WHERE message_id = ?")) {
      holder.setAutoCommit(false);
      take.setLong(1, successor);
      take.setObject(2, OffsetDateTime.ofInstant(clock.now().plus(Duration.ofHours(1)), UTC));
      take.setString(3, a);
      assertEquals(1, take.executeUpdate());
      CompletableFuture<RecoveryPage> pending =
          CompletableFuture.supplyAsync(() -> store.recover(sweep, EU, Long.MIN_VALUE, 10));
      await().atMost(Duration.ofSeconds(10)).until(() -> lockWaiters() == 1);
      holder.commit();
      page = pending.get(10, TimeUnit.SECONDS);
    }
    assertTrue(page.settled().isEmpty(), "read as it was, left as it is: " + page);
    assertEquals(MessageStatus.IN_FLIGHT, state(a).status());
    assertEquals("successor", state(a).leaseOwner());
  }

  /**
   * A sweep page waits a second at most for a row another session holds locked (an operator's open
   * transaction): a sweep runs ahead of a claim, and every claim waited out the statement timeout
   * first while the lock lasted. The page fails with 55P03, rolled back: the row stays as it was.
   */
  @Test
  void aSweepPageWaitsASecondAtMostForALockedRow() throws Exception {
    String a = add(EU, "a", "agg-1");
    long old = store.newEpoch();
    store.claim(exactlyOnce("old", 1, old, 1, ALL_BUCKETS));
    clock.advance(Duration.ofMinutes(5)); // the old instance's lease ran out
    long mine = store.newEpoch();
    RecoveryRequest sweep = new RecoveryRequest(Set.of(EU), ALL_BUCKETS, mine, List.of(), true);
    OutboxStoreException failed;
    try (Connection holder = dataSource.getConnection();
        Statement lock = holder.createStatement()) {
      holder.setAutoCommit(false);
      lock.execute("SELECT 1 FROM outbox WHERE message_id = '" + a + "' FOR UPDATE");
      failed =
          CompletableFuture.supplyAsync(
                  () ->
                      assertThrows(
                          OutboxStoreException.class,
                          () -> store.recover(sweep, EU, Long.MIN_VALUE, 10)))
              .get(60, TimeUnit.SECONDS); // a hang guard: the test store's timeout is longer
      holder.rollback();
    }
    assertTrue(failed.isLockWait(), failed::toString);
    assertEquals(MessageStatus.IN_FLIGHT, state(a).status());
    assertEquals("old", state(a).leaseOwner());
  }

  /**
   * Exactly once, a park and the record of a dead-letter position wait a second at most for a row
   * another session holds locked (an operator's open transaction), as every other outcome write
   * does: they waited out the statement timeout, the park holding the task's poll (and Connect's
   * stop) that long at every poll while the lock lasted. Each fails with 55P03, rolled back.
   */
  @Test
  void aParkAndADeadLetterPositionWaitASecondAtMostForALockedRow() throws Exception {
    add(EU, "a", "agg-1");
    add(EU, "b", "agg-2");
    long epoch = store.newEpoch();
    List<ClaimedMessage> claimed =
        store.claim(exactlyOnce("w1", 2, epoch, 1, ALL_BUCKETS)).claimed();
    ClaimedMessage a = claimed.stream().filter(m -> m.messageId().equals("a")).findFirst().get();
    ClaimedMessage b = claimed.stream().filter(m -> m.messageId().equals("b")).findFirst().get();
    assertEquals(
        List.of(Outcome.APPLIED),
        store.park(List.of(new ParkRequest("b", b.seq(), b.lease(), "POISON", epoch, 1))));
    try (Connection holder = dataSource.getConnection();
        Statement lock = holder.createStatement()) {
      holder.setAutoCommit(false);
      lock.execute("SELECT 1 FROM outbox WHERE message_id IN ('a', 'b') FOR UPDATE");
      OutboxStoreException park =
          CompletableFuture.supplyAsync(
                  () ->
                      assertThrows(
                          OutboxStoreException.class,
                          () ->
                              store.park(
                                  List.of(
                                      new ParkRequest(
                                          "a", a.seq(), a.lease(), "POISON", epoch, 1)))))
              .get(60, TimeUnit.SECONDS); // a hang guard: the test store has no statement timeout
      assertTrue(park.isLockWait(), park::toString);
      OutboxStoreException position =
          CompletableFuture.supplyAsync(
                  () ->
                      assertThrows(
                          OutboxStoreException.class,
                          () ->
                              store.recordDeadLetterCopies(
                                  List.of(
                                      new DeadLetterCopy(
                                          "b",
                                          b.seq(),
                                          b.lease().token(),
                                          epoch,
                                          1,
                                          new KafkaCoordinates("dlq", 0, 17))))))
              .get(60, TimeUnit.SECONDS);
      assertTrue(position.isLockWait(), position::toString);
      holder.rollback();
    }
    assertEquals(MessageStatus.IN_FLIGHT, state("a").status(), "not parked");
    assertNull(state("b").kafka(), "no position recorded");
  }

  /**
   * A renewal does not wait for a row another session holds locked (an operator's open
   * transaction): waiting, it ran into the statement timeout and every lease of the task expired.
   * The other leases are renewed; the locked row is reported locked, not lost, its lease left as it
   * was, and renewed by the next renewal once the lock is gone.
   */
  @Test
  void aRenewalSkipsARowAnotherSessionHoldsLocked() throws Exception {
    add(EU, "m1", "a");
    add(EU, "m2", "b");
    List<HeldLease> held =
        store.claim(request("w1", 2)).claimed().stream().map(ClaimedMessage::heldLease).toList();
    assertEquals(2, held.size());
    var claimedUntil = state("m2").leaseExpiresAt();
    clock.advance(Duration.ofSeconds(10));
    Renewal renewal;
    try (Connection holder = dataSource.getConnection();
        Statement lock = holder.createStatement()) {
      holder.setAutoCommit(false);
      lock.execute("SELECT 1 FROM outbox WHERE message_id = 'm2' FOR UPDATE");
      renewal =
          CompletableFuture.supplyAsync(() -> store.renew(held, LEASE)).get(30, TimeUnit.SECONDS);
      holder.rollback();
    }
    assertEquals(new Renewal(Set.of(), Set.of("m2")), renewal);
    assertEquals(clock.now().plus(LEASE), state("m1").leaseExpiresAt());
    assertEquals(claimedUntil, state("m2").leaseExpiresAt(), "skipped, left as it was");

    assertEquals(Renewal.allRenewed(), store.renew(held, LEASE));
    assertEquals(clock.now().plus(LEASE), state("m2").leaseExpiresAt());
  }

  /**
   * An aggregate's first row that another session holds locked (an operator's open transaction)
   * holds back that aggregate's later rows, not the claim: rows of other aggregates after them are
   * claimed, by a claim of that key and by one of several keys. The later rows took the claim's
   * places and were then dropped for the row in front of them, so with a batch of them behind the
   * locked row every ordered claim came back empty for as long as the lock lasted, for every key
   * claimed with that one. Once the lock is gone the aggregate goes on in order.
   */
  @Test
  void aLockedFirstRowHoldsBackItsAggregateNotTheClaim() throws Exception {
    add(EU, "d", "g");
    for (int i = 1; i <= 4; i++) {
      add(EU, "r" + i, "g");
    }
    add(EU, "h", "h");
    add(US, "u", "u");
    try (Connection holder = dataSource.getConnection();
        Statement lock = holder.createStatement()) {
      holder.setAutoCommit(false);
      lock.execute("SELECT 1 FROM outbox WHERE message_id = 'd' FOR UPDATE");
      assertEquals(
          List.of("h"),
          ids(
              CompletableFuture.supplyAsync(() -> store.claim(request("w1", 3)))
                  .get(30, TimeUnit.SECONDS)));
      assertEquals(
          List.of("u"),
          ids(
              CompletableFuture.supplyAsync(() -> store.claim(request("w2", 3, Set.of(EU, US))))
                  .get(30, TimeUnit.SECONDS)));
      holder.rollback();
    }
    assertEquals(List.of("d", "r1", "r2"), ids(store.claim(request("w3", 3))));
  }

  /**
   * An aggregate's first row that another task claims after an ordered claim's snapshot was taken
   * (due in it) holds back that aggregate's later rows, not the claim. The probe of the first row
   * locked its new version and found it free, so the later row took the claim's only place, was
   * dropped for the row in front of it, and the claim came back empty. Here the claim's snapshot is
   * taken while it waits for its owner's claim lock, which the test holds.
   */
  @Test
  void aHeadClaimedSinceTheSnapshotHoldsBackItsAggregateNotTheClaim() throws Exception {
    add(EU, "s1", "a");
    add(EU, "s2", "a");
    add(EU, "s3", "b");
    ClaimResult z =
        claimHeldAtItsLock(
            store, s -> assertEquals(List.of("s1"), ids(store.claim(request("y", 1)))));
    assertEquals(List.of("s3"), ids(z));
  }

  /**
   * A claimed row's lease runs from when the claim writes the row, not from the claim statement's
   * start: a claim that took seconds (here it waits for its owner's claim lock, which the test
   * holds) granted leases already that much shorter, left out of the bound lease.duration.ms
   * documents.
   */
  @Test
  void aClaimsLeaseRunsFromWhenItWritesTheRowNotFromTheStatementsStart() throws Exception {
    add(EU, "m1", "a");
    PostgresOutboxStore live =
        new PostgresOutboxStore(dataSource, TABLE, RelayClock.database(), null);
    Instant[] released = new Instant[1];
    ClaimResult z =
        claimHeldAtItsLock(live, s -> released[0] = timestamp(s, "SELECT clock_timestamp()"));
    assertEquals(List.of("m1"), ids(z));
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      Instant leaseEnd = timestamp(s, "SELECT lease_expires_at FROM outbox");
      assertTrue(!leaseEnd.isBefore(released[0].plus(LEASE)), leaseEnd + " vs " + released[0]);
    }
  }

  /** What runs on the claim lock's session while a claim waits for that lock. */
  private interface WhileHeld {
    void run(Statement lockSession) throws SQLException;
  }

  /**
   * Owner z's claim of one row, on another thread, held at its owner's claim lock (its statement,
   * and snapshot, begun) while {@code meanwhile} runs; then let go.
   */
  private static ClaimResult claimHeldAtItsLock(OutboxStore on, WhileHeld meanwhile)
      throws Exception {
    String ownersLock = "hashtext('outbox-relay claims'), hashtext('z')";
    try (Connection barrier = dataSource.getConnection();
        Statement s = barrier.createStatement()) {
      s.execute("SELECT pg_advisory_lock(" + ownersLock + ")");
      CompletableFuture<ClaimResult> z =
          CompletableFuture.supplyAsync(() -> on.claim(request("z", 1)));
      await().until(() -> claimsWaitingForTheirLock(s) == 1);
      meanwhile.run(s);
      s.execute("SELECT pg_advisory_unlock(" + ownersLock + ")");
      return z.get(30, TimeUnit.SECONDS);
    }
  }

  private static Instant timestamp(Statement s, String query) throws SQLException {
    try (ResultSet rs = s.executeQuery(query)) {
      rs.next();
      return rs.getTimestamp(1).toInstant();
    }
  }

  private static long claimsWaitingForTheirLock(Statement s) throws SQLException {
    try (ResultSet rs =
        s.executeQuery(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * With a statement timeout of 1 s or less, the statement's timer, started first, ended a publish
   * waiting for a locked row (57014) before the 1 s lock wait could (55P03): the task did not set
   * the row aside, and every outcome waited behind it again. The lock wait is then half the
   * statement timeout.
   */
  @Test
  void aStatementTimeoutShorterThanTheLockWaitStillEndsALockWaitAsOne() throws Exception {
    String url = Postgres.freshDatabase("short_statement_timeout");
    try (HikariDataSource admin = Postgres.pool(url, 4)) {
      new SchemaMigrator(admin, TABLE).migrate();
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        s.execute("ALTER DATABASE \"" + c.getCatalog() + "\" SET statement_timeout = '500ms'");
      }
    }
    try (HikariDataSource pool = Postgres.pool(url, 3)) {
      PostgresOutboxStore shortTimeout =
          new PostgresOutboxStore(pool, TABLE, RelayClock.database(), null);
      try (Connection c = pool.getConnection()) {
        assertEquals("500ms", DataSourceFactoryTest.query(c, "SHOW statement_timeout"));
        c.setAutoCommit(false);
        PostgresOutboxWriter writer = new PostgresOutboxWriter(TABLE.tableName(), EU);
        writer.enqueue(c, message("m1", "a"));
        writer.enqueue(c, message("m2", "b"));
        c.commit();
      }
      List<ClaimedMessage> claimed = shortTimeout.claim(request("w1", 2)).claimed();
      List<PublishedAck> acks = List.of(ack(claimed.get(0), 1), ack(claimed.get(1), 2));
      try (Connection holder = pool.getConnection();
          Statement lock = holder.createStatement()) {
        holder.setAutoCommit(false);
        lock.execute("SELECT 1 FROM outbox WHERE message_id = 'm2' FOR UPDATE");
        OutboxStoreException e = publishFailing(shortTimeout, acks);
        assertEquals("55P03", e.sqlState(), "a lock wait, not a statement timeout");
        assertTrue(e.isLockWait());
        holder.rollback();
      }
    }
  }

  /** How {@code acks}' publish fails, run on another thread (the test's holds a row lock). */
  private static OutboxStoreException publishFailing(OutboxStore store, List<PublishedAck> acks) {
    ExecutionException failed =
        assertThrows(
            ExecutionException.class,
            () ->
                CompletableFuture.supplyAsync(() -> store.markPublished(acks))
                    .get(30, TimeUnit.SECONDS));
    return (OutboxStoreException) failed.getCause();
  }

  /**
   * A publish does not wait out the statement timeout for a row another session holds locked (an
   * operator's open transaction): past the outcome lock wait it fails with 55P03, having written
   * nothing; sent again skipping locked rows, it writes the others and says which row was locked,
   * apart from a lost claim. Once the lock is gone the locked row's ack applies. The pool here has
   * no statement timeout: without the lock wait, the publish waited for as long as the lock held.
   */
  @Test
  void aPublishMeetingALockedRowGivesUpAfterTheLockWaitAndTheSkippingPublishWritesTheOthers()
      throws Exception {
    add(EU, "m1", "a");
    add(EU, "m2", "b");
    add(EU, "m3", "c");
    List<ClaimedMessage> claimed = store.claim(request("w1", 3)).claimed();
    ClaimedMessage m2 = claimed.get(1);
    PublishedAck lost = new PublishedAck("m3", claimed.get(2).seq(), new Lease("w1", 99), k(9));
    List<PublishedAck> acks = List.of(ack(claimed.get(0), 1), ack(m2, 2), ack(claimed.get(2), 3));
    try (Connection holder = dataSource.getConnection();
        Statement lock = holder.createStatement()) {
      holder.setAutoCommit(false);
      lock.execute("SELECT 1 FROM outbox WHERE message_id = 'm2' FOR UPDATE");
      OutboxStoreException e = publishFailing(store, acks);
      assertEquals("55P03", e.sqlState());
      assertTrue(e.isLockWait() && e.isRetriable());
      assertEquals(MessageStatus.IN_FLIGHT, state("m1").status(), "nothing written");

      List<PublishedAck> withLost = new ArrayList<>(acks);
      withLost.add(lost);
      withLost.add(acks.get(1)); // a repeat of the locked row's ack: undecided too, not lost
      assertEquals(
          List.of(
              Outcome.APPLIED,
              Outcome.ROW_LOCKED,
              Outcome.APPLIED,
              Outcome.CLAIM_LOST,
              Outcome.ROW_LOCKED),
          CompletableFuture.supplyAsync(() -> store.markPublishedSkippingLocked(withLost))
              .get(30, TimeUnit.SECONDS));
      holder.rollback();
    }
    assertEquals(MessageStatus.PUBLISHED, state("m1").status());
    assertEquals(MessageStatus.PUBLISHED, state("m3").status());
    assertEquals(k(3), state("m3").kafka());
    assertEquals(MessageStatus.IN_FLIGHT, state("m2").status());
    assertEquals(m2.lease().token(), state("m2").leaseToken(), "skipped, left as it was");

    assertEquals(List.of(Outcome.APPLIED), store.markPublishedSkippingLocked(List.of(acks.get(1))));
    assertEquals(k(2), state("m2").kafka());
  }

  /**
   * A single outcome write (a retry, a park, a release) gives up on a row another session holds
   * locked after the outcome lock wait, with 55P03 and nothing written, rather than at the
   * statement timeout; and the end of a stopping task's leases skips the locked row and says so,
   * ending the others.
   */
  @Test
  void singleOutcomeWritesGiveUpOnALockedRowAndTheEndOfLeasesSkipsIt() throws Exception {
    add(EU, "m1", "a");
    add(EU, "m2", "b");
    List<ClaimedMessage> claimed = store.claim(request("w1", 2)).claimed();
    ClaimedMessage m1 = claimed.get(0);
    try (Connection holder = dataSource.getConnection();
        Statement lock = holder.createStatement()) {
      holder.setAutoCommit(false);
      lock.execute("SELECT 1 FROM outbox WHERE message_id = 'm1' FOR UPDATE");
      List<java.util.function.Supplier<Outcome>> writes =
          List.of(
              () -> store.retryLater("m1", m1.lease(), "SEND_FAILED", Duration.ZERO, 5),
              () -> store.markFailed("m1", m1.lease(), "POISON"),
              () -> store.release("m1", m1.lease()));
      for (var write : writes) {
        ExecutionException failed =
            assertThrows(
                ExecutionException.class,
                () -> CompletableFuture.supplyAsync(write).get(30, TimeUnit.SECONDS));
        assertTrue(((OutboxStoreException) failed.getCause()).isLockWait());
      }
      assertEquals(
          new EndedLeases(List.of("m2"), Set.of("m1")),
          CompletableFuture.supplyAsync(
                  () ->
                      store.expireLeases(claimed.stream().map(ClaimedMessage::heldLease).toList()))
              .get(30, TimeUnit.SECONDS));
      holder.rollback();
    }
    assertEquals(MessageStatus.IN_FLIGHT, state("m1").status(), "nothing written");
    assertEquals(0, state("m1").attempts());
    assertEquals(clock.now().plus(LEASE), state("m1").leaseExpiresAt(), "its lease runs on");
    assertEquals(clock.now(), state("m2").leaseExpiresAt());
    assertEquals(Outcome.APPLIED, store.release("m1", m1.lease()), "once the lock is gone");
  }

  /**
   * Exactly once, a suspect another session holds locked (an operator's open transaction, a second
   * connector on the key) fails the claim (55P03, retried) instead of being skipped: an empty claim
   * was taken for "no suspect left", and the row, no longer isolated, went out in an ordinary
   * batch, where a poison row failed that task too.
   */
  @Test
  void aSuspectAnotherSessionHoldsLockedFailsTheClaimInsteadOfBeingSkipped() throws Exception {
    String a = add(EU, "a", "agg-1");
    long first = store.newEpoch();
    store.claim(exactlyOnce("first", 10, first, 1, ALL_BUCKETS)); // its transaction aborts
    long second = store.newEpoch();
    recoverAt(second, 5);
    store.claim(exactlyOnce("second", 10, second, 1, ALL_BUCKETS)); // aborted again
    long third = store.newEpoch();
    List<Long> suspects = recoverAt(third, 5).suspects();
    assertEquals(List.of(seq(a)), suspects);

    try (Connection holder = dataSource.getConnection();
        Statement lock = holder.createStatement()) {
      holder.setAutoCommit(false);
      lock.execute("SELECT 1 FROM outbox WHERE message_id = 'a' FOR UPDATE");
      ExecutionException failed =
          assertThrows(
              ExecutionException.class,
              () ->
                  CompletableFuture.supplyAsync(
                          () -> store.claim(suspect("third", third, 1, suspects)))
                      .get(30, TimeUnit.SECONDS));
      OutboxStoreException e = (OutboxStoreException) failed.getCause();
      assertEquals("55P03", e.sqlState());
      assertTrue(e.isRetriable());
      holder.rollback();
    }
    assertEquals(List.of(a), ids(store.claim(suspect("third", third, 1, suspects))));
  }

  private static long lockWaiters() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    + " AND datname = current_database()")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Override
  protected RowState state(String messageId) {
    return rows().state(messageId);
  }

  @Override
  protected void holdElsewhere(String messageId, Lease lease, Instant expiresAt) {
    rows().holdElsewhere(messageId, lease, expiresAt);
  }

  @Override
  protected void parkElsewhere(
      String messageId, long token, long epoch, long batch, String reasonCode) {
    rows().parkElsewhere(messageId, token, epoch, batch, reasonCode);
  }

  @Override
  protected void backdate(String messageId, Instant createdAt) {
    rows().backdate(messageId, createdAt);
  }

  private ContractRows rows() {
    return new ContractRows(dataSource, "outbox", "message_id", "outbox_instance_key_required");
  }

  @Override
  protected void createWriter(String instanceKey) {
    euWriter = new PostgresOutboxWriter(TABLE.tableName(), instanceKey);
    assertEquals(instanceKey, euWriter.instanceKey());
  }

  /**
   * A row whose created_at the application set to an infinite time has no age: the lag is the
   * oldest row's with a time (the subtraction failed with 22008, class 22, and task 0 failed at
   * each start while such a row headed its key's backlog).
   */
  @Test
  void aRowCreatedAtAnInfiniteTimeIsLeftOutOfTheLag() throws SQLException {
    Instant start = clock.now();
    add(EU, "ancient", "a");
    add(EU, "future", "b");
    add(EU, "eu1", "c");
    backdate("eu1", start.minus(Duration.ofMinutes(30)));
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("UPDATE outbox SET created_at = '-infinity' WHERE message_id = 'ancient'");
      s.execute("UPDATE outbox SET created_at = 'infinity' WHERE message_id = 'future'");
    }
    assertEquals(Duration.ofMinutes(30), store.lag(Set.of(EU)));
    assertEquals(Duration.ofMinutes(30), store.inspect(Set.of(EU), false).lag());
  }

  /**
   * A batch of acks applies whole or not at all: a failure on one row (here a trigger refusing its
   * delete) publishes none of the others, so that the outcome writer's retry of the batch finds
   * them all still in flight and applies them, rather than reporting lost claims.
   */
  @Test
  void aBatchOfAcksAppliesWholeOrNotAtAll() throws SQLException {
    add(EU, "m1", "a");
    add(EU, "m2", "b");
    List<ClaimedMessage> claimed = store.claim(request("w1", 2)).claimed();
    ClaimedMessage m1 = claimed.get(0);
    ClaimedMessage m2 = claimed.get(1);
    Lease never = new Lease("w1", m1.lease().token() + 1);
    List<PublishedAck> batch =
        List.of(
            new PublishedAck("m1", m1.seq(), never, coordinates(1)),
            new PublishedAck("m1", m1.seq(), m1.lease(), coordinates(2)),
            new PublishedAck("m2", m2.seq(), m2.lease(), coordinates(3)));
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS"
              + " $$BEGIN RAISE EXCEPTION 'refused'; END$$");
      s.execute(
          "CREATE TRIGGER refuse_m1 BEFORE DELETE ON outbox FOR EACH ROW"
              + " WHEN (OLD.message_id = 'm1') EXECUTE FUNCTION refuse()");
    }
    try {
      assertThrows(OutboxStoreException.class, () -> store.markPublished(batch));
      assertEquals(MessageStatus.IN_FLIGHT, state("m2").status(), "nothing published");
    } finally {
      try (Connection c = dataSource.getConnection();
          Statement s = c.createStatement()) {
        s.execute("DROP TRIGGER refuse_m1 ON outbox");
        s.execute("DROP FUNCTION refuse()");
      }
    }
    assertEquals(
        List.of(Outcome.CLAIM_LOST, Outcome.APPLIED, Outcome.APPLIED), store.markPublished(batch));
    assertEquals(coordinates(2), state("m1").kafka());
  }

  /**
   * {@code retention.published.ms=0}: the acknowledgement's write deletes the row, fenced by its
   * lease and instance key as ever, and writes nothing into the published log; nothing is read
   * back, so a publish retried after a lost reply stays a lost claim.
   */
  @Test
  void withoutThePublishedLogAPublishOnlyDeletesTheRowFencedAsEver() throws SQLException {
    PostgresOutboxStore noLog =
        new PostgresOutboxStore(dataSource, TABLE, ColumnMapping.RELAY, clock, null, false);
    add(EU, "m1", "a");
    add(EU, "m2", "b");
    add(US, "u1", "c");
    List<ClaimedMessage> claimed = noLog.claim(request("w1", 2)).claimed();
    ClaimedMessage m1 = claimed.get(0);
    ClaimedMessage m2 = claimed.get(1);
    ClaimedMessage u1 = store.claim(request("w2", 1, Set.of(US))).claimed().get(0);
    PublishedAck ack1 = new PublishedAck("m1", m1.seq(), m1.lease(), coordinates(1));
    PublishedAck stale =
        new PublishedAck("m2", m2.seq(), new Lease("w1", m2.lease().token() + 1), coordinates(2));
    PublishedAck foreign = new PublishedAck("u1", u1.seq(), u1.lease(), coordinates(3));

    assertEquals(
        List.of(Outcome.APPLIED, Outcome.CLAIM_LOST), noLog.markPublished(List.of(ack1, stale)));
    assertEquals(null, state("m1"), "gone from the table, and not in the log");
    assertEquals(MessageStatus.IN_FLIGHT, state("m2").status(), "a stale token changes nothing");
    assertEquals(List.of(Outcome.CLAIM_LOST), noLog.markPublished(List.of(ack1)), "once only");
    assertEquals(Set.of(), noLog.publishedUnderOwnLease(List.of(ack1)), "nothing to read back");
    assertEquals(0, publishedLogEntries(), "no entry in the published log");
    assertEquals(
        List.of(Outcome.CLAIM_LOST),
        noLog.markPublished(List.of(foreign)),
        "another key's row, under its own holder's lease: fenced off by the instance key");
    assertEquals(MessageStatus.IN_FLIGHT, state("u1").status(), "another key's row untouched");
    assertEquals(List.of(Outcome.APPLIED), store.markPublished(List.of(foreign)));
    assertEquals(coordinates(3), state("u1").kafka(), "a connector that keeps the log logs it");
  }

  private static long publishedLogEntries() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM outbox_published")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Without the published log, an exactly-once recovery deletes a covered row and logs nothing. */
  @Test
  void withoutThePublishedLogARecoveredRowIsOnlyDeleted() throws SQLException {
    PostgresOutboxStore noLog =
        new PostgresOutboxStore(dataSource, TABLE, ColumnMapping.RELAY, clock, null, false);
    String a = add(EU, "a", "agg-1");
    String b = add(EU, "b", "agg-1");
    long old = noLog.newEpoch();
    ClaimedMessage first =
        noLog.claim(exactlyOnce("old", 10, old, 1, ALL_BUCKETS)).claimed().get(0);

    Recovery recovery =
        Recoveries.whole(
            noLog,
            new RecoveryRequest(
                Set.of(EU),
                ALL_BUCKETS,
                noLog.newEpoch(),
                List.of(committedAt(first, old, 1)),
                false));

    assertEquals(List.of(a), recovery.published());
    assertEquals(List.of(b), recovery.released());
    assertEquals(null, state(a), "gone from the table, and not in the log");
    assertEquals(MessageStatus.PENDING, state(b).status());
    assertEquals(0, publishedLogEntries(), "no entry in the published log");
  }

  /**
   * A claim, a renewal and a publish each run under their planner settings (OutboxSql.CLAIM_PLAN,
   * ACKS_PLAN), sent with the statement; the settings end with the statement's transaction, so the
   * pooled connection goes back as it was. A trigger records the settings each row change saw; the
   * pool has one connection, so every call uses the one checked afterwards. Each runs more often
   * than the driver's prepareThreshold (5), with the database's clock as in production (its
   * parameter is bound untyped), and in the driver's simple query mode too: in autocommit, either
   * made the driver end the settings' transaction before the statement ran.
   */
  @ParameterizedTest(name = "url parameters \"{0}\"")
  @ValueSource(strings = {"", "?preferQueryMode=simple"})
  void plannerSettingsHoldForTheirStatementOnly(String urlParameters) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE seen (op text, settings text)");
      s.execute(
          "CREATE FUNCTION record_settings() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN"
              + " INSERT INTO seen VALUES (TG_OP, current_setting('enable_sort') || ','"
              + " || current_setting('enable_bitmapscan') || ','"
              + " || current_setting('enable_nestloop'));"
              + " RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END; END$$");
      s.execute(
          "CREATE TRIGGER record_settings BEFORE UPDATE OR DELETE ON outbox"
              + " FOR EACH ROW EXECUTE FUNCTION record_settings()");
    }
    int rounds = 7;
    try (HikariDataSource one = Postgres.pool(url + urlParameters, 1)) {
      PostgresOutboxStore single = new PostgresOutboxStore(one, TABLE, RelayClock.database(), null);
      List<String> expected = new ArrayList<>();
      for (int round = 0; round < rounds; round++) {
        String id = add(EU, "m" + round, "a" + round);
        ClaimedMessage m = single.claim(request("w1", 1)).claimed().get(0);
        assertEquals(id, m.messageId());
        assertEquals(
            Renewal.allRenewed(),
            single.renew(List.of(new HeldLease(id, m.seq(), m.lease())), LEASE));
        assertEquals(
            List.of(Outcome.APPLIED),
            single.markPublished(
                List.of(new PublishedAck(id, m.seq(), m.lease(), coordinates(round)))));
        expected.addAll(List.of("UPDATE off,off,on", "UPDATE on,on,off", "DELETE on,on,off"));
      }
      assertEquals(expected, seen(one));
      assertEquals("on,on,on", settings(one), "the pooled connection's own settings");
    } finally {
      try (Connection c = dataSource.getConnection();
          Statement s = c.createStatement()) {
        s.execute("DROP TRIGGER record_settings ON outbox");
        s.execute("DROP FUNCTION record_settings()");
        s.execute("DROP TABLE seen");
      }
    }
  }

  /**
   * A claim, a renewal and a publish cost two round trips each: the BEGIN, their planner settings
   * and the statement in one, the COMMIT in the other. Counted as the driver's Syncs once each is
   * server-prepared on the connection (from its fifth run), with the database's clock as in
   * production: a parameter the driver cannot type made it describe the statement and then send a
   * Sync between the settings and the statement, a third round trip.
   */
  @Test
  void aPlannedStatementCostsTwoRoundTrips() {
    try (HikariDataSource one = Postgres.pool(url, 1);
        DriverSyncs syncs = new DriverSyncs()) {
      PostgresOutboxStore single = new PostgresOutboxStore(one, TABLE, RelayClock.database(), null);
      for (int round = 0; round < 8; round++) {
        String id = add(EU, "m" + round, "a" + round);
        long offset = round;
        List<ClaimedMessage> claimed = new ArrayList<>();
        int claim = syncs.during(() -> claimed.addAll(single.claim(request("w1", 1)).claimed()));
        ClaimedMessage m = claimed.get(0);
        int renew =
            syncs.during(() -> single.renew(List.of(new HeldLease(id, m.seq(), m.lease())), LEASE));
        int publish =
            syncs.during(
                () ->
                    single.markPublished(
                        List.of(new PublishedAck(id, m.seq(), m.lease(), coordinates(offset)))));
        if (round >= 5) {
          assertEquals(List.of(2, 2, 2), List.of(claim, renew, publish), "round " + round);
        }
      }
    }
  }

  private static List<String> seen(HikariDataSource one) throws SQLException {
    List<String> seen = new ArrayList<>();
    try (Connection c = one.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT op || ' ' || settings FROM seen ORDER BY ctid")) {
      while (rs.next()) {
        seen.add(rs.getString(1));
      }
    }
    return seen;
  }

  private static String settings(HikariDataSource one) throws SQLException {
    try (Connection c = one.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT current_setting('enable_sort') || ',' || current_setting('enable_bitmapscan')"
                    + " || ',' || current_setting('enable_nestloop')")) {
      rs.next();
      return rs.getString(1);
    }
  }

  private static KafkaCoordinates coordinates(long offset) {
    return new KafkaCoordinates("t", 0, offset);
  }
}
