package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Retention's delete from the published log reads the log's (instance_key, published_at) index,
 * oldest first, under a custom plan and under the generic plan a prepared statement switches to:
 * never a scan of the log. A log kept for days holds hundreds of millions of entries while a
 * retention that keeps up finds a few past its cutoff; the unordered delete's generic plan,
 * guessing a third of the log past the cutoff, read the log from its first page at every run.
 */
class RetentionStatementTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");
  private static final int OTHER_KEYS_ENTRIES = 30_000;
  private static final int OWN_OLD_ENTRIES = 150;

  private static HikariDataSource dataSource;

  @BeforeAll
  static void publishedLog() throws SQLException {
    dataSource = Postgres.pool(Postgres.freshDatabase("retention"), 4);
    new SchemaMigrator(dataSource, TABLE).migrate();
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      // Another connector's old entries first in the log, then this one's: old ones, and the
      // recent ones retention keeps.
      s.execute(entries("paused", OTHER_KEYS_ENTRIES, "40 days"));
      s.execute(entries("eu", OWN_OLD_ENTRIES, "40 days"));
      s.execute(entries("us", OWN_OLD_ENTRIES, "40 days"));
      s.execute(entries("eu", 20_000, "1 hour"));
      s.execute("VACUUM ANALYZE outbox_published");
    }
  }

  private static String entries(String key, int count, String age) {
    return "INSERT INTO outbox_published (seq, message_id, instance_key, attempts,"
        + " abandoned_claims, lease_token, published_at)"
        + " SELECT g, gen_random_uuid()::text, '"
        + key
        + "', 1, 0, 1, now() - interval '"
        + age
        + "' + g * interval '1 millisecond' FROM generate_series(1, "
        + count
        + ") g";
  }

  @AfterAll
  static void close() {
    dataSource.close();
  }

  @Test
  void deletesOwnOldEntriesAlongTheIndexUnderACustomPlan() throws SQLException {
    NamedSql delete = new OutboxSql(TABLE).deletePublishedLog;
    String plan;
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                PostgresOutboxStore.planned(
                    OutboxSql.CLAIM_PLAN, "EXPLAIN (ANALYZE, TIMING OFF) " + delete.jdbc()))) {
      c.setAutoCommit(false);
      delete
          .bind(ps)
          .setArray("instance_keys", c.createArrayOf("text", new String[] {"eu", "us"}))
          .setObject("published_before", cutoff(), Types.TIMESTAMP_WITH_TIMEZONE)
          .setInt("limit", 1000);
      plan = ClaimStatementTest.plan(ps);
      c.rollback();
    }
    assertTrue(plan.contains("Index Scan using outbox_published_at_idx on outbox_published o"));
    assertTrue(plan.contains("Tid Scan on outbox_published"), plan); // the delete, by position
    assertTrue(
        plan.matches(
            "(?s).*Delete on outbox_published .*actual rows=" + 2 * OWN_OLD_ENTRIES + ".*"),
        plan);
    assertReadsNoOtherEntry(plan);
  }

  /** A batch of several keys stops at its limit, whatever each key has past the cutoff. */
  @Test
  void aBatchOfSeveralKeysDeletesItsLimitAtMost() throws SQLException {
    NamedSql delete = new OutboxSql(TABLE).deletePublishedLog;
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(PostgresOutboxStore.planned(OutboxSql.CLAIM_PLAN, delete.jdbc()))) {
      c.setAutoCommit(false);
      delete
          .bind(ps)
          .setArray("instance_keys", c.createArrayOf("text", new String[] {"eu", "us"}))
          .setObject("published_before", cutoff(), Types.TIMESTAMP_WITH_TIMEZONE)
          .setInt("limit", 200); // of 2 × 150 past the cutoff
      try (ResultSet rs = PostgresOutboxStore.planned(ps)) {
        rs.next();
        assertEquals(200, rs.getInt(1));
      }
      c.rollback();
    }
  }

  @Test
  void readsTheIndexUnderTheGenericPlan() throws SQLException {
    String plan;
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      s.execute(OutboxSql.CLAIM_PLAN);
      plan = explainGeneric(s, new OutboxSql(TABLE).deletePublishedLog);
      c.rollback();
    }
    assertTrue(plan.contains("Index Scan using outbox_published_at_idx on outbox_published o"));
    assertTrue(plan.contains("Tid Scan on outbox_published"), plan);
    assertFalse(plan.contains("Seq Scan"), plan);
    assertFalse(plan.contains("Bitmap"), plan);
    assertFalse(plan.contains("Sort"), plan);
  }

  /**
   * The delete of rows published before schema version 9, in the log delete's transaction and so
   * under its planner settings, reads the settled index and sorts nothing under the generic plan
   * too (the one a prepared statement switches to).
   */
  @Test
  void theTablesDeleteReadsTheSettledIndexUnderTheGenericPlan() throws SQLException {
    String plan;
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      // 20,000 rows awaiting delivery, 300 published before schema version 9, in one transaction
      // rolled back: the other tests see none of them.
      s.execute(
          "INSERT INTO outbox (instance_key, aggregate_type, aggregate_id, event_type, status,"
              + " published_at) SELECT CASE WHEN g % 2 = 0 THEN 'eu' ELSE 'us' END, 'order',"
              + " 'a' || g, 'created', CASE WHEN g % 67 = 0 THEN 'PUBLISHED' ELSE 'PENDING' END,"
              + " CASE WHEN g % 67 = 0 THEN now() - interval '40 days' END"
              + " FROM generate_series(1, 20000) g");
      s.execute("ANALYZE outbox");
      s.execute(OutboxSql.CLAIM_PLAN);
      plan = explainGeneric(s, new OutboxSql(TABLE).deletePublished);
      c.rollback();
    }
    assertTrue(plan.contains("outbox_settled_idx"), plan);
    assertFalse(plan.contains("Seq Scan"), plan);
    assertFalse(plan.contains("Sort"), plan);
  }

  /**
   * A log the user's own tool partitioned (by publication time, to drop old partitions) holds each
   * position (ctid) once per partition: the delete judges each entry it finds at a position again,
   * and leaves another key's recent entry at the same position in the other partition.
   */
  @Test
  void aPartitionedLogLosesNoEntryThatSharesAPositionInAnotherPartition() throws SQLException {
    try (HikariDataSource partitioned = Postgres.pool(Postgres.freshDatabase("partitioned"), 4)) {
      new SchemaMigrator(partitioned, TABLE).migrate();
      OffsetDateTime cutoff = cutoff(); // one instant for both partitions' bounds and the delete
      try (Connection c = partitioned.getConnection();
          Statement s = c.createStatement()) {
        s.execute("CREATE TABLE log_columns (LIKE outbox_published)");
        s.execute("DROP TABLE outbox_published");
        s.execute(
            "CREATE TABLE outbox_published (LIKE log_columns) PARTITION BY RANGE (published_at)");
        s.execute(
            "CREATE TABLE outbox_published_old PARTITION OF outbox_published"
                + " FOR VALUES FROM (MINVALUE) TO ('"
                + cutoff
                + "')");
        s.execute(
            "CREATE TABLE outbox_published_new PARTITION OF outbox_published"
                + " FOR VALUES FROM ('"
                + cutoff
                + "') TO (MAXVALUE)");
        s.execute(
            "CREATE INDEX outbox_published_at_idx ON outbox_published (instance_key, published_at)");
        s.execute(entries("eu", 1, "40 days")); // (0,1) of the old partition
        s.execute(entries("us", 1, "1 hour")); // (0,1) of the new one
      }
      PostgresOutboxStore store =
          new PostgresOutboxStore(partitioned, TABLE, RelayClock.database(), null);

      assertEquals(1, store.deletePublished(Set.of("eu"), cutoff.toInstant(), 10));

      try (Connection c = partitioned.getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT instance_key FROM outbox_published")) {
        assertTrue(rs.next());
        assertEquals("us", rs.getString(1), "another key's, recent: kept");
        assertFalse(rs.next());
      }
    }
  }

  /**
   * An entry another session holds (an open transaction that selected it FOR UPDATE) is waited for
   * a second at most, then the batch fails with 55P03 and deleted nothing: every run reads the
   * oldest entries first, and without a bound each waited out the statement timeout on the same
   * entry. A lock wait of zero leaves the session's own lock_timeout.
   */
  @Test
  void aLockedEntryIsWaitedForASecondAtMost() throws SQLException {
    PostgresOutboxStore store =
        new PostgresOutboxStore(dataSource, TABLE, RelayClock.database(), null);
    try (Connection holder = dataSource.getConnection();
        Statement lock = holder.createStatement()) {
      holder.setAutoCommit(false);
      lock.execute(
          "SELECT 1 FROM outbox_published WHERE instance_key = 'eu'"
              + " ORDER BY published_at LIMIT 1 FOR UPDATE");

      OutboxStoreException e =
          assertTimeoutPreemptively(
              java.time.Duration.ofMinutes(1), // a hang guard only: the pool sets no timeout
              () ->
                  assertThrows(
                      OutboxStoreException.class,
                      () -> store.deletePublished(Set.of("eu"), cutoff().toInstant(), 10)));

      assertTrue(e.isLockWait(), e::toString);
      assertEquals("DB_LOCK_NOT_AVAILABLE", e.reasonCode());
      holder.rollback();
    }
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM outbox_published"
                    + " WHERE instance_key = 'eu' AND published_at < now() - interval '1 day'")) {
      rs.next();
      assertEquals(OWN_OLD_ENTRIES, rs.getInt(1), "the failed batch deleted nothing");
    }
    assertEquals(
        OutboxSql.CLAIM_PLAN, OutboxSql.retentionPlan(java.time.Duration.ZERO), "the session's");
  }

  @Test
  void deletesNoEntryOfAnotherKeyAndTheOldestFirst() {
    PostgresOutboxStore store =
        new PostgresOutboxStore(dataSource, TABLE, RelayClock.database(), null);
    // Committed: the rows are put back at the end, whatever the assertions say, for the other
    // tests (a failure here would otherwise fail them too, hiding its own).
    int deleted = store.deletePublished(Set.of("us"), cutoff().toInstant(), 100);
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      try (ResultSet rs =
          s.executeQuery(
              "SELECT instance_key, count(*), min(seq) FROM outbox_published"
                  + " WHERE published_at < now() - interval '1 day'"
                  + " GROUP BY instance_key ORDER BY instance_key")) {
        assertEquals(100, deleted);
        assertTrue(rs.next());
        assertEquals("eu", rs.getString(1));
        assertEquals(OWN_OLD_ENTRIES, rs.getInt(2));
        assertTrue(rs.next());
        assertEquals("paused", rs.getString(1));
        assertEquals(OTHER_KEYS_ENTRIES, rs.getInt(2));
        assertTrue(rs.next());
        assertEquals("us", rs.getString(1));
        assertEquals(OWN_OLD_ENTRIES - 100, rs.getInt(2));
        assertEquals(101, rs.getLong(3), "the oldest 100 went first");
      } finally {
        s.execute("DELETE FROM outbox_published WHERE instance_key = 'us' AND seq <= 100");
        s.execute(entries("us", 100, "40 days")); // put back, as the other tests expect
      }
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  /**
   * A batch is one transaction: when its delete of rows published before schema version 9 fails,
   * its delete of the log's entries is undone too, so the batch deleted nothing uncounted (it was
   * two commits, and retention's cleaned-up-total, like the CLI's purge, left those entries out).
   */
  @Test
  void aBatchWhoseTableDeleteFailsDeletesNoEntryOfTheLog() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(entries("legacy", 5, "40 days"));
      s.execute(
          "INSERT INTO outbox (instance_key, aggregate_type, aggregate_id, event_type, status,"
              + " published_at) VALUES ('legacy', 'order', 'o-1', 'created', 'PUBLISHED',"
              + " now() - interval '40 days')");
      s.execute(
          "CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS"
              + " $$ BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = '57014'; END $$");
      s.execute(
          "CREATE TRIGGER refuse_delete BEFORE DELETE ON outbox"
              + " FOR EACH ROW EXECUTE FUNCTION refuse_delete()");
    }
    PostgresOutboxStore store =
        new PostgresOutboxStore(dataSource, TABLE, RelayClock.database(), null);
    try {
      OutboxStoreException failure =
          assertThrows(
              OutboxStoreException.class,
              () -> store.deletePublished(Set.of("legacy"), cutoff().toInstant(), 100));
      assertEquals("57014", failure.sqlState());
      assertEquals(5, count("SELECT count(*) FROM outbox_published WHERE instance_key = 'legacy'"));
    } finally {
      try (Connection c = dataSource.getConnection();
          Statement s = c.createStatement()) {
        s.execute("DROP TRIGGER refuse_delete ON outbox");
        s.execute("DROP FUNCTION refuse_delete()");
      }
    }
    assertEquals(6, store.deletePublished(Set.of("legacy"), cutoff().toInstant(), 100));
    assertEquals(0, count("SELECT count(*) FROM outbox_published WHERE instance_key = 'legacy'"));
    assertEquals(0, count("SELECT count(*) FROM outbox WHERE instance_key = 'legacy'"));
  }

  private static long count(String query) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(query)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static OffsetDateTime cutoff() {
    return OffsetDateTime.ofInstant(Instant.now().minus(1, ChronoUnit.DAYS), ZoneOffset.UTC);
  }

  /**
   * The generic plan of a statement: prepared on the server (each '?' numbered as a parameter) and
   * explained under plan_cache_mode=force_generic_plan, as PostgreSQL runs a prepared statement
   * once it judges the generic plan good enough. Its parameters by name: the keys, the cutoff, the
   * limits.
   */
  private static String explainGeneric(Statement s, NamedSql statement) throws SQLException {
    Matcher m = Pattern.compile("\\?").matcher(statement.jdbc());
    StringBuilder numbered = new StringBuilder();
    int n = 0;
    while (m.find()) {
      m.appendReplacement(numbered, "\\$" + ++n);
    }
    m.appendTail(numbered);
    String[] arguments = new String[n];
    for (String name : statement.names()) {
      String argument =
          switch (name) {
            case "instance_keys" -> "'{eu,us}'";
            case "published_before" -> "now() - interval '1 day'";
            case "limit" -> "1000";
            default -> throw new AssertionError("no argument for " + name);
          };
      for (int position : statement.positions(name)) {
        arguments[position - 1] = argument;
      }
    }
    s.execute("PREPARE retention AS " + numbered);
    s.execute("SET LOCAL plan_cache_mode = force_generic_plan");
    StringBuilder plan = new StringBuilder();
    try (ResultSet rs =
        s.executeQuery("EXPLAIN EXECUTE retention(" + String.join(", ", arguments) + ")")) {
      while (rs.next()) {
        plan.append(rs.getString(1)).append('\n');
      }
    } finally {
      s.execute("DEALLOCATE retention");
    }
    return plan.toString();
  }

  private static void assertReadsNoOtherEntry(String plan) {
    assertFalse(plan.contains("Seq Scan"), plan);
    assertFalse(plan.contains("Bitmap"), plan);
    assertFalse(plan.contains("Sort"), plan);
    Matcher removed = Pattern.compile("Rows Removed by Filter: (\\d+)").matcher(plan);
    while (removed.find()) {
      assertTrue(Long.parseLong(removed.group(1)) == 0, "no entry read to be dropped: " + plan);
    }
  }
}
