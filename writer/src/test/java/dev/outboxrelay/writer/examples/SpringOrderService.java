package dev.outboxrelay.writer.examples;

import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

@Service
public class SpringOrderService {
  private final PostgresOutboxWriter outbox = new PostgresOutboxWriter("outbox", "orders-eu");
  private final DataSource dataSource;
  private final JdbcTemplate jdbc;

  public SpringOrderService(DataSource dataSource, JdbcTemplate jdbc) {
    this.dataSource = dataSource;
    this.jdbc = jdbc;
  }

  // rollbackFor: Spring rolls back on unchecked exceptions only, and enqueue throws SQLException.
  @Transactional(rollbackFor = SQLException.class)
  public void placeOrder(String orderId, long totalCents, String traceparent) throws SQLException {
    jdbc.update("INSERT INTO orders (id, total_cents) VALUES (?, ?)", orderId, totalCents);
    // The connection Spring bound to this transaction; Spring closes it, not you.
    Connection tx = DataSourceUtils.getConnection(dataSource);
    outbox.enqueue(
        tx,
        OutboxMessage.builder()
            .messageId(orderId + ":placed")
            .aggregateType("order")
            .aggregateId(orderId)
            .eventType("OrderPlaced")
            .jsonPayload(new OrderPlaced(orderId, totalCents))
            .traceparent(traceparent)
            .build());
  }

  public record OrderPlaced(String orderId, long totalCents) {}
}
