package dev.outboxrelay.it;

import static dev.outboxrelay.testing.OutboxDb.message;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.outboxrelay.mapping.OutboxHeaders;
import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.OutboxDb;
import dev.outboxrelay.testing.OutboxDb.Row;
import dev.outboxrelay.writer.OutboxMessage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two connectors with different instance keys share one outbox table, each with two tasks. Each
 * relays exactly its own rows, once each, and records where Kafka put them; rows of a third
 * instance key and a legacy row without one are never touched.
 */
class SharedTableTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.ONE_WORKER);

  private static final String EU = "eu";
  private static final String US = "us";
  private static final String OTHER = "other";
  private static final int ROWS_BEFORE_START = 120;
  private static final int ROWS_WHILE_RUNNING = 180;

  /** Each connector writes to a topic of its own, so a row relayed by the wrong one shows. */
  private static final Map<String, String> TOPIC_OF =
      Map.of(EU, "it-shared-from-eu-relay", US, "it-shared-from-us-relay");

  private final List<String> deployed = new ArrayList<>();

  @AfterEach
  void undeploy() throws InterruptedException {
    for (String name : deployed) {
      CLUSTER.delete(name);
    }
  }

  @Test
  void eachConnectorRelaysItsOwnRowsExactlyOnceAndLeavesOthersUntouched() throws Exception {
    try (OutboxDb db = OutboxDb.fresh("it_shared")) {
      db.migrateTo("1");
      db.insertLegacy("legacy-1", EU + "-agg-1");
      db.migrate();
      db.insert(OTHER, messages(OTHER, 0, 30));
      db.insert(EU, messages(EU, 0, ROWS_BEFORE_START));
      db.insert(US, messages(US, 0, ROWS_BEFORE_START));
      Map<String, String> untouchedBefore = db.rowsOutside(EU, US);
      assertEquals(31, untouchedBefore.size(), "the other instance's rows and the legacy row");

      for (String key : List.of(EU, US)) {
        Map<String, String> config = ConnectCluster.relayConfig(db, key, 2);
        config.put("topic.template", TOPIC_OF.get(key));
        String name = "shared-" + key + "-relay";
        CLUSTER.deploy(name, config);
        deployed.add(name);
      }
      // More rows while both connectors run, in several transactions each.
      for (int from = ROWS_BEFORE_START;
          from < ROWS_BEFORE_START + ROWS_WHILE_RUNNING;
          from += 30) {
        db.insert(EU, messages(EU, from, 30));
        db.insert(US, messages(US, from, 30));
      }
      int perKey = ROWS_BEFORE_START + ROWS_WHILE_RUNNING;
      await("every eu and us row PUBLISHED")
          .atMost(Duration.ofSeconds(90))
          .until(() -> db.count("PUBLISHED", EU) == perKey && db.count("PUBLISHED", US) == perKey);

      Map<String, Row> rows = db.rows();
      List<Delivered> delivered = CLUSTER.readAll(TOPIC_OF.get(EU), TOPIC_OF.get(US));
      Map<String, List<Delivered>> byMessageId =
          delivered.stream().collect(Collectors.groupingBy(Delivered::messageId));

      // Nothing but eu and us rows was relayed, each by its own connector, and each exactly once.
      Set<String> expectedIds = new TreeSet<>();
      rows.values().stream()
          .filter(r -> EU.equals(r.instanceKey()) || US.equals(r.instanceKey()))
          .forEach(r -> expectedIds.add(r.messageId()));
      assertEquals(2 * perKey, expectedIds.size());
      assertEquals(expectedIds, new TreeSet<>(byMessageId.keySet()));
      Map<String, Integer> sentTwice = new HashMap<>();
      byMessageId.forEach(
          (id, copies) -> {
            if (copies.size() > 1) {
              sentTwice.put(id, copies.size());
            }
          });
      assertEquals(Map.of(), sentTwice, "no row is sent twice in normal operation");
      for (Delivered d : delivered) {
        String key = d.headers().get(OutboxHeaders.INSTANCE_KEY);
        assertEquals(TOPIC_OF.get(key), d.topic(), () -> "relayed by the wrong connector: " + d);
      }

      // Every row records the coordinates of its record, and the record carries the row.
      for (String id : expectedIds) {
        Row row = rows.get(id);
        Delivered d = byMessageId.get(id).get(0);
        assertEquals("PUBLISHED", row.status(), id);
        assertEquals(d.topic(), row.kafkaTopic(), id);
        assertEquals(d.partition(), row.kafkaPartition(), id);
        assertEquals(d.offset(), row.kafkaOffset(), id);
        assertEquals(row.aggregateId(), d.key(), id);
        assertArrayEquals(payloadOf(id), d.value(), id);
        assertEquals("order", d.headers().get(OutboxHeaders.AGGREGATE_TYPE), id);
        assertEquals(0, row.attempts(), id);
      }

      // The other instance's rows and the legacy row: every column as it was.
      assertEquals(untouchedBefore, db.rowsOutside(EU, US));
      assertFalse(byMessageId.containsKey("legacy-1"));
      for (String name : deployed) {
        CLUSTER.assertRunning(name, 2);
      }
    }
  }

  /**
   * A connector with {@code retention.published.ms=0} keeps no published log: its rows leave the
   * table once Kafka has them, and nothing of them is logged; a connector beside it on the same
   * table keeps its log.
   */
  @Test
  void aConnectorThatKeepsNoPublishedLogOnlyDeletesItsRows() throws Exception {
    try (OutboxDb db = OutboxDb.fresh("it_shared_nolog").migrate()) {
      // Every entry the log is given, by key: an entry written then deleted would leave an empty
      // log too.
      db.update("CREATE TABLE logged (instance_key TEXT)");
      db.update(
          "CREATE FUNCTION logged_entry() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
              + " INSERT INTO logged VALUES (NEW.instance_key); RETURN NULL; END $$");
      db.update(
          "CREATE TRIGGER logged AFTER INSERT ON outbox_published FOR EACH ROW"
              + " EXECUTE FUNCTION logged_entry()");
      db.insert(EU, messages(EU, 0, 50));
      db.insert(US, messages(US, 0, 50));
      for (String key : List.of(EU, US)) {
        Map<String, String> config = ConnectCluster.relayConfig(db, key, 1);
        config.put("topic.template", TOPIC_OF.get(key) + "-nolog");
        config.put("retention.published.ms", EU.equals(key) ? "0" : "-1");
        String name = "shared-nolog-" + key + "-relay";
        CLUSTER.deploy(name, config);
        deployed.add(name);
      }
      await("every us row PUBLISHED, every eu row gone")
          .atMost(Duration.ofSeconds(90))
          .until(() -> db.count("PUBLISHED", US) == 50 && db.rows(EU).isEmpty());

      Set<String> relayed = new TreeSet<>();
      CLUSTER.readAll(TOPIC_OF.get(EU) + "-nolog").forEach(d -> relayed.add(d.messageId()));
      assertEquals(new TreeSet<>(OutboxDb.ids(EU, 0, 50)), relayed, "every eu row is in Kafka");
      assertEquals(
          0,
          db.scalar("SELECT count(*) FROM logged WHERE instance_key = ?", EU),
          "no eu entry ever written to the published log");
      assertEquals(50, db.scalar("SELECT count(*) FROM logged WHERE instance_key = ?", US));
      for (String name : deployed) {
        CLUSTER.assertRunning(name, 1);
      }
    }
  }

  /** Rows key-00000.. spread over ten aggregates per instance key. */
  private static List<OutboxMessage> messages(String key, int from, int count) {
    return OutboxDb.ids(key, from, count).stream()
        .map(
            id ->
                message(id, key + "-agg-" + (Integer.parseInt(id.substring(id.length() - 5)) % 10)))
        .toList();
  }

  private static byte[] payloadOf(String id) {
    byte[] payload = message(id, "x").payload();
    assertNotNull(payload);
    return payload;
  }
}
