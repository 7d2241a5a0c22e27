package dev.outboxrelay.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.outboxrelay.mapping.OutboxHeaders;
import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.KafkaRecords;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.OutboxDb;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A trace continues from the business transaction to the consumer: a row written with the writer
 * library, as an application writes it, carrying a W3C {@code traceparent}, arrives on its Kafka
 * record with that header unchanged, next to the row's other headers and the relay's own.
 */
class TraceparentTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.ONE_WORKER);

  private static final String CONNECTOR = "trace-relay";
  private static final String KEY = "trace";
  private static final String TOPIC = "it-trace";
  private static final String TRACEPARENT =
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  @AfterEach
  void undeploy() throws InterruptedException {
    CLUSTER.delete(CONNECTOR);
  }

  @Test
  void aTraceparentWrittenWithTheWriterArrivesOnTheKafkaRecordUnchanged() throws Exception {
    try (OutboxDb db = OutboxDb.fresh("it_trace").migrate()) {
      Map<String, String> config = ConnectCluster.relayConfig(db, KEY, 1);
      config.put("topic.template", TOPIC);
      CLUSTER.deploy(CONNECTOR, config);

      PostgresOutboxWriter writer = new PostgresOutboxWriter("outbox", KEY);
      OutboxMessage traced =
          OutboxMessage.builder()
              .messageId("o-42:placed")
              .aggregateType("order")
              .aggregateId("o-42")
              .eventType("OrderPlaced")
              .jsonPayload(Map.of("id", "o-42"))
              .traceparent(TRACEPARENT)
              .header("tracestate", "vendor=abc")
              .correlationId("checkout-7")
              .build();
      OutboxMessage untraced =
          OutboxMessage.builder()
              .messageId("o-43:placed")
              .aggregateType("order")
              .aggregateId("o-43")
              .eventType("OrderPlaced")
              .traceparent(null)
              .build();
      db.inTransaction(
          c -> {
            writer.enqueue(c, traced);
            writer.enqueue(c, untraced);
          });

      await("both rows PUBLISHED")
          .atMost(Duration.ofSeconds(60))
          .until(() -> db.count("PUBLISHED", KEY) == 2);
      Map<String, List<Delivered>> byId = KafkaRecords.byMessageId(CLUSTER.readAll(TOPIC));
      assertEquals(1, byId.get("o-42:placed").size(), () -> "one record: " + byId);
      Delivered record = byId.get("o-42:placed").get(0);

      assertEquals(TRACEPARENT, record.headers().get("traceparent"), record::toString);
      assertEquals("vendor=abc", record.headers().get("tracestate"), record::toString);
      assertEquals("checkout-7", record.headers().get(OutboxHeaders.CORRELATION_ID));
      assertEquals("OrderPlaced", record.headers().get(OutboxHeaders.EVENT_TYPE));
      assertEquals("o-42", record.key());
      assertEquals("{\"id\":\"o-42\"}", new String(record.value(), StandardCharsets.UTF_8));
      assertFalse(
          byId.get("o-43:placed").get(0).headers().containsKey("traceparent"),
          "no trace, no header");
    }
  }
}
