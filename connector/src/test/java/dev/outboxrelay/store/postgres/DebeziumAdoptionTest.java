package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.DebeziumOutboxTable;
import dev.outboxrelay.testing.Postgres;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The adoption of a Debezium outbox table (created exactly as Debezium's documentation shows) as
 * PostgreSQL carries it out: nothing rewritten, no row changed, rows already there left to
 * Debezium, new rows the relay's, claims reading the relay's partial indexes only.
 */
class DebeziumAdoptionTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");
  private static final String KEY = "orders";
  private static final int LEGACY_ROWS = 2_000;

  private HikariDataSource dataSource;

  @BeforeEach
  void debeziumTable() throws SQLException {
    dataSource = Postgres.pool(Postgres.freshDatabase("adopt"), 3);
    execute(DebeziumOutboxTable.CREATE);
    execute(
        "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)"
            + " SELECT gen_random_uuid(), 'order', 'o-' || (i % 50), 'OrderCreated',"
            + " jsonb_build_object('n', i) FROM generate_series(1, "
            + LEGACY_ROWS
            + ") AS i");
  }

  @AfterEach
  void close() {
    dataSource.close();
  }

  @Test
  void addsTheRelaysStateWithoutRewritingTheTableOrChangingARow() throws SQLException {
    long fileBefore = single("SELECT pg_relation_filenode('outbox')");
    List<String> rowsBefore = rowVersions();

    adopt();

    assertEquals(fileBefore, single("SELECT pg_relation_filenode('outbox')"), "no rewrite");
    assertEquals(rowsBefore, rowVersions(), "every row where it was, in the version it was");
    assertEquals(
        LEGACY_ROWS,
        single(
            "SELECT count(*) FROM outbox WHERE instance_key IS NULL AND seq IS NULL"
                + " AND published_at IS NULL AND payload IS NOT NULL"),
        "Debezium's rows are legacy rows, their payload kept");
    assertEquals(
        0,
        single(
            "SELECT count(*) FROM pg_index WHERE indrelid = 'outbox'::regclass"
                + " AND NOT indisvalid"),
        "every index built");
  }

  @Test
  void newRowsAreTheRelaysAndTheOnlyOnesItClaims() throws SQLException {
    adopt();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      UUID id = UUID.randomUUID();
      ids.add(id.toString());
      execute(
          "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES ('"
              + id
              + "', 'order', 'o-1', 'OrderPaid', '{\"amount\": "
              + i
              + "}')");
    }
    assertEquals(
        3, single("SELECT count(*) FROM outbox WHERE instance_key = 'orders' AND seq IS NOT NULL"));

    PostgresOutboxStore store = store();
    ClaimResult claim = store.claim(request(true));
    List<String> claimed = claim.claimed().stream().map(ClaimedMessage::messageId).toList();
    assertEquals(ids, claimed, "the aggregate's rows, in order");
    ClaimedMessage row = claim.claimed().get(0);
    assertEquals("order", row.aggregateType());
    assertEquals("o-1", row.aggregateId());
    assertEquals("OrderPaid", row.eventType());
    assertEquals("{\"amount\": 0}", new String(row.payload(), StandardCharsets.UTF_8));
    assertNotNull(row.createdAt());

    assertEquals(
        List.of(),
        store.claim(request(false)).claimed(),
        "nothing more to claim: never a legacy row");
    assertEquals(
        LEGACY_ROWS,
        single("SELECT count(*) FROM outbox WHERE instance_key IS NULL AND status = 'PENDING'"));
  }

  /**
   * docs/switching-from-debezium.md: a cleanup job limited to legacy rows leaves the relay's rows
   * that wait (its backlog, a parked row); a legacy row can be deleted, not updated.
   */
  @Test
  void aCleanupLimitedToLegacyRowsLeavesTheRelaysRowsAndALegacyRowIsNotUpdatable()
      throws SQLException {
    adopt();
    execute(
        "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES"
            + " (gen_random_uuid(), 'order', 'o-1', 'OrderPaid', '{}'),"
            + " (gen_random_uuid(), 'order', 'o-2', 'OrderPaid', '{}')");
    execute(
        "UPDATE outbox SET status = 'FAILED', last_failure_code = 'PAYLOAD_TOO_LARGE'"
            + " WHERE seq = (SELECT min(seq) FROM outbox WHERE instance_key = 'orders')");
    SQLException refused =
        assertThrows(
            SQLException.class,
            () ->
                execute(
                    "UPDATE outbox SET payload = '{}' WHERE id = (SELECT id FROM outbox"
                        + " WHERE instance_key IS NULL LIMIT 1)"));
    assertEquals("23514", refused.getSQLState(), "the version-2 check refuses it");

    execute("DELETE FROM outbox WHERE instance_key IS NULL"); // the documented cleanup, its limit

    assertEquals(0, single("SELECT count(*) FROM outbox WHERE instance_key IS NULL"));
    assertEquals(
        2,
        single("SELECT count(*) FROM outbox WHERE instance_key = 'orders'"),
        "the relay's pending and parked rows stay");
  }

  @Test
  void claimsReadThePartialIndexesWhichHoldNoLegacyRow() throws SQLException {
    adopt();
    execute("ANALYZE outbox");
    PostgresOutboxStore store = store();
    for (boolean ordered : new boolean[] {true, false}) {
      ClaimRequest request = request(ordered);
      StringBuilder plan = new StringBuilder();
      try (Connection c = dataSource.getConnection();
          PreparedStatement ps =
              c.prepareStatement(
                  PostgresOutboxStore.planned(
                      OutboxSql.CLAIM_PLAN, "EXPLAIN " + store.claimStatement(request)))) {
        c.setAutoCommit(false); // the plan's settings are local to the claim's transaction
        store.bindClaim(c, ps, request);
        try (ResultSet rs = PostgresOutboxStore.planned(ps)) {
          while (rs.next()) {
            plan.append(rs.getString(1)).append('\n');
          }
        }
        c.rollback();
      }
      assertTrue(
          plan.toString().contains("Index Scan using outbox_due_key_seq_idx"), plan::toString);
      assertFalse(plan.toString().contains("Seq Scan on outbox o"), plan::toString);
    }
    assertEquals(
        2,
        single(
            "SELECT count(*) FROM pg_indexes WHERE tablename = 'outbox'"
                + " AND indexname IN ('outbox_due_key_seq_idx', 'outbox_due_aggregate_idx')"
                + " AND indexdef LIKE '%instance_key IS NOT NULL%'"),
        "the due indexes leave legacy rows out");
  }

  @Test
  void theScriptQuotesWhatItIsGivenAndRefusesARoleItCannotQuote() {
    DebeziumAdoption adoption =
        new DebeziumAdoption(
            OutboxTable.parse("app.outbox"),
            "o'brien",
            DebeziumOutboxTable.COLUMNS,
            List.of("order-service"));
    String script = adoption.script("a test");
    assertTrue(script.contains("SET DEFAULT 'o''brien'"), script);
    assertTrue(
        script.contains("GRANT USAGE ON SEQUENCE \"app\".\"outbox_seq_seq\" TO \"order-service\""),
        script);
    assertTrue(script.contains("ON \"app\".\"outbox\" ((\"id\"::text))"), script);
    assertThrows(
        IllegalArgumentException.class,
        () ->
            new DebeziumAdoption(
                TABLE, KEY, DebeziumOutboxTable.COLUMNS, List.of("x\"; DROP TABLE outbox; --")));
    assertThrows(
        IllegalArgumentException.class,
        () -> new DebeziumAdoption(TABLE, " ", DebeziumOutboxTable.COLUMNS, List.of()));
  }

  /**
   * The key lands in the column default exactly: braces that look like the script's placeholders
   * stay as they are, and a backslash means itself even where standard_conforming_strings is off.
   */
  @Test
  void theInstanceKeyIsWrittenAsGivenWhateverItHolds() throws SQLException {
    String key = "eu {guard} {instance_key} \\x o'k";
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("SET standard_conforming_strings = off");
      for (String statement :
          new DebeziumAdoption(TABLE, key, DebeziumOutboxTable.COLUMNS, List.of()).statements()) {
        s.execute(statement);
      }
      s.execute("RESET standard_conforming_strings");
    }
    execute(
        "INSERT INTO outbox (id, aggregatetype, aggregateid, type) VALUES (gen_random_uuid(),"
            + " 'order', 'o-1', 'OrderPaid')");
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT instance_key FROM outbox WHERE instance_key IS NOT NULL")) {
      assertTrue(rs.next());
      assertEquals(key, rs.getString(1));
    }
  }

  /**
   * The index builds run after the catalog change's COMMIT without a statement timeout: one of the
   * role's or the database's cancelled a build on a large table, leaving an INVALID index at every
   * run again. (The catalog change keeps the session's, with its own lock timeout.)
   */
  @Test
  void theIndexBuildsRunWithoutAStatementTimeout() {
    List<String> statements =
        new DebeziumAdoption(TABLE, KEY, DebeziumOutboxTable.COLUMNS, List.of()).statements();
    int commit = statements.indexOf("COMMIT");
    int firstBuild = -1;
    int noTimeout = -1;
    for (int i = 0; i < statements.size(); i++) {
      if (firstBuild < 0 && statements.get(i).contains("CONCURRENTLY IF NOT EXISTS")) {
        firstBuild = i;
      }
      if (statements.get(i).endsWith("SET statement_timeout = 0")) {
        noTimeout = i;
      }
    }
    assertTrue(commit >= 0 && commit < noTimeout && noTimeout < firstBuild, statements::toString);
  }

  private void adopt() throws SQLException {
    DebeziumAdoption adoption =
        new DebeziumAdoption(TABLE, KEY, DebeziumOutboxTable.COLUMNS, List.of());
    for (String statement : adoption.statements()) {
      execute(statement);
    }
  }

  private PostgresOutboxStore store() {
    return new PostgresOutboxStore(
        dataSource, TABLE, DebeziumOutboxTable.COLUMNS, RelayClock.database(), null);
  }

  private static ClaimRequest request(boolean ordered) {
    return new ClaimRequest("relay-1", Set.of(KEY), 500, Duration.ofMinutes(5), 10, ordered, null);
  }

  /** Each row's place and version: a rewrite or an update would change them. */
  private List<String> rowVersions() throws SQLException {
    List<String> versions = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT ctid::text, xmin::text FROM outbox ORDER BY ctid")) {
      while (rs.next()) {
        versions.add(rs.getString(1) + "/" + rs.getString(2));
      }
    }
    return versions;
  }

  private long single(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private void execute(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
