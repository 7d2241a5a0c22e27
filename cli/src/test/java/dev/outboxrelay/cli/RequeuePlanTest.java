package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.cli.operator.OperatorStatements;
import dev.outboxrelay.cli.operator.ParkedAction;
import dev.outboxrelay.cli.operator.ParkedSelection;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.postgres.NamedSql;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A requeue by correlation id or of all parked rows, and the status command's oldest parked row,
 * find them through the index of parked rows (partial, WHERE parked_at IS NOT NULL), not by reading
 * the key's other rows: among many rows awaiting delivery, the parked few are read through it.
 */
class RequeuePlanTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");

  private static OutboxFixture outbox;
  private static List<String> parkedIndexes;

  @BeforeAll
  static void manyRowsAwaitingDelivery() throws SQLException {
    outbox = OutboxFixture.populated("requeue_plan");
    outbox.exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " topic, payload)"
            + " SELECT 'bulk-' || g, CASE WHEN g % 2 = 0 THEN 'eu' ELSE 'us' END, 'order',"
            + " 'bulk-' || g, 'OrderPlaced', 'orders', '\\x00'::bytea"
            + " FROM generate_series(1, 20000) g");
    outbox.exec("ANALYZE outbox");
    parkedIndexes = new ArrayList<>();
    try (Connection c = outbox.dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT indexrelid::regclass::text FROM pg_index"
                    + " WHERE indrelid = 'outbox'::regclass"
                    + " AND pg_get_expr(indpred, indrelid) = '(parked_at IS NOT NULL)'")) {
      while (rs.next()) {
        parkedIndexes.add(rs.getString(1));
      }
    }
    assertFalse(parkedIndexes.isEmpty(), "the schema has an index of parked rows");
  }

  @AfterAll
  static void close() {
    outbox.close();
  }

  @Test
  void allParkedRowsAreFoundThroughTheIndexOfParkedRows() throws SQLException {
    ParkedSelection.Selector all = ParkedSelection.Selector.ALL;
    for (ParkedAction action : ParkedAction.values()) {
      assertUsesParkedIndex(OperatorStatements.changeBatch(TABLE, action, all), null);
    }
    assertUsesParkedIndex(OperatorStatements.countParked(TABLE, all), null);
  }

  /**
   * Schema version 12 indexes parked rows by the first 200 characters of the correlation id: the
   * statements compare that prefix, so the index serves them.
   */
  @Test
  void parkedRowsOfACorrelationIdAreFoundThroughTheIndexOfParkedRows() throws SQLException {
    ParkedSelection.Selector correlation = ParkedSelection.Selector.CORRELATION_ID;
    for (NamedSql statement :
        List.of(
            OperatorStatements.changeBatch(TABLE, ParkedAction.REQUEUE, correlation),
            OperatorStatements.changeBatch(TABLE, ParkedAction.DISCARD, correlation),
            OperatorStatements.countParked(TABLE, correlation))) {
      String plan = assertUsesParkedIndex(statement, "c-1");
      assertTrue(
          plan.lines()
              .anyMatch(l -> l.contains("Index Cond:") && l.contains("(correlation_id, 200)")),
          plan);
    }
  }

  /**
   * The status command's oldest FAILED or EXHAUSTED row: without the index of parked rows, the
   * key's backlog was walked in seq order, the whole table when no row is parked.
   */
  @Test
  void theOldestParkedRowIsFoundThroughTheIndexOfParkedRows() throws SQLException {
    assertUsesParkedIndex(OperatorStatements.oldestWithStatus(TABLE), null);
  }

  /**
   * A page of FAILED or EXHAUSTED rows reads the index of parked rows, not the table in seq order
   * past every row of the key (the whole table when none has the status).
   */
  @Test
  void aPageOfParkedRowsReadsTheIndexOfParkedRows() throws SQLException {
    for (MessageStatus parked : List.of(MessageStatus.FAILED, MessageStatus.EXHAUSTED)) {
      assertUsesParkedIndex(OperatorStatements.list(TABLE, parked), null);
    }
  }

  /**
   * After an incident: the newest rows of a key parked, among many older rows of it awaiting
   * delivery, and statistics taken since. The status command's oldest parked row and a page of
   * parked rows still read the index of parked rows. With the key spelled as an equality, ordering
   * by seq alone, the planner took the key's parked rows to be spread evenly in seq order and
   * walked the primary key from the start, past every older row, for the first of them (found on 13
   * and 17: 845,000 rows read for the oldest of 5,000 parked).
   */
  @Test
  void afterAnIncidentTheParkedRowsAreStillReadThroughTheirIndex() throws SQLException {
    try (OutboxFixture incident = OutboxFixture.populated("requeue_incident")) {
      incident.exec(
          "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
              + " topic, payload)"
              + " SELECT 'row-' || g, 'eu', 'order', 'row-' || g, 'OrderPlaced', 'orders',"
              + " '\\x00'::bytea FROM generate_series(1, 25000) g");
      incident.exec(
          "UPDATE outbox SET status = 'EXHAUSTED', attempts = 10,"
              + " last_failure_code = 'PRODUCER_SEND_FAILED', parked_at = now()"
              + " WHERE seq IN (SELECT seq FROM outbox WHERE instance_key = 'eu'"
              + " ORDER BY seq DESC LIMIT 5000)");
      incident.exec("ANALYZE outbox");
      List<String> plans = new ArrayList<>();
      try (Connection c = incident.dataSource.getConnection()) {
        plans.add(
            explain(c, OperatorStatements.oldestWithStatus(TABLE), null, MessageStatus.EXHAUSTED));
        for (MessageStatus parked : List.of(MessageStatus.FAILED, MessageStatus.EXHAUSTED)) {
          plans.add(explain(c, OperatorStatements.list(TABLE, parked), null, parked));
        }
      }
      for (String plan : plans) {
        assertTrue(parkedIndexes.stream().anyMatch(plan::contains), plan);
        assertFalse(plan.contains("outbox_pkey"), plan);
        assertFalse(plan.contains("Seq Scan"), plan);
      }
    }
  }

  /**
   * A batch of a requeue or discard of every parked row reads its own rows along the (instance_key,
   * seq) index of parked rows (schema version 14), from the last batch's seq: with the correlation
   * id's index alone, each batch read every parked row of the key and sorted them (a million parked
   * rows, 100 batches: 100 million rows read); and the change finds the batch's rows by the primary
   * key, where a join with the selection read every parked row of the key. Here 4,000 parked rows
   * among 96,000 awaiting delivery, a batch of 1,000 from the middle, run and rolled back: without
   * the index the batch sorted the key's parked rows or walked the primary key past 24,000 others.
   */
  @Test
  void aBatchOfEveryParkedRowReadsItsOwnRowsInSeqOrder() throws SQLException {
    assertBatchReadsItsOwnRows(
        ParkedSelection.Selector.ALL, null, "Index Scan using outbox_parked_key_seq_idx");
  }

  /**
   * The same for a batch by correlation id, along the (instance_key, left(correlation_id, 200),
   * seq) index (schema version 15): with version 12's index (no seq), each batch read every parked
   * row of the correlation id past its cursor and sorted them, and a bulk job's million parked rows
   * under one correlation id took about 50 million row reads. Here the 4,000 parked rows share one.
   */
  @Test
  void aBatchOfACorrelationIdsParkedRowsReadsItsOwnRowsInSeqOrder() throws SQLException {
    assertBatchReadsItsOwnRows(
        ParkedSelection.Selector.CORRELATION_ID,
        "bulk-job",
        "Index Scan using outbox_parked_cid_seq_idx");
  }

  /**
   * A requeue or discard by message id changes its rows in seq order, found by the primary key, as
   * every other statement that waits for parked rows' locks takes them (a batched requeue or
   * discard, a park, the relay's dead-letter positions): found by the message id index and changed
   * in that order, two of them changing the same rows in opposite orders could deadlock.
   */
  @Test
  void aChangeByMessageIdTakesItsRowsInSeqOrder() throws SQLException {
    try (Connection c = outbox.dataSource.getConnection()) {
      for (ParkedAction action : ParkedAction.values()) {
        String plan = explain(c, OperatorStatements.changeMessageIds(TABLE, action), null, null);
        String change = cte(plan, "changed");
        assertTrue(
            Pattern.compile(
                    "Index Scan using outbox_pkey on outbox[^\\n]*\\n\\s*Index Cond: \\(seq = ANY")
                .matcher(change)
                .find(),
            action + " scans the primary key in seq order: " + plan);
        assertFalse(change.contains("Bitmap Heap Scan on outbox"), plan);
      }
    }
  }

  /** The lines of {@code plan}'s CTE {@code name}, up to the next CTE or the end. */
  private static String cte(String plan, String name) {
    StringBuilder lines = new StringBuilder();
    boolean in = false;
    for (String line : plan.lines().toList()) {
      if (line.trim().startsWith("CTE ")) {
        in = line.trim().equals("CTE " + name);
      }
      if (in) {
        lines.append(line).append('\n');
      }
    }
    assertFalse(lines.isEmpty(), "no CTE " + name + " in " + plan);
    return lines.toString();
  }

  private static void assertBatchReadsItsOwnRows(
      ParkedSelection.Selector selector, String correlationId, String index) throws SQLException {
    try (OutboxFixture parked = OutboxFixture.populated("requeue_batch_plan")) {
      // Every 25th row eu's and parked (4,000), among rows of us awaiting delivery; all of one
      // correlation id, but a few of another.
      parked.exec(
          "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
              + " topic, payload, status, attempts, last_failure_code, parked_at, correlation_id)"
              + " SELECT 'row-' || g, CASE WHEN g % 25 = 0 THEN 'eu' ELSE 'us' END, 'order',"
              + " 'row-' || g, 'OrderPlaced', 'orders', '\\x00'::bytea,"
              + " CASE WHEN g % 25 = 0 THEN 'FAILED' ELSE 'PENDING' END,"
              + " CASE WHEN g % 25 = 0 THEN 1 ELSE 0 END,"
              + " CASE WHEN g % 25 = 0 THEN 'PAYLOAD_TOO_LARGE' END,"
              + " CASE WHEN g % 25 = 0 THEN now() - interval '1 hour' END,"
              + " CASE WHEN g % 10000 = 0 THEN 'other-' || g ELSE 'bulk-job' END"
              + " FROM generate_series(1, 100000) g");
      parked.exec("ANALYZE outbox");
      long middle;
      try (Connection c = parked.dataSource.getConnection();
          Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery(
                  "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY seq) FROM outbox"
                      + " WHERE instance_key = 'eu' AND parked_at IS NOT NULL")) {
        rs.next();
        middle = rs.getLong(1);
      }
      for (ParkedAction action : ParkedAction.values()) {
        NamedSql batch = OperatorStatements.changeBatch(TABLE, action, selector);
        StringBuilder plan = new StringBuilder();
        try (Connection c = parked.dataSource.getConnection();
            PreparedStatement ps =
                c.prepareStatement("EXPLAIN (ANALYZE, TIMING OFF) " + batch.jdbc())) {
          c.setAutoCommit(false);
          NamedSql.Binder binder =
              batch
                  .bind(ps)
                  .setString("instance_key", "eu")
                  .setLong("after_seq", middle)
                  .setInt("limit", 1000)
                  .setLong("up_to_seq", Long.MAX_VALUE)
                  .setObject("parked_by", OffsetDateTime.now(), Types.TIMESTAMP_WITH_TIMEZONE);
          if (batch.names().contains("statuses")) {
            binder.setArray(
                "statuses", c.createArrayOf("text", new String[] {"EXHAUSTED", "FAILED"}));
          }
          if (batch.names().contains("dead_lettered_only")) {
            binder.setBoolean("dead_lettered_only", false);
          }
          if (correlationId != null) {
            binder.setString("correlation_id", correlationId);
          }
          try (ResultSet rs = binder.executeQuery()) {
            while (rs.next()) {
              plan.append(rs.getString(1)).append('\n');
            }
          }
          c.rollback();
        }
        String text = plan.toString();
        assertTrue(text.contains(index), text);
        assertTrue(text.matches("(?s).*Limit .*actual rows=1000 loops=1.*"), text);
        assertFalse(text.contains("Sort"), text);
        assertFalse(text.contains("Seq Scan on outbox"), text);
        assertFalse(text.contains("Bitmap"), "no read of every parked row: " + text);
        Matcher removed = Pattern.compile("Rows Removed by Filter: (\\d+)").matcher(text);
        while (removed.find()) {
          assertTrue(Long.parseLong(removed.group(1)) <= 1000, "the batch's rows read: " + text);
        }
      }
    }
  }

  private static String assertUsesParkedIndex(NamedSql statement, String correlationId)
      throws SQLException {
    String plan;
    try (Connection c = outbox.dataSource.getConnection()) {
      plan = explain(c, statement, correlationId, MessageStatus.FAILED);
    }
    assertTrue(parkedIndexes.stream().anyMatch(plan::contains), plan);
    assertFalse(plan.contains("Seq Scan on outbox"), plan);
    return plan;
  }

  /** The plan of {@code statement} for the parked rows of eu (with this correlation id). */
  private static String explain(
      Connection c, NamedSql statement, String correlationId, MessageStatus status)
      throws SQLException {
    StringBuilder plan = new StringBuilder();
    try (PreparedStatement ps = c.prepareStatement("EXPLAIN " + statement.jdbc())) {
      NamedSql.Binder binder = statement.bind(ps).setString("instance_key", "eu");
      if (statement.names().contains("statuses")) {
        binder.setArray("statuses", c.createArrayOf("text", new String[] {"EXHAUSTED", "FAILED"}));
      }
      if (statement.names().contains("dead_lettered_only")) {
        binder.setBoolean("dead_lettered_only", false);
      }
      if (statement.names().contains("status")) {
        binder.setString("status", status.name());
      }
      if (statement.names().contains("after_seq")) {
        binder.setLong("after_seq", 0).setInt("limit", 1000);
      }
      if (statement.names().contains("up_to_seq")) {
        binder
            .setLong("up_to_seq", Long.MAX_VALUE)
            .setObject("parked_by", OffsetDateTime.now(), Types.TIMESTAMP_WITH_TIMEZONE);
      }
      if (correlationId != null) {
        binder.setString("correlation_id", correlationId);
      }
      if (statement.names().contains("message_ids")) {
        binder.setArray("message_ids", c.createArrayOf("text", new String[] {"m-2", "m-1"}));
      }
      try (ResultSet rs = binder.executeQuery()) {
        while (rs.next()) {
          plan.append(rs.getString(1)).append('\n');
        }
      }
    }
    return plan.toString();
  }
}
