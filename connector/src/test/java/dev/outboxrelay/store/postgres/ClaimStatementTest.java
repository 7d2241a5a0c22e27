package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.AggregateAffinity;
import dev.outboxrelay.store.BucketShare;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The claim, publish and renewal statements on a drain-like table: their plans, and how a claim
 * commits.
 *
 * <p>Plans, on a drain-like table: a backlog over many aggregates, with batches of one owner
 * already in flight. A claim must read the active-rows index in seq order up to its limit and probe
 * each candidate's aggregate by index: the plans the benchmark found slow were a sort of the whole
 * share (an affinity estimated at 0.5 % of the rows) and a nested loop over every in-flight row (an
 * ordering check pulled up into an anti-join), costs that grow with the backlog or with what is in
 * flight. A publish and a renewal must find their rows by the primary key.
 *
 * <p>Each plan is checked under two kinds of statistics. {@link Statistics#FRESH}: taken on the
 * backlog itself. {@link Statistics#NEARLY_EMPTY}: taken between two bursts, when the table held a
 * few rows and none in flight, and the backlog came after: what an outbox's statistics often are,
 * and what made the claims sort every due row and the publishes scan the table once per ack under
 * load (docs/benchmarks.md, finding 19).
 */
class ClaimStatementTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");
  private static final String INSERT =
      "INSERT INTO outbox (instance_key, aggregate_type, aggregate_id, event_type, payload)"
          + " SELECT 'eu', 'order', 'agg-' || (g % 1000), 'E', convert_to('{}', 'UTF8')"
          + " FROM generate_series(1, 20000) g";

  /** When the planner's statistics were taken. */
  enum Statistics {
    FRESH,
    NEARLY_EMPTY
  }

  private static final Map<Statistics, HikariDataSource> dataSources =
      new EnumMap<>(Statistics.class);
  private static final Map<Statistics, PostgresOutboxStore> stores =
      new EnumMap<>(Statistics.class);
  private static final Map<Statistics, List<ClaimedMessage>> inFlight =
      new EnumMap<>(Statistics.class);

  @BeforeAll
  static void drainInProgress() throws SQLException {
    for (Statistics statistics : Statistics.values()) {
      HikariDataSource dataSource = Postgres.pool(Postgres.freshDatabase("plans"), 4);
      dataSources.put(statistics, dataSource);
      new SchemaMigrator(dataSource, TABLE).migrate();
      try (Connection c = dataSource.getConnection();
          Statement s = c.createStatement()) {
        if (statistics == Statistics.FRESH) {
          s.execute(INSERT);
          s.execute("VACUUM ANALYZE outbox");
        } else {
          // Autovacuum must not refresh what the test means to keep stale.
          s.execute("ALTER TABLE outbox SET (autovacuum_enabled = false)");
          s.execute(INSERT);
          s.execute("DELETE FROM outbox WHERE seq > 50"); // published, as a drain leaves it
          s.execute("ANALYZE outbox");
          s.execute(INSERT);
        }
      }
      PostgresOutboxStore store =
          new PostgresOutboxStore(dataSource, TABLE, RelayClock.database(), null);
      stores.put(statistics, store);
      List<ClaimedMessage> claimed = new ArrayList<>();
      for (int batch = 0; batch < 3; batch++) {
        List<ClaimedMessage> rows = store.claim(request(true, null)).claimed();
        assertEquals(500, rows.size());
        claimed.addAll(rows);
      }
      inFlight.put(statistics, claimed);
    }
  }

  /**
   * A table shared with another connector whose backlog waits (paused), and with legacy rows, all
   * ahead of the rows of the keys under test: {@value #OWN_ROWS} rows each of eu and us.
   */
  private static HikariDataSource shared;

  private static final int OWN_ROWS = 500;

  @BeforeAll
  static void sharedTable() throws SQLException {
    shared = Postgres.pool(Postgres.freshDatabase("shared"), 4);
    new SchemaMigrator(shared, TABLE).migrate();
    try (Connection c = shared.getConnection();
        Statement s = c.createStatement()) {
      // Legacy rows predate ownership (schema version 2): the check applies to new rows only.
      s.execute("ALTER TABLE outbox DROP CONSTRAINT outbox_instance_key_required");
      s.execute(INSERT.replace("'eu'", "NULL").replace("20000", "5000"));
      s.execute(
          "ALTER TABLE outbox ADD CONSTRAINT outbox_instance_key_required"
              + " CHECK (instance_key IS NOT NULL) NOT VALID");
      s.execute(INSERT.replace("'eu'", "'paused'"));
      s.execute(INSERT.replace("20000", String.valueOf(OWN_ROWS)));
      s.execute(INSERT.replace("'eu'", "'us'").replace("20000", String.valueOf(OWN_ROWS)));
      s.execute("VACUUM ANALYZE outbox");
    }
  }

  @AfterAll
  static void close() {
    dataSources.values().forEach(HikariDataSource::close);
    shared.close();
  }

  static Stream<Arguments> claimsOfOneOrTwoKeys() {
    return claims()
        .flatMap(
            claim ->
                Stream.of(Set.of("eu"), Set.of("eu", "us"))
                    .map(keys -> Arguments.of(claim.get()[0], keys, claim.get()[1])));
  }

  /**
   * The rows of other instance keys (here a paused connector's backlog of 20,000) and legacy rows
   * (5,000) ahead of a key's own rows cost its claims nothing: a claim reads its own keys' due rows
   * only, key by key, by the (instance_key, seq) index (schema version 13). With the (seq) index of
   * version 7, every claim read all of them, fetched each from the table and dropped it.
   */
  @ParameterizedTest(name = "{0}, keys {1}")
  @MethodSource("claimsOfOneOrTwoKeys")
  void aClaimReadsNoRowOfAnotherKeyNorALegacyRow(String name, Set<String> keys, ClaimRequest claim)
      throws SQLException {
    String plan = sharedPlan(keys, claim);

    assertTrue(readsTheDueKeyIndex(candidateStep(plan)), plan);
    assertReadsOwnRowsOnly(plan, keys);
    // One key: the claim's merge of its rows; several: the quota's too.
    assertOnlyTheKeysMergeSorts(plan, "k.seq", keys.size() == 1 ? 1 : 2);
  }

  /**
   * A claim over several keys locks each key's rows up to its share of the limit and a margin, not
   * up to the whole limit per key (which wrote k row locks per claimed row for k keys); with one
   * key, exactly what it claims. Here eu's rows all come before us's: 500 + 63 locks for two keys
   * instead of 1,000.
   */
  @ParameterizedTest(name = "{0}, keys {1}")
  @MethodSource("claimsOfOneOrTwoKeys")
  void aClaimLocksAtMostAQuarterMoreRowsThanItsLimit(
      String name, Set<String> keys, ClaimRequest claim) throws SQLException {
    String plan = sharedPlan(keys, claim);

    Matcher locks =
        Pattern.compile("LockRows .*\\(actual rows=(\\d+) loops=(\\d+)\\)").matcher(plan);
    assertTrue(locks.find(), plan);
    long locked = Long.parseLong(locks.group(1)) * Long.parseLong(locks.group(2));
    long claimed = Math.min(claim.limit(), OWN_ROWS * (long) keys.size());
    long bound = keys.size() == 1 ? claimed : claim.limit() + claim.limit() / 4 + keys.size() + 1;
    assertTrue(locked <= bound, "locked " + locked + " (bound " + bound + ")\n" + plan);
  }

  /** The claim's plan on the shared table, for {@code keys}, run and rolled back. */
  private static String sharedPlan(Set<String> keys, ClaimRequest claim) throws SQLException {
    ClaimRequest request =
        new ClaimRequest(
            claim.owner(),
            keys,
            claim.limit(),
            claim.leaseDuration(),
            claim.maxAttempts(),
            claim.ordered(),
            claim.affinity(),
            claim.exactlyOnce(),
            claim.payloadReadLimit(),
            claim.headersReadLimit(),
            claim.readRoom());
    PostgresOutboxStore store = new PostgresOutboxStore(shared, TABLE, RelayClock.database(), null);
    try (Connection c = shared.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                PostgresOutboxStore.planned(
                    OutboxSql.CLAIM_PLAN,
                    "EXPLAIN (ANALYZE, TIMING OFF) " + store.claimStatement(request)))) {
      c.setAutoCommit(false);
      store.bindClaim(c, ps, request);
      String plan = plan(ps);
      c.rollback();
      return plan;
    }
  }

  static Stream<Arguments> probesOfOneOrTwoKeys() {
    OutboxSql sql = new OutboxSql(TABLE);
    return Stream.of(
            Arguments.of("abandoned, ordered", sql.claimAbandonedOrdered),
            Arguments.of("abandoned, unordered", sql.claimAbandonedUnordered),
            Arguments.of("find abandoned, ordered", sql.findAbandonedOrdered),
            Arguments.of("find abandoned, unordered", sql.findAbandonedUnordered),
            Arguments.of("lag", sql.lag))
        .flatMap(
            probe ->
                Stream.of(Set.of("eu"), Set.of("eu", "us"))
                    .map(keys -> Arguments.of(probe.get()[0], keys, probe.get()[1])));
  }

  /** So do the abandoned-row probe and the lag's read of the oldest active row. */
  @ParameterizedTest(name = "{0}, keys {1}")
  @MethodSource("probesOfOneOrTwoKeys")
  void aProbeInSeqOrderReadsNoRowOfAnotherKeyNorALegacyRow(
      String name, Set<String> keys, NamedSql probe) throws SQLException {
    String plan;
    try (Connection c = shared.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                PostgresOutboxStore.planned(
                    OutboxSql.CLAIM_PLAN, "EXPLAIN (ANALYZE, TIMING OFF) " + probe.jdbc()))) {
      c.setAutoCommit(false);
      bindProbe(probe.bind(ps), probe, c.createArrayOf("text", keys.toArray()));
      plan = plan(ps);
      c.rollback();
    }
    assertTrue(plan.contains("Index Scan using outbox_due_key_seq_idx on outbox o"), plan);
    assertReadsOwnRowsOnly(plan, keys);
  }

  /** Binds what an abandoned-row probe or the lag read has of a claim's parameters. */
  private static void bindProbe(NamedSql.Binder binder, NamedSql probe, java.sql.Array keys)
      throws SQLException {
    binder.setObject("now", null, Types.TIMESTAMP_WITH_TIMEZONE).setArray("instance_keys", keys);
    if (probe.names().contains("owner")) {
      binder.setString("owner", "relay-2");
    }
    if (probe.names().contains("lease_ms")) {
      binder.setInt("max_attempts", 10).setLong("lease_ms", 60_000);
    }
    if (probe.names().contains("payload_read_limit")) {
      binder.setInt("payload_read_limit", 1_000_000);
    }
    if (probe.names().contains("headers_read_limit")) {
      binder.setInt("headers_read_limit", 1_000_000);
    }
  }

  /**
   * No step of the plan read and dropped more rows than the keys have: not one of the other key's
   * or the legacy rows went through a filter. The due index's scans are by instance key.
   */
  private static void assertReadsOwnRowsOnly(String plan, Set<String> keys) {
    Matcher removed = Pattern.compile("Rows Removed by Filter: (\\d+)").matcher(plan);
    while (removed.find()) {
      assertTrue(Long.parseLong(removed.group(1)) <= (long) OWN_ROWS * keys.size(), plan);
    }
    assertTrue(
        plan.contains(
            "Index Cond: ((instance_key >= own.instance_key)"
                + " AND (instance_key <= own.instance_key))"),
        plan);
    assertFalse(plan.contains("Seq Scan"), plan);
    assertFalse(plan.contains("Bitmap"), plan);
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
        Arguments.of("unordered", request(false, null)),
        Arguments.of(
            "exactly-once ordered, buckets of task 0 of 2",
            request(true, null).exactlyOnce(7, 1, new BucketShare(16, 0, 2))),
        Arguments.of(
            "exactly-once unordered, buckets of task 2 of 3",
            request(false, null).exactlyOnce(7, 1, new BucketShare(16, 2, 3))));
  }

  static Stream<Arguments> claimsUnderEitherStatistics() {
    return Stream.of(Statistics.values())
        .flatMap(
            statistics ->
                claims().map(claim -> Arguments.of(statistics, claim.get()[0], claim.get()[1])));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource("claimsUnderEitherStatistics")
  void aClaimReadsTheActiveRowsInOrderUpToItsLimit(
      Statistics statistics, String name, ClaimRequest request) throws SQLException {
    String plan = explain(statistics, request);
    String candidates = candidateStep(plan);
    assertTrue(readsTheDueKeyIndex(candidates), plan);
    // Nothing that reads every due row: no sort but that of the keys' first rows (at most the
    // limit per key), no bitmap (which collects before it returns), no sequential scan, and the
    // UPDATE finds the claimed rows by the primary key, not by a join whose plan rests on an
    // estimate of them.
    assertOnlyTheKeysMergeSorts(plan, "k.seq", 1);
    assertFalse(plan.contains("Bitmap"), plan);
    assertFalse(plan.contains("Seq Scan"), plan);
    assertFalse(plan.contains("Materialize"), plan);
    // The claimed seqs as an InitPlan's result: printed "(InitPlan n).col1" since 17, "$n" before.
    assertTrue(plan.matches("(?s).*Index Cond: \\(seq = ANY \\((\\(InitPlan|\\$\\d).*"), plan);
    if (request.ordered()) {
      // Every predecessor probe (the candidate's and the claimable check's) reads the aggregate
      // index, forwards, up to its first match: both due indexes share a predicate, and probing
      // the (seq) one by range would read every earlier due row per candidate (finding 10).
      assertFalse(plan.matches("(?s).*using outbox_due_key_seq_idx on outbox p.*"), plan);
      assertTrue(
          plan.matches("(?s).*Index Scan using outbox_due_aggregate_idx on outbox p\\b.*"), plan);
      assertTrue(
          plan.matches("(?s).*Index Scan using outbox_due_aggregate_idx on outbox p_1.*"), plan);
    }
  }

  /**
   * A candidate whose aggregate's first row is due and not its claimer's asks whether another
   * session holds that row locked: one step of the primary key, only for such candidates (a
   * one-time filter for the others). Here the claim reaches past the first row of each aggregate
   * (limit 2,000 over 1,000 aggregates beyond the 1,500 rows relay-1 holds), so the step runs.
   */
  @ParameterizedTest(name = "{0}")
  @EnumSource(Statistics.class)
  void aCandidateBehindADueRowAsksAfterItByThePrimaryKey(Statistics statistics)
      throws SQLException {
    String plan =
        explain(
            statistics,
            new ClaimRequest("relay-1", Set.of("eu"), 2000, Duration.ofMinutes(5), 10, true, null));
    assertTrue(plan.contains("One-Time Filter: earlier.due"), plan);
    java.util.regex.Matcher head =
        Pattern.compile("Index Scan using outbox_pkey on outbox h .*").matcher(plan);
    assertTrue(head.find(), plan);
    assertFalse(head.group().contains("never executed"), plan);
    assertFalse(plan.contains("Seq Scan"), plan);
  }

  /**
   * The look for an abandoned row (a few times per lease, and after a stop ends its leases) and the
   * claim of one it found read the unsettled rows in seq order by the due index up to the first
   * expired lease, and probe an ordered candidate's aggregate by the aggregate index: nothing that
   * sorts or collects the backlog. Here nothing has expired, the common case, so they read every
   * unsettled row and find none.
   */
  @ParameterizedTest(name = "{0}, {1}, ordered: {2}")
  @MethodSource("abandonedProbes")
  void theAbandonedRowProbeReadsTheDueIndexInOrder(
      Statistics statistics, ProbeKind kind, boolean ordered) throws SQLException {
    OutboxSql sql = new OutboxSql(TABLE);
    NamedSql probe =
        switch (kind) {
          case CLAIM -> ordered ? sql.claimAbandonedOrdered : sql.claimAbandonedUnordered;
          case FIND -> ordered ? sql.findAbandonedOrdered : sql.findAbandonedUnordered;
        };
    String plan;
    try (Connection c = dataSources.get(statistics).getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                PostgresOutboxStore.planned(
                    OutboxSql.CLAIM_PLAN, "EXPLAIN (ANALYZE, TIMING OFF) " + probe.jdbc()))) {
      c.setAutoCommit(false);
      bindProbe(probe.bind(ps), probe, c.createArrayOf("text", new String[] {"eu"}));
      plan = plan(ps);
      c.rollback();
    }
    assertTrue(plan.contains("Index Scan using outbox_due_key_seq_idx on outbox o"), plan);
    // Only the claim orders the keys' rows (the look has no ORDER BY k.seq: any row will do).
    assertOnlyTheKeysMergeSorts(plan, "k.seq", kind == ProbeKind.CLAIM ? 1 : 0);
    assertFalse(plan.contains("Bitmap"), plan);
    assertFalse(plan.contains("Seq Scan"), plan);
    if (ordered) {
      assertFalse(plan.matches("(?s).*using outbox_due_key_seq_idx on outbox p.*"), plan);
      assertTrue(plan.matches("(?s).*using outbox_due_aggregate_idx on outbox p\\b.*"), plan);
    } else {
      assertFalse(plan.contains(" on outbox p"), "no aggregate probed\n" + plan);
    }
  }

  /** The look for an abandoned row ({@code FIND}, read only) and its claim. */
  enum ProbeKind {
    FIND,
    CLAIM
  }

  static Stream<Arguments> abandonedProbes() {
    return Stream.of(Statistics.values())
        .flatMap(
            statistics ->
                Stream.of(ProbeKind.values())
                    .flatMap(
                        kind ->
                            Stream.of(
                                Arguments.of(statistics, kind, true),
                                Arguments.of(statistics, kind, false))));
  }

  /**
   * Publishing finds each acknowledged row by its seq, the primary key (a bigint probe), not by its
   * message id's text index (measured 15-29 % less time per publish, docs/benchmarks.md), and joins
   * the acks without a nested loop: on statistics taken with no row in flight, a nested loop
   * compared the table (or every acked row) with every ack.
   */
  @ParameterizedTest
  @EnumSource(Statistics.class)
  void aPublishFindsItsRowsByThePrimaryKeyAndHashesItsAcks(Statistics statistics)
      throws SQLException {
    List<ClaimedMessage> acked = inFlight.get(statistics).subList(0, 400);
    OutboxSql sql = new OutboxSql(TABLE);
    // The one sent after a lock wait too: it may move a batch of a thousand rows.
    for (NamedSql publish : List.of(sql.markPublishedBatch, sql.markPublishedSkippingLocked)) {
      String plan =
          explainUnderAcksPlan(
              statistics,
              publish,
              acked,
              (c, statement) ->
                  statement
                      .setArray("kafka_topics", c.createArrayOf("text", column(acked, m -> "t")))
                      .setArray(
                          "kafka_partitions", c.createArrayOf("integer", column(acked, m -> 0)))
                      .setArray(
                          "kafka_offsets",
                          c.createArrayOf("bigint", column(acked, ClaimedMessage::seq))));
      assertFindsRowsByThePrimaryKeyAlone(plan);
      assertTrue(
          plan.matches("(?s).*Delete on outbox o(_\\d)?  \\([^\n]*actual rows=400 loops=1\\).*"),
          "publishes every acked row: " + plan);
    }
  }

  /**
   * A renewal finds its rows as a publish does, and locks them (skipping any another session holds)
   * by the primary key too.
   */
  @ParameterizedTest
  @EnumSource(Statistics.class)
  void aRenewalFindsItsRowsByThePrimaryKeyAndHashesItsLeases(Statistics statistics)
      throws SQLException {
    String plan =
        explainUnderAcksPlan(
            statistics,
            new OutboxSql(TABLE).renew,
            inFlight.get(statistics),
            (c, renew) -> renew.setLong("lease_ms", 60_000));
    assertFindsRowsByThePrimaryKeyAlone(plan);
    String locking = plan.substring(plan.indexOf("CTE unlocked"), plan.indexOf("CTE renewed"));
    assertTrue(
        locking.contains("LockRows") && locking.contains("outbox_pkey"),
        "locks the held rows by the primary key: " + plan);
    String renewing = plan.substring(plan.indexOf("CTE renewed"));
    assertTrue(
        renewing.matches("(?s).*Update on outbox o_\\d  \\([^\n]*actual rows=1500 loops=1\\).*"),
        "renews every held row: " + plan);
  }

  /**
   * Rows past a task's byte budget given back, and a stopping task's leases ended, are found as a
   * renewal finds its rows: by the primary key, not by reading the backlog for the rows of the
   * task's owner (which no index holds).
   */
  @ParameterizedTest
  @EnumSource(Statistics.class)
  void aGiveBackAndEndingLeasesFindTheRowsByThePrimaryKey(Statistics statistics)
      throws SQLException {
    OutboxSql sql = new OutboxSql(TABLE);
    for (NamedSql statement : List.of(sql.giveBack, sql.expireLeases)) {
      String plan =
          explainUnderAcksPlan(
              statistics, statement, inFlight.get(statistics).subList(0, 300), (c, s) -> {});
      assertFindsRowsByThePrimaryKeyAlone(plan);
      assertTrue(
          plan.matches("(?s).*Update on outbox o(_\\d)?  \\([^\n]*actual rows=300 loops=1\\).*"),
          "changes every row named: " + plan);
    }
  }

  static List<String> planSettings() {
    return List.of(
        OutboxSql.CLAIM_PLAN, OutboxSql.ACKS_PLAN, OutboxSql.PUBLISH_PLAN, OutboxSql.SWEEP_PLAN);
  }

  /**
   * A statement run behind switched-off plan steps runs without JIT: a step the plan still needs
   * costs 10^10 up to PostgreSQL 17, past every jit_above_cost, and a server built with LLVM then
   * compiled every claim, renewal and publish (a claim of 500 rows: 692 ms instead of 8 ms on
   * PostgreSQL 15). The embedded server has no LLVM, so the setting, not the timing, is checked.
   */
  @ParameterizedTest
  @MethodSource("planSettings")
  void statementsBehindPlanSettingsRunWithoutJit(String settings) throws SQLException {
    try (Connection c = dataSources.get(Statistics.FRESH).getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                PostgresOutboxStore.planned(
                    settings,
                    "SELECT current_setting('jit'), current_setting('jit_above_cost')"))) {
      c.setAutoCommit(false);
      try (java.sql.ResultSet rs = PostgresOutboxStore.planned(ps)) {
        assertTrue(rs.next());
        assertEquals("off", rs.getString(1));
      }
      c.rollback();
    }
    try (Connection c = dataSources.get(Statistics.FRESH).getConnection();
        java.sql.Statement s = c.createStatement();
        java.sql.ResultSet rs = s.executeQuery("SELECT current_setting('jit')")) {
      assertTrue(rs.next());
      assertEquals("on", rs.getString(1), "the pooled connection keeps the server's setting");
    }
  }

  /**
   * An exactly-once batch's parks, one statement for the batch, find their rows as a publish does:
   * by the primary key, the parks hashed, not compared with every row.
   */
  @ParameterizedTest
  @EnumSource(Statistics.class)
  void aBatchsParksFindTheirRowsByThePrimaryKey(Statistics statistics) throws SQLException {
    List<ClaimedMessage> parked = inFlight.get(statistics).subList(0, 300);
    String plan =
        explainUnderAcksPlan(
            statistics,
            new OutboxSql(TABLE).park,
            parked,
            (c, park) ->
                park.setArray("reasons", c.createArrayOf("text", column(parked, m -> "POISON"))));
    assertFindsRowsByThePrimaryKeyAlone(plan);
    assertTrue(
        plan.contains("Update on outbox o  (") && plan.contains("actual rows=300 loops=1"),
        "parks every row named: " + plan);
  }

  /** ... and so do the rows a lost reply's parks are looked up by. */
  @ParameterizedTest
  @EnumSource(Statistics.class)
  void theRowsOfParksWhoseReplyWasLostAreFoundByThePrimaryKey(Statistics statistics)
      throws SQLException {
    List<ClaimedMessage> rows = inFlight.get(statistics).subList(0, 300);
    String plan =
        explainUnderAcksPlan(
            statistics,
            new OutboxSql(TABLE).parkedUnderOwnLease,
            rows,
            (c, check) ->
                check
                    .setArray("reasons", c.createArrayOf("text", column(rows, m -> "POISON")))
                    .setArray("epochs", c.createArrayOf("bigint", column(rows, m -> 1L)))
                    .setArray("batches", c.createArrayOf("bigint", column(rows, m -> 1L))));
    assertFindsRowsByThePrimaryKeyAlone(plan);
  }

  /** ... and so do the rows whose dead-letter records' positions are recorded. */
  @ParameterizedTest
  @EnumSource(Statistics.class)
  void theRowsOfDeadLetterPositionsAreFoundByThePrimaryKey(Statistics statistics)
      throws SQLException {
    List<ClaimedMessage> rows = inFlight.get(statistics).subList(0, 300);
    String plan =
        explainUnderAcksPlan(
            statistics,
            new OutboxSql(TABLE).recordDeadLetterCopies,
            rows,
            (c, record) -> {
              try (PreparedStatement park =
                  c.prepareStatement(
                      "UPDATE outbox SET status = 'FAILED', parked_at = now(), lease_owner = NULL,"
                          + " lease_expires_at = NULL, lease_epoch = 1, claim_batch = 1"
                          + " WHERE seq = ANY (?)")) {
                park.setArray(1, c.createArrayOf("bigint", column(rows, ClaimedMessage::seq)));
                assertEquals(300, park.executeUpdate(), "parked, in the explain's transaction");
              }
              record
                  .setArray("epochs", c.createArrayOf("bigint", column(rows, m -> 1L)))
                  .setArray("batches", c.createArrayOf("bigint", column(rows, m -> 1L)))
                  .setArray("topics", c.createArrayOf("text", column(rows, m -> "dlq")))
                  .setArray("partitions", c.createArrayOf("integer", column(rows, m -> 0)))
                  .setArray("offsets", c.createArrayOf("bigint", column(rows, m -> 5L)));
            });
    assertFindsRowsByThePrimaryKeyAlone(plan);
    assertTrue(
        plan.contains("Update on outbox o  (") && plan.contains("actual rows=300 loops=1"),
        "records every position named: " + plan);
  }

  /**
   * The release of a claim whose result was lost reads one page of its key's rows awaiting delivery
   * along the (instance_key, seq) due index, from where the last page ended, none of another key's
   * nor a legacy row, and releases the rows it finds by the primary key: no statement reads the
   * key's whole backlog (which could outlast the statement timeout at every attempt, as a bitmap of
   * it did), none sorts it. For a key of a few rows (us) and for one of most of the table (paused):
   * the primary key also returns a key's rows in seq order, and read from the start it filtered out
   * every legacy row and every other key's before the first of its own.
   */
  @ParameterizedTest(name = "key {0}")
  @ValueSource(strings = {"us", "paused"})
  void aLostClaimsReleaseReadsOnePageOfTheKeysDueIndex(String key) throws SQLException {
    NamedSql release = new OutboxSql(TABLE).releaseUnheld;
    String plan;
    try (Connection c = shared.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                PostgresOutboxStore.planned(
                    OutboxSql.CLAIM_PLAN, "EXPLAIN (ANALYZE, TIMING OFF) " + release.jdbc()))) {
      c.setAutoCommit(false);
      leaseFirst150Of(c, key); // the lost claim's rows, rolled back
      release
          .bind(ps)
          .setString("instance_key", key)
          .setString("owner", "relay-1")
          .setArray("held_seqs", c.createArrayOf("bigint", new Long[] {1L}))
          .setLong("handed_through", 0)
          .setLong("after_seq", Long.MIN_VALUE)
          .setInt("page_rows", 200);
      plan = plan(ps);
      c.rollback();
    }
    assertReadsOnePageOfTheKeyAndUpdatesByThePrimaryKey(plan, key);
  }

  static Stream<Arguments> recoveries() {
    return Stream.of("us", "paused")
        .flatMap(key -> Stream.of(Arguments.of(false, key), Arguments.of(true, key)));
  }

  /**
   * An exactly-once recovery or sweep reads one page of its key's rows awaiting delivery along the
   * (instance_key, seq) due index, from where the last page ended, none of another key's nor a
   * legacy row, and settles the rows it finds by the primary key: no statement reads the key's
   * whole backlog (one over every due row outlasted the statement timeout behind tens of millions),
   * none sorts it. Here 150 rows leased by an at-least-once claim (no epoch: lower than any), in a
   * transaction rolled back, and a page of 200; for a small key and a large one, as a release.
   */
  @ParameterizedTest(name = "in a share: {0}, key {1}")
  @MethodSource("recoveries")
  void aRecoveryPageReadsOnePageOfTheKeysDueIndex(boolean inShare, String key) throws SQLException {
    OutboxSql sql = new OutboxSql(TABLE);
    NamedSql recover = inShare ? sql.recoverInShare : sql.recover;
    String plan;
    try (Connection c = shared.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                PostgresOutboxStore.planned(
                    OutboxSql.CLAIM_PLAN, "EXPLAIN (ANALYZE, TIMING OFF) " + recover.jdbc()))) {
      c.setAutoCommit(false);
      leaseFirst150Of(c, key);
      NamedSql.Binder binder =
          recover
              .bind(ps)
              .set("now", (statement, index) -> statement.setNull(index, Types.VARCHAR))
              .setArray("committed_keys", c.createArrayOf("text", new String[0]))
              .setArray("committed_buckets", c.createArrayOf("integer", new Integer[0]))
              .setArray("committed_epochs", c.createArrayOf("bigint", new Long[0]))
              .setArray("committed_batches", c.createArrayOf("bigint", new Long[0]))
              .setArray("committed_seqs", c.createArrayOf("bigint", new Long[0]))
              .setString("instance_key", key)
              .setLong("after_seq", Long.MIN_VALUE)
              .setInt("page_rows", 200)
              .setLong("epoch", Long.MAX_VALUE)
              .setBoolean("expired_only", false)
              .setString("own_owners", "relay/task-")
              .setInt("max_attempts", 5)
              .setInt("buckets", 1);
      if (inShare) {
        binder.setInt("tasks", 1).setInt("tasks_minus_task", 1);
      }
      plan = plan(ps);
      c.rollback();
    }
    assertReadsOnePageOfTheKeyAndUpdatesByThePrimaryKey(plan, key);
  }

  /** In {@code c}'s transaction, the first 150 rows of the key leased to relay-1 (no epoch). */
  private static void leaseFirst150Of(Connection c, String key) throws SQLException {
    try (Statement lease = c.createStatement()) {
      lease.execute(
          "UPDATE outbox SET status = 'IN_FLIGHT', lease_owner = 'relay-1',"
              + " lease_expires_at = now() + interval '1 minute', lease_token = lease_token + 1"
              + " WHERE seq IN (SELECT seq FROM outbox WHERE instance_key = '"
              + key
              + "' ORDER BY seq LIMIT 150)");
    }
  }

  /**
   * The plan of a statement that reads a page of 200 of the key's rows awaiting delivery along the
   * due index, and changes the 150 leased among them, found by the primary key: nothing else read,
   * no sort of the key's backlog.
   */
  private static void assertReadsOnePageOfTheKeyAndUpdatesByThePrimaryKey(String plan, String key) {
    assertTrue(plan.contains("Index Scan using outbox_due_key_seq_idx on outbox o"), plan);
    assertTrue(
        plan.contains(
            "Index Cond: ((instance_key >= '"
                + key
                + "'::text) AND (instance_key <= '"
                + key
                + "'::text) AND (seq > "),
        plan);
    assertTrue(plan.matches("(?s).*Limit .*actual rows=200 loops=1.*"), "one page: " + plan);
    assertTrue(plan.contains("Index Scan using outbox_pkey on outbox o_1"), plan);
    assertTrue(plan.matches("(?s).*Update on outbox o_\\d .*actual rows=150 loops=1.*"), plan);
    Matcher removed = Pattern.compile("Rows Removed by Filter: (\\d+)").matcher(plan);
    while (removed.find()) {
      assertTrue(Long.parseLong(removed.group(1)) <= 200, "only the page's rows read: " + plan);
    }
    assertFalse(plan.contains("Seq Scan"), plan);
    assertFalse(plan.contains("Bitmap"), plan);
    assertFalse(plan.contains("Sort"), plan);
  }

  /**
   * Retention of rows published before schema version 9, still in the table, sorts nothing: for
   * several keys the settled index cannot return them by published_at, and each batch sorted every
   * row past the cutoff (tens of millions where retention was lowered, past the statement timeout).
   */
  @Test
  void retentionOfRowsPublishedInTheTableSortsNothing() throws SQLException {
    NamedSql delete = new OutboxSql(TABLE).deletePublished;
    String plan;
    try (Connection c = dataSources.get(Statistics.FRESH).getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                // in the transaction of the log's delete, under its planner settings
                PostgresOutboxStore.planned(OutboxSql.CLAIM_PLAN, "EXPLAIN " + delete.jdbc()))) {
      c.setAutoCommit(false);
      delete
          .bind(ps)
          .setArray("instance_keys", c.createArrayOf("text", new String[] {"eu", "us"}))
          .setObject(
              "published_before", java.time.OffsetDateTime.now(), Types.TIMESTAMP_WITH_TIMEZONE)
          .setInt("limit", 1000);
      plan = plan(ps);
      c.rollback();
    }
    assertTrue(plan.contains("Index Scan using outbox_settled_idx"), plan);
    assertFalse(plan.contains("Sort"), plan);
  }

  /** Binds what one statement has beyond the leases the others share. */
  @FunctionalInterface
  private interface Binding {
    void bind(Connection c, NamedSql.Binder statement) throws SQLException;
  }

  /**
   * The plan of a publish or a renewal of {@code rows}, run and rolled back, planned as the store
   * plans it ({@link OutboxSql#ACKS_PLAN}).
   */
  private static String explainUnderAcksPlan(
      Statistics statistics, NamedSql statement, List<ClaimedMessage> rows, Binding rest)
      throws SQLException {
    try (Connection c = dataSources.get(statistics).getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                PostgresOutboxStore.planned(
                    OutboxSql.ACKS_PLAN, "EXPLAIN (ANALYZE, TIMING OFF) " + statement.jdbc()))) {
      c.setAutoCommit(false);
      NamedSql.Binder binder = statement.bind(ps);
      if (statement.names().contains("now")) {
        binder.setObject("now", null, Types.TIMESTAMP_WITH_TIMEZONE);
      }
      binder
          .setArray("seqs", c.createArrayOf("bigint", column(rows, ClaimedMessage::seq)))
          .setArray("message_ids", c.createArrayOf("text", column(rows, ClaimedMessage::messageId)))
          .setArray("tokens", c.createArrayOf("bigint", column(rows, m -> m.lease().token())))
          .setArray("instance_keys", c.createArrayOf("text", new String[] {"eu"}));
      if (statement.names().contains("owners")) { // not in a lookup by the token alone
        binder.setArray("owners", c.createArrayOf("text", column(rows, m -> m.lease().owner())));
      }
      rest.bind(c, binder);
      String plan = plan(ps);
      c.rollback();
      return plan;
    }
  }

  private static void assertFindsRowsByThePrimaryKeyAlone(String plan) {
    assertTrue(plan.matches("(?s).*Index Cond: \\(seq = ANY .*"), plan);
    assertTrue(plan.contains("outbox_pkey"), plan);
    assertFalse(plan.contains("outbox_message_id_key"), plan);
    assertFalse(plan.contains("Seq Scan"), plan);
    assertFalse(plan.contains("Nested Loop"), "no row compared with every ack: " + plan);
  }

  private static Object[] column(
      List<ClaimedMessage> rows, Function<ClaimedMessage, Object> field) {
    return rows.stream().map(field).toArray();
  }

  /**
   * The plan sorts nothing but the first rows of each instance key, a limit's worth per key, into
   * one seq order: one sort, by {@code key}, right under the statement's limit.
   */
  /** The step reads the (instance_key, seq) due index by an index scan of the outbox. */
  private static boolean readsTheDueKeyIndex(String step) {
    return step.matches("(?s).*Index Scan using outbox_due_key_seq_idx on outbox o_\\d.*");
  }

  private static void assertOnlyTheKeysMergeSorts(String plan, String key, int expected) {
    List<String> lines = List.of(plan.split("\n"));
    List<Integer> sorts = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).contains("Sort")
          && !lines.get(i).contains("Sort Key")
          && !lines.get(i).contains("Sort Method")) {
        sorts.add(i);
      }
    }
    assertEquals(expected, sorts.size(), plan);
    for (int sort : sorts) {
      // Under its Limit, or under the window that counts the candidates' bytes against the read
      // room (WITHIN_ROOM), which shares its order, under the Limit.
      assertTrue(
          lines.get(sort - 1).contains("Limit")
              || (lines.get(sort - 1).contains("WindowAgg")
                  && lines.get(sort - 2).contains("Limit")),
          plan);
      // The quota's subquery is flattened: its sort is by the scan's own seq.
      assertTrue(lines.get(sort + 1).strip().matches("Sort Key: (" + key + "|o_\\d+\\.seq)"), plan);
    }
  }

  /** The plan of the candidate CTE: how rows are found. */
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
  void aClaimCommitsAsItsModeNeedsAndLeavesTheSessionAsItWas(String name, ClaimRequest request)
      throws SQLException {
    PostgresOutboxStore store = stores.get(Statistics.FRESH);
    try (Connection c = dataSources.get(Statistics.FRESH).getConnection()) {
      assertEquals("on", show(c));
      c.setAutoCommit(false);
      claimOneRow(c, store, request);
      // An exactly-once claim waits for its flush: lost in a crash after its records were
      // committed to Kafka, it would make the rows due again (docs/design.md, claim 4).
      assertEquals(
          request.exactlyOnce() == null ? "off" : "on", show(c), "the claim's own transaction");
      c.rollback();
      c.setAutoCommit(true);
      assertEquals("on", show(c), "the pooled connection after the claim");
    }
  }

  /**
   * Where the server, database or role turned synchronous_commit off, the writes whose loss in a
   * crash would break exactly-once recovery still wait for their local flush: an exactly-once claim
   * (its rows would be due again although Kafka has their records) and a park (a row parked before
   * its batch's offsets covered it would be recorded PUBLISHED, unsent). Other claims stay off.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("claims")
  void onAServerThatDoesNotWaitForFlushesExactlyOnceClaimsStillDo(String name, ClaimRequest request)
      throws SQLException {
    PostgresOutboxStore store = stores.get(Statistics.FRESH);
    try (Connection c = dataSources.get(Statistics.FRESH).getConnection()) {
      c.setAutoCommit(false);
      execute(c, "SET LOCAL synchronous_commit = off"); // as a server, database or role may
      claimOneRow(c, store, request);
      assertEquals(request.exactlyOnce() == null ? "off" : "local", show(c));
      c.rollback();
    }
  }

  @Test
  void onAServerThatDoesNotWaitForFlushesAParkStillDoes() throws SQLException {
    ClaimedMessage held = inFlight.get(Statistics.FRESH).get(0);
    try (Connection c = dataSources.get(Statistics.FRESH).getConnection()) {
      c.setAutoCommit(false);
      execute(c, "SET LOCAL synchronous_commit = off");
      try (PreparedStatement ps = c.prepareStatement(new OutboxSql(TABLE).markFailed.jdbc())) {
        new OutboxSql(TABLE)
            .markFailed
            .bind(ps)
            .setObject("now", null, Types.TIMESTAMP_WITH_TIMEZONE)
            .setString("reason", "POISON")
            .setString("dead_letter_topic", null)
            .setObject("dead_letter_partition", null, Types.INTEGER)
            .setObject("dead_letter_offset", null, Types.BIGINT)
            .setString("message_id", held.messageId())
            .setString("owner", held.lease().owner())
            .setLong("token", held.lease().token())
            .setArray("instance_keys", c.createArrayOf("text", new String[] {"eu"}))
            .ready();
        assertEquals(1, ps.executeUpdate(), "parks the row");
      }
      assertEquals("local", show(c));
      c.rollback();
    }
  }

  /** ... and so does a batch's parks, in one statement. */
  @Test
  void onAServerThatDoesNotWaitForFlushesABatchsParksStillDo() throws SQLException {
    List<ClaimedMessage> held = inFlight.get(Statistics.FRESH).subList(2, 4);
    NamedSql park = new OutboxSql(TABLE).park;
    try (Connection c = dataSources.get(Statistics.FRESH).getConnection()) {
      c.setAutoCommit(false);
      execute(c, "SET LOCAL synchronous_commit = off");
      try (PreparedStatement ps = c.prepareStatement(park.jdbc())) {
        park.bind(ps)
            .setObject("now", null, Types.TIMESTAMP_WITH_TIMEZONE)
            .setArray("seqs", c.createArrayOf("bigint", column(held, ClaimedMessage::seq)))
            .setArray(
                "message_ids", c.createArrayOf("text", column(held, ClaimedMessage::messageId)))
            .setArray("owners", c.createArrayOf("text", column(held, m -> m.lease().owner())))
            .setArray("tokens", c.createArrayOf("bigint", column(held, m -> m.lease().token())))
            .setArray("reasons", c.createArrayOf("text", column(held, m -> "POISON")))
            .setArray("instance_keys", c.createArrayOf("text", new String[] {"eu"}));
        int parked = 0;
        try (java.sql.ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            parked++;
          }
        }
        assertEquals(2, parked, "parks both rows");
      }
      assertEquals("local", show(c));
      c.rollback();
    }
  }

  /**
   * Likewise an exactly-once row's publish: lost in a crash, the row would stay in flight, and its
   * aggregate behind it, until the next start (its recovery records it from the offsets). An
   * at-least-once publish keeps the server's setting.
   */
  @ParameterizedTest(name = "exactly once: {0}")
  @ValueSource(booleans = {true, false})
  void onAServerThatDoesNotWaitForFlushesAnExactlyOncePublishStillDoes(boolean exactlyOnce)
      throws SQLException {
    ClaimedMessage held = inFlight.get(Statistics.FRESH).get(1);
    writeOnAServerThatDoesNotWaitForFlushes(
        held,
        exactlyOnce,
        (c, sql) -> {
          try (PreparedStatement ps = c.prepareStatement(sql.markPublishedBatch.jdbc())) {
            sql.markPublishedBatch
                .bind(ps)
                .setObject("now", null, Types.TIMESTAMP_WITH_TIMEZONE)
                .setArray("message_ids", c.createArrayOf("text", new String[] {held.messageId()}))
                .setArray("seqs", c.createArrayOf("bigint", new Long[] {held.seq()}))
                .setArray("owners", c.createArrayOf("text", new String[] {held.lease().owner()}))
                .setArray("tokens", c.createArrayOf("bigint", new Long[] {held.lease().token()}))
                .setArray("kafka_topics", c.createArrayOf("text", new String[] {"t"}))
                .setArray("kafka_partitions", c.createArrayOf("integer", new Integer[] {0}))
                .setArray("kafka_offsets", c.createArrayOf("bigint", new Long[] {1L}))
                .setArray("instance_keys", c.createArrayOf("text", new String[] {"eu"}))
                .ready();
            try (ResultSet rs = ps.executeQuery()) {
              assertTrue(rs.next(), "publishes the row");
            }
          }
        });
  }

  /**
   * Likewise an exactly-once row's retry (a record a transform dropped): lost in a crash, its row
   * would be in flight again at a position Kafka committed, and recovery would record it PUBLISHED,
   * unsent. An at-least-once retry keeps the server's setting.
   */
  @ParameterizedTest(name = "exactly once: {0}")
  @ValueSource(booleans = {true, false})
  void onAServerThatDoesNotWaitForFlushesAnExactlyOnceRetryStillDoes(boolean exactlyOnce)
      throws SQLException {
    ClaimedMessage held = inFlight.get(Statistics.FRESH).get(2);
    writeOnAServerThatDoesNotWaitForFlushes(
        held,
        exactlyOnce,
        (c, sql) -> {
          try (PreparedStatement ps = c.prepareStatement(sql.retryLater.jdbc())) {
            sql.retryLater
                .bind(ps)
                .setObject("now", null, Types.TIMESTAMP_WITH_TIMEZONE)
                .setInt("max_attempts", 10)
                .setString("reason", "NULL_METADATA")
                .setLong("delay_ms", 1_000)
                .setString("message_id", held.messageId())
                .setString("owner", held.lease().owner())
                .setLong("token", held.lease().token())
                .setArray("instance_keys", c.createArrayOf("text", new String[] {"eu"}))
                .ready();
            try (ResultSet rs = ps.executeQuery()) {
              assertTrue(rs.next(), "retries the row");
            }
          }
        });
  }

  /** A write of the outcome of a row held in flight, in the caller's open transaction. */
  private interface OutcomeWrite {
    void run(Connection c, OutboxSql sql) throws SQLException;
  }

  /**
   * Runs {@code write} where synchronous_commit is off, {@code held}'s row under an exactly-once
   * lease or not, and checks the commit it asks for: at least local for an exactly-once row, the
   * server's own otherwise. Rolled back.
   */
  private static void writeOnAServerThatDoesNotWaitForFlushes(
      ClaimedMessage held, boolean exactlyOnce, OutcomeWrite write) throws SQLException {
    try (Connection c = dataSources.get(Statistics.FRESH).getConnection()) {
      c.setAutoCommit(false);
      if (exactlyOnce) {
        execute(c, "UPDATE outbox SET lease_epoch = 1, claim_batch = 1 WHERE seq = " + held.seq());
      }
      execute(c, "SET LOCAL synchronous_commit = off");
      write.run(c, new OutboxSql(TABLE));
      assertEquals(exactlyOnce ? "local" : "off", show(c));
      c.rollback();
    }
  }

  /** Claims one row in {@code c}'s open transaction, as the store's claim would. */
  private static void claimOneRow(Connection c, PostgresOutboxStore store, ClaimRequest request)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(store.claimStatement(request))) {
      store.bindClaim(c, ps, request.withLimit(1));
      try (ResultSet rs = ps.executeQuery()) {
        assertTrue(rs.next(), "claims a row");
      }
    }
  }

  private static void execute(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static String show(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW synchronous_commit")) {
      rs.next();
      return rs.getString(1);
    }
  }

  /** The claim's plan, run and rolled back: a plan's costs alone would not show a sort's rows. */
  private static String explain(Statistics statistics, ClaimRequest request) throws SQLException {
    PostgresOutboxStore store = stores.get(statistics);
    try (Connection c = dataSources.get(statistics).getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                PostgresOutboxStore.planned(
                    OutboxSql.CLAIM_PLAN,
                    "EXPLAIN (ANALYZE, TIMING OFF) " + store.claimStatement(request)))) {
      c.setAutoCommit(false);
      store.bindClaim(c, ps, request);
      String plan = plan(ps);
      c.rollback();
      return plan;
    }
  }

  /** The plan's lines, each bound array shortened to '{...}'. */
  static String plan(PreparedStatement explain) throws SQLException {
    StringBuilder plan = new StringBuilder();
    try (ResultSet rs = PostgresOutboxStore.planned(explain)) {
      while (rs.next()) {
        plan.append(rs.getString(1).replaceAll("'\\{[^']*}'", "'{...}'")).append('\n');
      }
    }
    return plan.toString();
  }
}
