package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The demo's read-back against a real PostgreSQL: a published row is read from the published log
 * (schema version 9), the others from the table, together in insertion order.
 */
class OutboxReportTest {
  private static EmbeddedPostgres postgres;
  private static DataSource dataSource;

  @BeforeAll
  static void database() throws IOException {
    postgres = EmbeddedPostgres.builder().start();
    dataSource = postgres.getPostgresDatabase();
    new SchemaMigrator(dataSource, DemoSchema.TABLE).migrate();
  }

  @AfterAll
  static void stop() throws IOException {
    postgres.close();
  }

  @Test
  void aPublishedRowIsReadFromThePublishedLogAndTheOthersFromTheTable() throws SQLException {
    PostgresOutboxWriter writer =
        new PostgresOutboxWriter(DemoSchema.TABLE.tableName(), "orders-eu");
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      for (String id : List.of("r-1", "r-2")) {
        writer.enqueue(
            c,
            OutboxMessage.builder()
                .messageId(id)
                .aggregateType("order")
                .aggregateId("order-" + id)
                .eventType("OrderPlaced")
                .build());
      }
      c.commit();
    }
    try (PostgresOutboxStore store =
        new PostgresOutboxStore(dataSource, DemoSchema.TABLE, RelayClock.database(), null)) {
      ClaimedMessage first =
          store
              .claim(
                  new ClaimRequest(
                      "task-0", Set.of("orders-eu"), 1, Duration.ofMinutes(1), 5, true))
              .claimed()
              .get(0);
      assertEquals("r-1", first.messageId());
      assertEquals(
          Outcome.APPLIED,
          store.markPublished(
              new PublishedAck(
                  "r-1", first.seq(), first.lease(), new KafkaCoordinates("outbox.order", 0, 7))));
    }

    OutboxReport report = new OutboxReport(dataSource);
    report.awaitPublished(List.of("r-1"), Duration.ofSeconds(5));
    List<OutboxReport.Row> rows = report.rows(List.of("r-2", "r-1", "no-such-id"));

    assertEquals(List.of("r-1", "r-2"), rows.stream().map(OutboxReport.Row::messageId).toList());
    OutboxReport.Row published = rows.get(0);
    assertEquals("PUBLISHED", published.status());
    assertEquals("orders-eu", published.instanceKey());
    assertEquals("order-r-1", published.aggregateId());
    assertEquals("outbox.order-0@7", published.kafka());
    assertNull(published.leaseOwner(), "the published log keeps no lease owner");
    OutboxReport.Row pending = rows.get(1);
    assertEquals("PENDING", pending.status());
    assertEquals(true, pending.untouched());
    assertEquals("-", pending.kafka());
  }
}
