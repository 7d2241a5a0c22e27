package dev.outboxrelay.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.KafkaRecords;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.OutboxDb;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Large payloads are claimed a few at a time: a task holds at most half its producer's buffer of
 * records (and one row more), whatever claim.batch.size says, so that a broker acknowledging
 * nothing could never block it in a send, and its heap holds no batch of large payloads. Against a
 * real worker, producer and broker, every row arrives once.
 */
class LargePayloadTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.ONE_WORKER);

  private static final String CONNECTOR = "large-relay";
  private static final String KEY = "large";
  private static final String TOPIC = "it-large";
  private static final int ROWS = 30;
  private static final int PAYLOAD_BYTES = 200_000;

  @AfterEach
  void undeploy() throws InterruptedException {
    CLUSTER.delete(CONNECTOR);
  }

  @Test
  void aTaskHoldsAtMostHalfItsProducersBufferOfLargeRowsAndEveryRowArrivesOnce() throws Exception {
    try (OutboxDb db = OutboxDb.fresh("it_large").migrate()) {
      PostgresOutboxWriter writer = new PostgresOutboxWriter("outbox", KEY);
      byte[] payload = new byte[PAYLOAD_BYTES];
      for (int i = 0; i < payload.length; i++) {
        payload[i] = (byte) ('a' + i % 26);
      }
      db.inTransaction(
          c -> {
            for (int i = 0; i < ROWS; i++) {
              writer.enqueue(
                  c,
                  OutboxMessage.builder()
                      .messageId("large-" + i)
                      .aggregateType("document")
                      .aggregateId("d-" + i)
                      .eventType("DocumentStored")
                      .payload(payload)
                      .build());
            }
          });
      Map<String, String> config = ConnectCluster.relayConfig(db, KEY, 1);
      config.put("topic.template", TOPIC);
      config.put("claim.batch.size", "50"); // every row in one claim, were it not for the bytes
      config.put("payload.max.bytes", "300000");
      config.put("producer.override.buffer.memory", "1000000"); // a budget of 500,000 bytes
      CLUSTER.deploy(CONNECTOR, config);

      // Sampled while the rows drain: a sample can miss a peak, never invent one.
      AtomicLong mostInFlight = new AtomicLong();
      await("every row PUBLISHED")
          .atMost(Duration.ofSeconds(120))
          .pollInterval(Duration.ofMillis(20))
          .until(
              () -> {
                mostInFlight.accumulateAndGet(db.count("IN_FLIGHT", KEY), Math::max);
                return db.count("PUBLISHED", KEY) == ROWS;
              });

      assertTrue(
          mostInFlight.get() <= 3,
          "two rows of 200,000 bytes under the budget and one more: " + mostInFlight.get());
      Map<String, List<Delivered>> byId = KafkaRecords.byMessageId(CLUSTER.readAll(TOPIC));
      assertEquals(ROWS, byId.size());
      for (List<Delivered> records : byId.values()) {
        assertEquals(1, records.size(), () -> "once: " + records);
        assertArrayEquals(payload, records.get(0).value());
      }
    }
  }
}
