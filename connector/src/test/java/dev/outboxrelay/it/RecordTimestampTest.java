package dev.outboxrelay.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.OutboxDb;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code record.timestamp} end to end: a row written long ago arrives stamped with its {@code
 * created_at} by default, and with the time it was sent under {@code send_time} (what Kafka's
 * time-based retention then judges it by).
 */
class RecordTimestampTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.ONE_WORKER);

  private static final String CONNECTOR = "timestamp-relay";
  private static final String KEY = "stamps";
  private static final Instant LONG_AGO = Instant.parse("2001-09-09T01:46:40Z");

  @AfterEach
  void undeploy() throws InterruptedException {
    CLUSTER.delete(CONNECTOR);
  }

  @Test
  void byDefaultARecordCarriesItsRowsCreationTime() throws Exception {
    Delivered record = relayOneOldRow("it_stamp_created", "it-stamp-created", Map.of());

    assertEquals(LONG_AGO.toEpochMilli(), record.timestamp(), record::toString);
  }

  @Test
  void underSendTimeTheProducerStampsTheRecordAsItSendsIt() throws Exception {
    Delivered record =
        relayOneOldRow("it_stamp_sent", "it-stamp-sent", Map.of("record.timestamp", "send_time"));

    // Stamped by the producer as it sent the record, years after the row's creation time.
    assertTrue(record.timestamp() > LONG_AGO.toEpochMilli(), record::toString);
  }

  /** Deploys a relay with {@code settings}, writes one row created {@link #LONG_AGO}, reads it. */
  private Delivered relayOneOldRow(String database, String topic, Map<String, String> settings)
      throws Exception {
    try (OutboxDb db = OutboxDb.fresh(database).migrate()) {
      Map<String, String> config = ConnectCluster.relayConfig(db, KEY, 1);
      // Kept whatever the records' timestamps: a record stamped 2001 in a topic of the default
      // retention would be deleted at the broker's next retention check.
      CLUSTER.createTopic(topic, 1, Map.of("retention.ms", "-1"));
      config.put("topic.template", topic);
      config.putAll(settings);
      CLUSTER.deploy(CONNECTOR, config);

      PostgresOutboxWriter writer = new PostgresOutboxWriter("outbox", KEY);
      OutboxMessage message =
          OutboxMessage.builder()
              .messageId("old-1")
              .aggregateType("order")
              .aggregateId("o-1")
              .eventType("OrderPlaced")
              .build();
      // Backdated in the inserting transaction, so that no claim sees the row before.
      db.inTransaction(
          c -> {
            writer.enqueue(c, message);
            try (PreparedStatement backdate =
                c.prepareStatement("UPDATE outbox SET created_at = ? WHERE message_id = 'old-1'")) {
              backdate.setObject(1, LONG_AGO.atOffset(ZoneOffset.UTC));
              assertEquals(1, backdate.executeUpdate());
            }
          });

      await("the row PUBLISHED")
          .atMost(Duration.ofSeconds(60))
          .until(() -> db.count("PUBLISHED", KEY) == 1);
      List<Delivered> records = CLUSTER.readAll(topic);
      assertEquals(1, records.size(), records::toString);
      return records.get(0);
    }
  }
}
