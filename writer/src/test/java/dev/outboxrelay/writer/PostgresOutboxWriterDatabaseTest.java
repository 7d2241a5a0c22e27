package dev.outboxrelay.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The writer against a real PostgreSQL, on the table docs/schema.sql creates: every column lands as
 * given, the row commits and rolls back with the caller's transaction, and a retried message id is
 * a no-op.
 */
class PostgresOutboxWriterDatabaseTest {
  private static final String TRACEPARENT = OutboxMessageTest.TRACEPARENT;

  private TestDatabase db;
  private final PostgresOutboxWriter writer = new PostgresOutboxWriter("outbox", "orders-eu");

  @BeforeEach
  void database() {
    db = TestDatabase.withOutbox("writer");
  }

  @Test
  void everyColumnLandsAsGivenAndTheRelayOwnsTheRest() throws SQLException {
    OutboxMessage message =
        OutboxMessage.builder()
            .messageId("o-42:placed")
            .aggregateType("order")
            .aggregateId("o-42")
            .eventType("OrderPlaced")
            .topic("orders")
            .jsonPayload(Map.of("id", "o-42"))
            .traceparent(TRACEPARENT)
            .header("tenant", "acme")
            .correlationId("checkout-7")
            .deliverBefore(Instant.parse("2030-01-02T03:04:05.123456Z"))
            .build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, message));
      c.commit();
    }

    Map<String, String> expected = new TreeMap<>();
    expected.put("message_id", "o-42:placed");
    expected.put("instance_key", "orders-eu");
    expected.put("aggregate_type", "order");
    expected.put("aggregate_id", "o-42");
    expected.put("event_type", "OrderPlaced");
    expected.put("topic", "orders");
    expected.put("payload", "{\"id\":\"o-42\"}");
    expected.put("traceparent", TRACEPARENT);
    expected.put("tenant", "acme");
    expected.put("correlation_id", "checkout-7");
    expected.put("deliver_before", "2030-01-02T03:04:05.123456Z");
    expected.put("status", "PENDING");
    expected.put("attempts", "0");
    expected.put("lease_owner", null);
    assertEquals(
        List.of(expected),
        db.rows(
            "SELECT message_id, instance_key, aggregate_type, aggregate_id, event_type, topic,"
                + " convert_from(payload, 'UTF8') AS payload,"
                + " headers ->> 'traceparent' AS traceparent, headers ->> 'tenant' AS tenant,"
                + " correlation_id,"
                + " to_char(deliver_before AT TIME ZONE 'UTC',"
                + " 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS deliver_before,"
                + " status, attempts, lease_owner FROM outbox"));
  }

  @Test
  void theRowCommitsAndRollsBackWithTheCallersTransaction() throws SQLException {
    db.exec("CREATE TABLE orders (id TEXT PRIMARY KEY)");
    for (boolean commit : new boolean[] {false, true}) {
      String id = commit ? "o-committed" : "o-rolled-back";
      try (Connection c = db.connection();
          PreparedStatement insertOrder = c.prepareStatement("INSERT INTO orders VALUES (?)")) {
        c.setAutoCommit(false);
        insertOrder.setString(1, id);
        insertOrder.executeUpdate();
        writer.enqueue(c, placed(id));
        if (commit) {
          c.commit();
        } else {
          c.rollback();
        }
      }
    }
    assertEquals(List.of(Map.of("id", "o-committed")), db.rows("SELECT id FROM orders"));
    assertEquals(
        List.of(Map.of("aggregate_id", "o-committed")), db.rows("SELECT aggregate_id FROM outbox"));
  }

  @Test
  void aRetriedMessageIdIsADuplicateAndChangesNothing() throws SQLException {
    try (Connection c = db.connection()) {
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, placed("o-1")));
      assertEquals(EnqueueResult.DUPLICATE, writer.enqueue(c, placed("o-1")));
      OutboxMessage sameIdOtherContent =
          OutboxMessage.builder()
              .messageId("o-1:placed")
              .aggregateType("order")
              .aggregateId("o-other")
              .eventType("Other")
              .build();
      assertEquals(EnqueueResult.DUPLICATE, writer.enqueue(c, sameIdOtherContent));
    }
    assertEquals(
        List.of(Map.of("aggregate_id", "o-1", "event_type", "OrderPlaced")),
        db.rows("SELECT aggregate_id, event_type FROM outbox"));
  }

  @Test
  void aSchemaQualifiedTableIsWrittenWhereverTheSearchPathPoints() throws SQLException {
    TestDatabase other = TestDatabase.empty("writer_schema");
    other.exec("CREATE SCHEMA app; SET search_path TO app; " + TestDatabase.schemaSql());
    PostgresOutboxWriter appWriter = new PostgresOutboxWriter("app.outbox", "orders-eu");
    try (Connection c = other.connection()) {
      assertEquals(EnqueueResult.ENQUEUED, appWriter.enqueue(c, placed("o-1")));
    }
    assertEquals(1, other.count("SELECT count(*) FROM app.outbox"));
  }

  @Test
  void theDatabaseErrorReachesTheCallerAsItIs() throws SQLException {
    PostgresOutboxWriter missing = new PostgresOutboxWriter("no_such_outbox", "orders-eu");
    try (Connection c = db.connection()) {
      SQLException e = assertThrows(SQLException.class, () -> missing.enqueue(c, placed("o-1")));
      assertEquals("42P01", e.getSQLState(), e::toString); // undefined_table
    }
  }

  private static OutboxMessage placed(String orderId) {
    return OutboxMessage.builder()
        .messageId(orderId + ":placed")
        .aggregateType("order")
        .aggregateId(orderId)
        .eventType("OrderPlaced")
        .payload(("{\"id\":\"" + orderId + "\"}").getBytes(StandardCharsets.UTF_8))
        .build();
  }
}
