package dev.outboxrelay.writer.examples;

import dev.outboxrelay.writer.EnqueueResult;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.DataSource;

public class JdbcOrderService {
  // One writer per table and instance key; it is immutable and thread-safe.
  private final PostgresOutboxWriter outbox = new PostgresOutboxWriter("outbox", "orders-eu");
  private final DataSource dataSource;

  public JdbcOrderService(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  public EnqueueResult placeOrder(String orderId, long totalCents, String traceparent)
      throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        insertOrder(c, orderId, totalCents); // the business change
        EnqueueResult result =
            outbox.enqueue(
                c,
                OutboxMessage.builder()
                    .messageId(orderId + ":placed") // optional: a retry is then a no-op
                    .aggregateType("order") // topic outbox.order by default
                    .aggregateId(orderId) // the record key: one aggregate keeps its order
                    .eventType("OrderPlaced")
                    .jsonPayload(new OrderPlaced(orderId, totalCents)) // or .payload(bytes)
                    .traceparent(traceparent) // W3C trace context; null outside a trace
                    .build());
        c.commit(); // both or neither
        return result;
      } catch (SQLException | RuntimeException e) {
        try {
          c.rollback();
        } catch (SQLException rollback) {
          e.addSuppressed(rollback); // the connection lost: the enqueue's error is the one to see
        }
        throw e;
      }
    }
  }

  private static void insertOrder(Connection c, String orderId, long totalCents)
      throws SQLException {
    try (PreparedStatement insert =
        c.prepareStatement("INSERT INTO orders (id, total_cents) VALUES (?, ?)")) {
      insert.setString(1, orderId);
      insert.setLong(2, totalCents);
      insert.executeUpdate();
    }
  }

  public record OrderPlaced(String orderId, long totalCents) {}
}
