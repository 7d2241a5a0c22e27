package dev.outboxrelay.store.postgres;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The write cost of schema versions 7 and 9: a claim is a HOT update (no index entry, only the
 * changed bytes in the WAL), and a published row keeps no payload: it leaves the table for an entry
 * of the published log, which has none.
 */
class HotClaimTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");
  private static HikariDataSource dataSource;

  @BeforeAll
  static void migrate() {
    dataSource = Postgres.pool(Postgres.freshDatabase("hot_claims"), 3);
    new SchemaMigrator(dataSource, TABLE).migrate();
  }

  @AfterAll
  static void close() {
    dataSource.close();
  }

  @Test
  void claimsAreHotUpdatesAndPublishedRowsLeaveTheirPayloadsBehind() throws SQLException {
    // ~300-byte payloads, as the benchmark's, over 50 aggregates.
    exec(
        "INSERT INTO outbox (instance_key, aggregate_type, aggregate_id, event_type, payload,"
            + " headers) SELECT 'eu', 'order', 'agg-' || (g % 50), 'OrderPlaced',"
            + " convert_to(repeat('x', 300), 'UTF8'), '{\"trace\":\"t\"}'"
            + " FROM generate_series(1, 400) g");
    exec("SELECT pg_stat_reset_single_table_counters('outbox'::regclass)");
    PostgresOutboxStore store =
        new PostgresOutboxStore(dataSource, TABLE, RelayClock.database(), null);

    var claimed =
        store
            .claim(new ClaimRequest("relay", Set.of("eu"), 400, Duration.ofMinutes(1), 5, true))
            .claimed();
    assertEquals(400, claimed.size());
    await().atMost(Duration.ofSeconds(60)).until(() -> updates()[0] >= 400);
    long[] afterClaim = updates();
    assertEquals(afterClaim[0], afterClaim[1], "every claim a HOT update");

    store.markPublished(
        claimed.stream()
            .map(
                m ->
                    new PublishedAck(
                        m.messageId(), m.seq(), m.lease(), new KafkaCoordinates("t", 0, 1)))
            .toList());
    // Schema version 9: a published row leaves the table, payload and all, for an entry of the
    // published log, which has no column for either.
    assertEquals(
        List.of(0L, 400L, 0L),
        List.of(
            queryLong("SELECT count(*) FROM outbox"),
            queryLong("SELECT count(*) FROM outbox_published"),
            queryLong(
                "SELECT count(*) FROM information_schema.columns WHERE table_name ="
                    + " 'outbox_published' AND column_name IN ('payload', 'headers')")));
  }

  /** Updates and HOT updates of the table so far, once the statistics have caught up. */
  private static long[] updates() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
                    + " WHERE relid = 'outbox'::regclass")) {
      rs.next();
      return new long[] {rs.getLong(1), rs.getLong(2)};
    }
  }

  private static long queryLong(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static void exec(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
