package dev.outboxrelay.localstack;

import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Writes the demo's outbox rows the two ways applications do: {@link PostgresOutboxWriter} in the
 * transaction of a business change, and a plain SQL {@code INSERT}.
 */
final class DemoRows {
  static final String OWNED_KEY = "orders-eu";
  static final String OTHER_KEY = "orders-us";

  record Row(String messageId, String instanceKey, String aggregateId, String eventType) {}

  private final DataSource dataSource;
  private final String runId;

  DemoRows(DataSource dataSource, String runId) {
    this.dataSource = dataSource;
    this.runId = runId;
  }

  /** A payload that carries the run id, so the consumer can tell this run's records apart. */
  String payload(String aggregateId, String eventType, String region) {
    return "{\"orderId\":\""
        + aggregateId
        + "\",\"event\":\""
        + eventType
        + "\",\"region\":\""
        + region
        + "\",\"demoRun\":\""
        + runId
        + "\"}";
  }

  List<Row> write() {
    List<Row> rows = new ArrayList<>();
    try (Connection c = dataSource.getConnection()) {
      createOrdersTable(c);
      // Interleaved on purpose: order-1001's three events must still arrive in this order.
      rows.add(placeOrChange(c, "order-1001", "OrderPlaced"));
      rows.add(placeOrChange(c, "order-1002", "OrderPlaced"));
      rows.add(placeOrChange(c, "order-1001", "OrderPaid"));
      rows.add(placeOrChange(c, "order-1001", "OrderShipped"));
      rows.add(insertPlain(c, "order-2001", "OrderPlaced"));
      rows.add(insertPlain(c, "order-2001", "OrderPaid"));
    } catch (SQLException e) {
      throw new StackException("could not write the demo rows: " + e.getMessage(), e);
    }
    return rows;
  }

  private static void createOrdersTable(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE IF NOT EXISTS demo_orders"
              + " (order_id TEXT PRIMARY KEY, status TEXT NOT NULL, updated_at TIMESTAMPTZ NOT NULL)");
    }
  }

  /** The business change and its event commit together, or neither does. */
  private Row placeOrChange(Connection c, String orderId, String eventType) throws SQLException {
    PostgresOutboxWriter writer = new PostgresOutboxWriter(DemoSchema.TABLE.tableName(), OWNED_KEY);
    OutboxMessage message =
        OutboxMessage.builder()
            .messageId(UUID.randomUUID().toString())
            .aggregateType("order")
            .aggregateId(orderId)
            .eventType(eventType)
            .payload(payload(orderId, eventType, "eu").getBytes(StandardCharsets.UTF_8))
            .build();
    c.setAutoCommit(false);
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO demo_orders (order_id, status, updated_at) VALUES (?, ?, now())"
                + " ON CONFLICT (order_id) DO UPDATE SET status = EXCLUDED.status,"
                + " updated_at = EXCLUDED.updated_at")) {
      ps.setString(1, orderId);
      ps.setString(2, eventType);
      ps.executeUpdate();
      writer.enqueue(c, message);
      c.commit();
    } catch (SQLException e) {
      c.rollback();
      throw e;
    } finally {
      c.setAutoCommit(true);
    }
    return new Row(message.messageId(), OWNED_KEY, orderId, eventType);
  }

  private Row insertPlain(Connection c, String orderId, String eventType) throws SQLException {
    String sql =
        "INSERT INTO "
            + DemoSchema.TABLE.qualified()
            + " (instance_key, aggregate_type, aggregate_id, event_type, payload)"
            + " VALUES (?, 'order', ?, ?, ?) RETURNING message_id";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, OTHER_KEY);
      ps.setString(2, orderId);
      ps.setString(3, eventType);
      ps.setBytes(4, payload(orderId, eventType, "us").getBytes(StandardCharsets.UTF_8));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new Row(rs.getString(1), OTHER_KEY, orderId, eventType);
      }
    }
  }
}
