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
      try (ResultSet rs = binder.executeQuery()) {
        while (rs.next()) {
          plan.append(rs.getString(1)).append('\n');
        }
      }
    }
    return plan.toString();
  }
}
