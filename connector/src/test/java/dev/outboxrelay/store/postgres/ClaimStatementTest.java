package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.AggregateAffinity;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The claim statements on a drain-like table: their plans, and how they commit.
 *
 * <p>Plans, on a drain-like table: a backlog over many aggregates, with batches of one owner
 * already in flight. A claim must read the active-rows index in seq order up to its limit and probe
 * each candidate's aggregate by index: the plans the benchmark found slow were a sort of the whole
 * share (an affinity estimated at 0.5 % of the rows) and a nested loop over every in-flight row (an
 * ordering check pulled up into an anti-join), costs that grow with the backlog or with what is in
 * flight.
 */
class ClaimStatementTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");
  private static HikariDataSource dataSource;
  private static PostgresOutboxStore store;

  @BeforeAll
  static void drainInProgress() throws SQLException {
    dataSource = Postgres.pool(Postgres.freshDatabase("plans"), 4);
    new SchemaMigrator(dataSource, TABLE).migrate();
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "INSERT INTO outbox (instance_key, aggregate_type, aggregate_id, event_type, payload)"
              + " SELECT 'eu', 'order', 'agg-' || (g % 1000), 'E', convert_to('{}', 'UTF8')"
              + " FROM generate_series(1, 20000) g");
      s.execute("VACUUM ANALYZE outbox");
    }
    store = new PostgresOutboxStore(dataSource, TABLE, RelayClock.database(), null);
    for (int batch = 0; batch < 3; batch++) {
      assertEquals(500, store.claim(request(true, null)).claimed().size());
    }
  }

  @AfterAll
  static void close() {
    dataSource.close();
  }

  private static ClaimRequest request(boolean ordered, AggregateAffinity affinity) {
    return new ClaimRequest(
        "relay-1", Set.of("eu"), 500, Duration.ofMinutes(5), 10, ordered, affinity);
  }

  static Stream<Arguments> claims() {
    return Stream.of(
        Arguments.of("ordered", request(true, null)),
        Arguments.of("ordered, share 0 of 2", request(true, new AggregateAffinity(0, 2))),
        Arguments.of("ordered, share 3 of 4", request(true, new AggregateAffinity(3, 4))),
        Arguments.of("unordered", request(false, null)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("claims")
  void aClaimReadsTheActiveRowsInOrderUpToItsLimit(String name, ClaimRequest request)
      throws SQLException {
    String plan = explain(request);
    String candidates = candidateStep(plan);
    assertTrue(candidates.contains("Index Scan using outbox_due_seq_idx"), plan);
    assertFalse(candidates.contains("Seq Scan"), plan);
    assertFalse(plan.contains("Sort"), plan);
    assertFalse(plan.contains("Materialize"), plan);
    if (request.ordered()) {
      assertTrue(candidates.contains("Index Scan using outbox_due_aggregate_idx"), plan);
      // Every predecessor probe (the candidate's and the claimable check's) reads the aggregate
      // index: both due indexes share a predicate, and probing the (seq) one by range would read
      // every earlier due row per candidate (benchmarks.md, finding 10).
      assertFalse(plan.matches("(?s).*Index Scan using outbox_due_seq_idx on outbox p.*"), plan);
      assertTrue(
          plan.matches("(?s).*Index Scan using outbox_due_aggregate_idx on outbox p_1.*"), plan);
    }
  }

  /**
   * Publishing finds each acknowledged row by its seq, the primary key (a bigint probe), not by its
   * message id's text index: measured 15-29 % less time per publish (docs/benchmarks.md).
   */
  @Test
  void aPublishFindsEachRowByItsPrimaryKey() throws SQLException {
    NamedSql publish = new OutboxSql(TABLE).markPublishedBatch;
    StringBuilder plan = new StringBuilder();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("EXPLAIN " + publish.jdbc())) {
      publish
          .bind(ps)
          .setObject("now", null, Types.TIMESTAMP_WITH_TIMEZONE)
          .setArray("message_ids", c.createArrayOf("text", new String[] {"m-1", "m-2"}))
          .setArray("seqs", c.createArrayOf("bigint", new Long[] {1L, 2L}))
          .setArray("owners", c.createArrayOf("text", new String[] {"relay-1", "relay-1"}))
          .setArray("tokens", c.createArrayOf("bigint", new Long[] {1L, 1L}))
          .setArray("kafka_topics", c.createArrayOf("text", new String[] {"t", "t"}))
          .setArray("kafka_partitions", c.createArrayOf("integer", new Integer[] {0, 0}))
          .setArray("kafka_offsets", c.createArrayOf("bigint", new Long[] {1L, 2L}))
          .setArray("instance_keys", c.createArrayOf("text", new String[] {"eu"}));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          plan.append(rs.getString(1)).append('\n');
        }
      }
    }
    assertTrue(
        plan.toString().matches("(?s).*Index Scan using outbox_pkey on outbox o\\b.*"),
        plan.toString());
    assertFalse(plan.toString().contains("outbox_message_id_key"), plan.toString());
  }

  /**
   * The plan of the candidate CTE (how rows are found). The UPDATE's own join on the primary key
   * may be a hash join over a table this small, which is the planner's right.
   */
  private static String candidateStep(String plan) {
    StringBuilder step = new StringBuilder();
    boolean inside = false;
    for (String line : plan.split("\n")) {
      if (line.startsWith("  CTE candidate")) {
        inside = true;
      } else if (inside && (line.startsWith("  CTE ") || line.startsWith("  ->"))) {
        break;
      }
      if (inside) {
        step.append(line).append('\n');
      }
    }
    assertFalse(step.isEmpty(), plan);
    return step.toString();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("claims")
  void aClaimCommitsWithoutWaitingForItsFlushAndLeavesTheSessionAsItWas(
      String name, ClaimRequest request) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      assertEquals("on", show(c));
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(store.claimStatement(request))) {
        store.bindClaim(c, ps, request.withLimit(1));
        try (ResultSet rs = ps.executeQuery()) {
          assertTrue(rs.next(), "claims a row");
        }
      }
      assertEquals("off", show(c), "the claim's own transaction");
      c.rollback();
      c.setAutoCommit(true);
      assertEquals("on", show(c), "the pooled connection after the claim");
    }
  }

  private static String show(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW synchronous_commit")) {
      rs.next();
      return rs.getString(1);
    }
  }

  private static String explain(ClaimRequest request) throws SQLException {
    StringBuilder plan = new StringBuilder();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("EXPLAIN " + store.claimStatement(request))) {
      store.bindClaim(c, ps, request);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          plan.append(rs.getString(1)).append('\n');
        }
      }
    }
    return plan.toString();
  }
}
