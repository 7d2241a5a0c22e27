package dev.outboxrelay.store.postgres;

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
 * PUBLISHED unsent. Every claim holds its owner's lock until it has ended, and the release reads
 * only once it can take it. Here a claim left open in a transaction stands for one still
 * committing.
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
  void aClaimStillEndingIsSeenAndItsRowsAreReleasedOnceItHasEnded(String name, ClaimRequest request)
      throws SQLException {
    try (Connection claim = dataSource.getConnection()) {
      claim.setAutoCommit(false);
      String claimed = claimOneRow(claim, request);

      assertFalse(store.claimsEnded(request.owner()), "the claim has not ended");
      // Why the release asks first: read now, the table shows none of the claim's rows.
      assertEquals(List.of(), release(request.owner()).released());

      claim.commit();
      assertTrue(store.claimsEnded(request.owner()));
      assertEquals(List.of(claimed), release(request.owner()).released());
    }
  }

  /** Another owner's claim holds nothing back: the lock is the owner's. */
  @Test
  void anotherOwnersClaimIsNotThisOwners() throws SQLException {
    ClaimRequest other =
        new ClaimRequest("relay-2", java.util.Set.of("eu"), 500, Duration.ofMinutes(5), 10, true);
    try (Connection claim = dataSource.getConnection()) {
      claim.setAutoCommit(false);
      claimOneRow(claim, other);
      assertTrue(store.claimsEnded("relay-1"));
      assertFalse(store.claimsEnded("relay-2"));
      claim.rollback();
    }
    assertTrue(store.claimsEnded("relay-2"));
  }

  /**
   * A claim's transaction may sit idle only briefly (the client reads the result, then commits):
   * one whose client is gone is ended by the server, not left holding the lock, and the release
   * waiting for it, until TCP notices. The limit is the claim's own, local to its transaction.
   */
  @Test
  void aClaimsTransactionMaySitIdleForTenSecondsAtMost() throws SQLException {
    ClaimRequest request =
        new ClaimRequest("relay-4", java.util.Set.of("eu"), 500, Duration.ofMinutes(5), 10, true);
    try (Connection claim = dataSource.getConnection()) {
      assertEquals("0", show(claim, "idle_in_transaction_session_timeout"));
      claim.setAutoCommit(false);
      claimOneRow(claim, request);
      assertEquals("10s", show(claim, "idle_in_transaction_session_timeout"));
      claim.rollback();
      assertEquals("0", show(claim, "idle_in_transaction_session_timeout"));
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
    assertTrue(sql.claimsEnded.jdbc().contains("pg_try_advisory_xact_lock"));
  }

  /**
   * Where the server, database or role turned synchronous_commit off, a give-back still waits for
   * its flush: lost in a crash, rows given back from a batch handed to Connect would come back
   * leased under its number, which the next batch's committed offset covers.
   */
  @Test
  void onAServerThatDoesNotWaitForFlushesAGiveBackStillDoes() throws SQLException {
    ClaimedMessage held = claimOneExactlyOnce("relay-3");
    try (Connection c = withoutFlushWaits()) {
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
      assertEquals("local", show(c, "synchronous_commit"));
      c.rollback();
    }
    assertEquals(List.of(held.messageId()), store.giveBack(List.of(held.heldLease())));
  }

  /**
   * The release of a lost claim's rows waits for its flush too, for the same reason: its rows are
   * leased under a batch number the next batch's committed offset covers, and nothing would release
   * them again after a crash that lost the release.
   */
  @Test
  void onAServerThatDoesNotWaitForFlushesTheReleaseOfALostClaimStillDoes() throws SQLException {
    ClaimedMessage lost = claimOneExactlyOnce("relay-4");
    try (Connection c = withoutFlushWaits()) {
      OutboxSql sql = new OutboxSql(TABLE);
      try (PreparedStatement ps = c.prepareStatement(sql.releaseUnheld.jdbc())) {
        sql.releaseUnheld
            .bind(ps)
            .setString("instance_key", "eu")
            .setString("owner", "relay-4")
            .setArray("held_seqs", c.createArrayOf("bigint", new Long[0]))
            .setLong("handed_through", 0)
            .setLong("after_seq", 0)
            .setInt("page_rows", 1000)
            .ready();
        try (ResultSet rs = ps.executeQuery()) {
          assertTrue(rs.next());
          assertEquals(
              List.of(lost.messageId()), List.of((String[]) rs.getArray("released").getArray()));
        }
      }
      assertEquals("local", show(c, "synchronous_commit"));
      c.rollback();
    }
    assertEquals(List.of(lost.messageId()), release("relay-4").released());
  }

  /** One row claimed exactly once by {@code owner}, committed. */
  private static ClaimedMessage claimOneExactlyOnce(String owner) {
    ClaimRequest eos =
        new ClaimRequest(owner, java.util.Set.of("eu"), 1, Duration.ofMinutes(5), 10, true)
            .exactlyOnce(7, 1, new dev.outboxrelay.store.BucketShare(1, 0, 1));
    return store.claim(eos).claimed().get(0);
  }

  /**
   * A connection in a transaction that does not wait for flushes, as a server, database or role may
   * set.
   */
  private static Connection withoutFlushWaits() throws SQLException {
    Connection c = dataSource.getConnection();
    c.setAutoCommit(false);
    execute(c, "SET LOCAL synchronous_commit = off");
    return c;
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

  /** One page of the release of the owner's rows it does not hold (here: none held). */
  private static UnheldPage release(String owner) {
    return store.releaseUnheld("eu", owner, List.of(), 0, 0, 1000);
  }

  private static String show(Connection c, String setting) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW " + setting)) {
      rs.next();
      return rs.getString(1);
    }
  }

  private static void execute(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
