package dev.outboxrelay.store.postgres;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.HeldLease;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.UnheldPage;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A claim whose reply never arrived may still be committing on the server (a synchronous standby's
 * wait, the client gone), its rows locked and invisible. The release of its rows must not read the
 * table before it has ended: it would find nothing, and the rows would sit leased to the owner;
 * exactly once, the next batch's committed offset would cover them and a recovery record them
 * PUBLISHED unsent. Every claim holds its owner's lock until it has ended, and the release waits
 * for it. Here a claim left open in a transaction stands for one still committing.
 */
class ClaimBarrierTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");
  private static final String LOCK = "pg_advisory_xact_lock";

  private static HikariDataSource dataSource;
  private static PostgresOutboxStore store;

  @BeforeAll
  static void table() throws SQLException {
    dataSource = Postgres.pool(Postgres.freshDatabase("barrier"), 4);
    new SchemaMigrator(dataSource, TABLE).migrate();
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "INSERT INTO outbox (instance_key, aggregate_type, aggregate_id, event_type, payload)"
              + " SELECT 'eu', 'order', 'agg-' || g, 'E', convert_to('{}', 'UTF8')"
              + " FROM generate_series(1, 50) g");
    }
    store = new PostgresOutboxStore(dataSource, TABLE, RelayClock.database(), null);
  }

  @AfterAll
  static void close() {
    dataSource.close();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.outboxrelay.store.postgres.ClaimStatementTest#claims")
  void theReleaseOfAClaimStillEndingWaitsForItAndThenFindsItsRows(String name, ClaimRequest request)
      throws Exception {
    try (Connection claim = dataSource.getConnection()) {
      claim.setAutoCommit(false);
      String claimed = claimOneRow(claim, request);

      CompletableFuture<UnheldPage> release =
          CompletableFuture.supplyAsync(
              () -> {
                store.awaitClaimsEnded(request.owner());
                return store.releaseUnheld("eu", request.owner(), List.of(), 0, 0, 1000);
              });
      await("the release waits for the claim's lock")
          .atMost(Duration.ofSeconds(30))
          .until(ClaimBarrierTest::waitingForAnAdvisoryLock);
      assertFalse(release.isDone(), "the release read the table while the claim was ending");

      claim.commit();
      assertEquals(List.of(claimed), release.get(30, TimeUnit.SECONDS).released());
    }
  }

  /** Another owner's claim, or none, holds nothing back: the lock is the owner's. */
  @Test
  void anotherOwnersClaimDoesNotHoldTheReleaseBack() throws Exception {
    ClaimRequest other =
        new ClaimRequest("relay-2", java.util.Set.of("eu"), 500, Duration.ofMinutes(5), 10, true);
    try (Connection claim = dataSource.getConnection()) {
      claim.setAutoCommit(false);
      claimOneRow(claim, other);
      CompletableFuture.runAsync(() -> store.awaitClaimsEnded("relay-1")).get(30, TimeUnit.SECONDS);
      claim.rollback();
    }
  }

  /** Every claim statement takes the lock: due rows (all forms), suspects, abandoned rows. */
  @Test
  void everyClaimStatementTakesItsOwnersLock() {
    OutboxSql sql = new OutboxSql(TABLE);
    List<NamedSql> claims =
        new java.util.ArrayList<>(
            List.of(
                sql.claimSuspectOrdered,
                sql.claimSuspectUnordered,
                sql.claimAbandonedOrdered,
                sql.claimAbandonedUnordered));
    for (OutboxSql.Claim claim :
        List.of(
            sql.claimOrdered,
            sql.claimOrderedWithAffinity,
            sql.claimOrderedInShare,
            sql.claimUnordered,
            sql.claimUnorderedInShare)) {
      claims.add(claim.oneKey());
      claims.add(claim.severalKeys());
    }
    for (NamedSql claim : claims) {
      assertTrue(claim.jdbc().contains(LOCK), claim.jdbc());
    }
    assertTrue(sql.awaitClaimsEnded.jdbc().contains(LOCK));
  }

  /**
   * Where the server, database or role turned synchronous_commit off, a give-back still waits for
   * its flush: lost in a crash, rows given back from a batch handed to Connect would come back
   * leased under its number, which the next batch's committed offset covers.
   */
  @Test
  void onAServerThatDoesNotWaitForFlushesAGiveBackStillDoes() throws SQLException {
    ClaimRequest eos =
        new ClaimRequest("relay-3", java.util.Set.of("eu"), 1, Duration.ofMinutes(5), 10, true)
            .exactlyOnce(7, 1, new dev.outboxrelay.store.BucketShare(1, 0, 1));
    ClaimedMessage held = store.claim(eos).claimed().get(0);
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      execute(c, "SET LOCAL synchronous_commit = off"); // as a server, database or role may
      OutboxSql sql = new OutboxSql(TABLE);
      HeldLease lease = held.heldLease();
      try (PreparedStatement ps = c.prepareStatement(sql.giveBack.jdbc())) {
        sql.giveBack
            .bind(ps)
            .setArray("seqs", c.createArrayOf("bigint", new Long[] {lease.seq()}))
            .setArray("message_ids", c.createArrayOf("text", new String[] {lease.messageId()}))
            .setArray("owners", c.createArrayOf("text", new String[] {lease.lease().owner()}))
            .setArray("tokens", c.createArrayOf("bigint", new Long[] {lease.lease().token()}))
            .setArray("instance_keys", c.createArrayOf("text", new String[] {"eu"}))
            .ready();
        try (ResultSet rs = ps.executeQuery()) {
          assertTrue(rs.next(), "gives the row back");
        }
      }
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SHOW synchronous_commit")) {
        rs.next();
        assertEquals("local", rs.getString(1));
      }
      c.rollback();
    }
    assertEquals(List.of(held.messageId()), store.giveBack(List.of(held.heldLease())));
  }

  /** Claims one row in {@code c}'s open transaction, as the store's claim would; its message id. */
  private static String claimOneRow(Connection c, ClaimRequest request) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(store.claimStatement(request))) {
      store.bindClaim(c, ps, request.withLimit(1));
      try (ResultSet rs = ps.executeQuery()) {
        assertTrue(rs.next(), "claims a row");
        return rs.getString("message_id");
      }
    }
  }

  private static boolean waitingForAnAdvisoryLock() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    + " AND wait_event_type = 'Lock' AND wait_event = 'advisory'")) {
      rs.next();
      return rs.getLong(1) > 0;
    }
  }

  private static void execute(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
