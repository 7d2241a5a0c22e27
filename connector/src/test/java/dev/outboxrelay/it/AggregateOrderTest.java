package dev.outboxrelay.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.DropTransform;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.OutboxDb;
import dev.outboxrelay.testing.OutboxDb.Row;
import dev.outboxrelay.writer.OutboxMessage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Per-aggregate order of first deliveries, with three tasks competing for rows and some aggregates
 * failing transiently (a test SMT drops all their records on their first one or two claims, so
 * Connect acknowledges them without metadata and the rows are retried). For every key, the first
 * time each message shows up in Kafka follows the order the rows were inserted in.
 */
class AggregateOrderTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.ONE_WORKER);

  private static final String CONNECTOR = "order-relay";
  private static final String KEY = "ordered";
  private static final String TOPIC = "it-order";
  private static final int AGGREGATES = 24;
  private static final int ROUNDS = 12;

  /** Aggregate id → how many of its first claims are dropped. */
  private static final Map<String, Integer> FAILING = failing();

  @AfterEach
  void undeploy() throws InterruptedException {
    CLUSTER.delete(CONNECTOR);
    DropTransform.reset();
  }

  private static Map<String, Integer> failing() {
    Map<String, Integer> failing = new LinkedHashMap<>();
    for (int a = 0; a < AGGREGATES; a += 3) {
      failing.put(aggregate(a), 1);
    }
    failing.put(aggregate(1), 2);
    failing.put(aggregate(10), 2);
    return failing;
  }

  private static String aggregate(int a) {
    return String.format("agg-%02d", a);
  }

  @Test
  void firstDeliveriesFollowInsertionOrderPerAggregateDespiteRetries() throws Exception {
    DropTransform.reset();
    try (OutboxDb db = OutboxDb.fresh("it_order").migrate()) {
      // Interleaved: each round appends one event to every aggregate, in one transaction.
      for (int round = 0; round < ROUNDS / 2; round++) {
        db.insert(KEY, round(round));
      }
      Map<String, String> config = ConnectCluster.relayConfig(db, KEY, 3);
      config.put("topic.template", TOPIC);
      config.put("claim.batch.size", "10");
      config.put("null.metadata.policy", "retry");
      config.put("retry.backoff.initial.ms", "100");
      config.put("retry.backoff.max.ms", "400");
      config.put("transforms", "drop");
      config.put("transforms.drop.type", DropTransform.class.getName());
      config.put(
          "transforms.drop.aggregates",
          FAILING.entrySet().stream()
              .map(e -> e.getKey() + ":" + e.getValue())
              .collect(Collectors.joining(",")));
      CLUSTER.deploy(CONNECTOR, config);
      for (int round = ROUNDS / 2; round < ROUNDS; round++) {
        db.insert(KEY, round(round));
      }
      int total = AGGREGATES * ROUNDS;
      await("every row PUBLISHED")
          .atMost(Duration.ofSeconds(120))
          .until(() -> db.count("PUBLISHED", KEY) == total);

      Map<String, Row> rows = db.rows();
      List<Delivered> delivered = CLUSTER.readAll(TOPIC);

      // The failure really happened: every row of a failing aggregate was retried as often as
      // its records were dropped, and the others never were.
      for (Row row : rows.values()) {
        int drops = FAILING.getOrDefault(row.aggregateId(), 0);
        assertEquals(drops, row.attempts(), () -> "attempts of " + row);
        assertEquals(drops, DropTransform.drops(row.messageId()), () -> "drops of " + row);
        if (drops > 0) {
          assertEquals("DELIVERY_UNCONFIRMED", row.lastFailureCode(), row.messageId());
        }
      }
      assertTrue(
          DropTransform.passingThreads().size() >= 2,
          () -> "several tasks delivered: " + DropTransform.passingThreads());

      // Records leave in Kafka per partition in offset order; a key lives in one partition.
      Map<String, List<Delivered>> byKey = new LinkedHashMap<>();
      for (Delivered d : delivered) {
        byKey.computeIfAbsent(d.key(), k -> new ArrayList<>()).add(d);
      }
      assertEquals(AGGREGATES, byKey.size());
      List<String> violations = new ArrayList<>();
      byKey.forEach(
          (key, records) -> {
            Set<String> firstDeliveries = new LinkedHashSet<>();
            records.forEach(d -> firstDeliveries.add(d.messageId()));
            List<Long> seqs = firstDeliveries.stream().map(id -> rows.get(id).seq()).toList();
            List<Long> inserted =
                rows.values().stream()
                    .filter(r -> r.aggregateId().equals(key))
                    .map(Row::seq)
                    .toList();
            if (!seqs.equals(inserted)) {
              violations.add(key + ": first deliveries " + seqs + ", inserted " + inserted);
            }
          });
      assertEquals(List.of(), violations, "per-aggregate first-delivery order");
      CLUSTER.assertRunning(CONNECTOR, 3);
    }
  }

  private static List<OutboxMessage> round(int round) {
    List<OutboxMessage> messages = new ArrayList<>();
    for (int a = 0; a < AGGREGATES; a++) {
      messages.add(OutboxDb.message(String.format("r%02d-%s", round, aggregate(a)), aggregate(a)));
    }
    return messages;
  }
}
