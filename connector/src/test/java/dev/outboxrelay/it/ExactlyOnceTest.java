package dev.outboxrelay.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.DropTransform;
import dev.outboxrelay.testing.KafkaRecords;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.LoadWriter;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.OutboxDb;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorOffset;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorOffsets;
import org.apache.kafka.connect.runtime.rest.errors.ConnectRestException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Exactly-once delivery (docs/design.md, "Exactly-once") on a worker with exactly-once source
 * support: a read_committed consumer sees every row exactly once, in per-aggregate order, across
 * restarts, a change of tasks.max, and a crash between Kafka's commit and the outcome write.
 */
class ExactlyOnceTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER =
      ConnectCluster.shared(
          ConnectCluster.Options.named("outbox-relay-eos")
              .workerProp("exactly.once.source.support", "enabled"));

  private static final String CONNECTOR = "eos-relay";

  @AfterEach
  void undeploy() throws InterruptedException {
    CLUSTER.deleteQuietly(CONNECTOR);
  }

  static Map<String, String> exactlyOnceConfig(OutboxDb db, String key, String topic, int tasks) {
    Map<String, String> config = ConnectCluster.relayConfig(db, key, tasks);
    config.put("delivery.guarantee", "exactly-once");
    config.put("exactly.once.support", "required");
    config.put("exactly.once.buckets", "8");
    config.put("topic.template", topic);
    config.put("claim.batch.size", "50");
    config.put("poll.interval.ms", "100");
    config.put("lease.duration.ms", "6000");
    config.put("lease.renewal.interval.ms", "1500");
    return config;
  }

  @Test
  void everyRowOnceInOrderAcrossRestartsAndTasksMaxChanges() throws Exception {
    String key = "eos-restart";
    String topic = "it-eos-restart";
    int total = 3000;
    try (OutboxDb db = OutboxDb.fresh("it_eos_restart").migrate()) {
      CLUSTER.createTopic(topic, 3);
      Map<String, String> config = exactlyOnceConfig(db, key, topic, 3);
      CLUSTER.deploy(CONNECTOR, config);
      CLUSTER.awaitRunning(CONNECTOR, 3);
      try (LoadWriter writer = LoadWriter.messages(db, key, "eo", total, 50, 600).start()) {
        awaitPublished(db, key, 400);
        // Each change replaces task instances while rows flow: their starts are awaited (the REST
        // calls return before them), then more rows published.
        long mark = LogCapture.get().mark();
        CLUSTER.restartConnectorAndTasks(CONNECTOR);
        awaitTasksStarted(mark, 3);
        awaitPublished(db, key, 900);
        mark = LogCapture.get().mark();
        config.put("tasks.max", "1");
        CLUSTER.configure(CONNECTOR, config);
        awaitTasksStarted(mark, 1);
        awaitPublished(db, key, 1500);
        mark = LogCapture.get().mark();
        config.put("tasks.max", "4");
        CLUSTER.configure(CONNECTOR, config);
        awaitTasksStarted(mark, 4);
        awaitPublished(db, key, 2100);
        CLUSTER.awaitRunning(CONNECTOR, 4); // task 1 of the new four exists
        mark = LogCapture.get().mark();
        CLUSTER.restartTask(CONNECTOR, 1);
        awaitTasksStarted(mark, 1);
        writer.awaitDone(Duration.ofSeconds(120));
        awaitPublished(db, key, total);
        assertExactlyOnceInOrder(db, key, CLUSTER.readCommitted(topic), writer.ids());
      }
    }
  }

  @Test
  void aCrashAfterKafkaCommittedAndBeforeTheOutcomeWriteSendsNothingAgain() throws Exception {
    String key = "eos-crash";
    String topic = "it-eos-crash";
    int total = 300;
    try (OutboxDb db = OutboxDb.fresh("it_eos_crash").migrate()) {
      CLUSTER.createTopic(topic, 3);
      // The injected fault: every acknowledgement's PUBLISHED write (the one with Kafka
      // coordinates) fails with a retriable error (serialization failure), so records reach Kafka
      // and commit while their rows stay IN_FLIGHT. Recovery's write (no coordinates) passes.
      db.update(
          "CREATE FUNCTION refuse_published() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
              + " IF NEW.kafka_topic IS NOT NULL THEN"
              + " RAISE EXCEPTION 'injected' USING ERRCODE = '40001'; END IF; RETURN NEW; END $$");
      // Publishing inserts into the published log: failing that insert fails the statement.
      db.update(
          "CREATE TRIGGER refuse_published BEFORE INSERT ON outbox_published FOR EACH ROW"
              + " EXECUTE FUNCTION refuse_published()");
      db.insert(key, messages("cr", total));
      Map<String, String> config = exactlyOnceConfig(db, key, topic, 2);
      CLUSTER.deploy(CONNECTOR, config);
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> CLUSTER.readCommitted(topic).size() >= total);
      assertEquals(total, db.count("IN_FLIGHT", key), "every row sent, none recorded");

      // KIP-875 on the stopped connector: a position set by hand is refused (it could cover rows
      // Kafka never had, which recovery would then record PUBLISHED); the offsets stay as they
      // were.
      CLUSTER.connect().stopConnector(CONNECTOR);
      CLUSTER.connect().assertions().assertConnectorIsStopped(CONNECTOR, "stopped to alter");
      ConnectorOffsets committedOffsets = CLUSTER.connect().connectorOffsets(CONNECTOR);
      assertTrue(
          !committedOffsets.offsets().isEmpty()
              && committedOffsets.offsets().stream().allMatch(o -> o.offset() != null),
          "every bucket's committed position is listed: " + committedOffsets);
      ConnectorOffset first =
          committedOffsets.offsets().stream()
              .filter(o -> o.offset() != null)
              .findFirst()
              .orElseThrow();
      Map<String, Object> further = new HashMap<String, Object>(first.offset());
      further.put("seq", Long.MAX_VALUE);
      ConnectRestException refused =
          assertThrows(
              ConnectRestException.class,
              () ->
                  CLUSTER
                      .connect()
                      .alterConnectorOffsets(
                          CONNECTOR,
                          new ConnectorOffsets(
                              List.of(new ConnectorOffset(first.partition(), further)))));
      // A plugin's refusal is a ConnectException, which Connect answers with 500 and its message.
      assertEquals(500, refused.statusCode());
      assertTrue(refused.getMessage().contains("Only a reset"), refused.getMessage());
      assertEquals(committedOffsets.toMap(), CLUSTER.connect().connectorOffsets(CONNECTOR).toMap());

      // The crash: the tasks stop with their outcomes unwritten; new instances start.
      CLUSTER.delete(CONNECTOR);
      CLUSTER.deploy(CONNECTOR, config);
      awaitPublished(db, key, total);

      List<Delivered> committed = CLUSTER.readCommitted(topic);
      assertExactlyOnceInOrder(db, key, committed, OutboxDb.ids("cr", 0, total));
      long recovered =
          db.scalar(
              "SELECT count(*) FROM "
                  + db.messages()
                  + " WHERE last_failure_code = 'RECOVERED_FROM_OFFSETS'");
      assertEquals(total, recovered, "every row recorded from the offsets, none sent again");

      // A reset reaches the offsets themselves: in the offsets topic, each of this key's bucket
      // partitions ends with a tombstone under the partition's own bytes. (GET lists none after a
      // reset whatever bytes its tombstones went to, so it cannot tell.)
      CLUSTER.connect().stopConnector(CONNECTOR);
      CLUSTER.connect().assertions().assertConnectorIsStopped(CONNECTOR, "stopped to reset");
      CLUSTER.connect().resetConnectorOffsets(CONNECTOR);
      Map<String, byte[]> latest = new HashMap<>();
      String offsetsTopic = CLUSTER.workerProps().get("offset.storage.topic");
      for (ConsumerRecord<byte[], byte[]> r :
          CLUSTER.connect().kafka().consumeAll(30_000, offsetsTopic)) {
        String partition = new String(r.key(), StandardCharsets.UTF_8);
        if (partition.contains("\"instance_key\":\"" + key + "\"")) {
          latest.put(partition, r.value());
        }
      }
      assertFalse(latest.isEmpty(), "the bucket partitions are in " + offsetsTopic);
      assertTrue(
          latest.values().stream().allMatch(Objects::isNull),
          "each bucket partition's last record is a tombstone: " + latest.keySet());
    }
  }

  @Test
  void poisonRowsAreParkedAndDeadLetteredInsideTheTransactionNotRetriedForEver() throws Exception {
    String key = "eos-poison";
    String topic = "it-eos-poison";
    String deadLetters = "it-eos-poison-dlq";
    try (OutboxDb db = OutboxDb.fresh("it_eos_poison").migrate()) {
      CLUSTER.createTopic(topic, 3);
      CLUSTER.createTopic(deadLetters, 1);
      List<dev.outboxrelay.writer.OutboxMessage> rows = new ArrayList<>(messages("ok", 200));
      List<String> poison = OutboxDb.ids("bad", 0, 5);
      for (String id : poison) {
        rows.add(
            dev.outboxrelay.writer.OutboxMessage.builder()
                .messageId(id)
                .aggregateType("order")
                .aggregateId("bad-agg-" + id)
                .eventType("OrderPlaced")
                .payload(new byte[5_000])
                .build());
      }
      db.insert(key, rows);
      Map<String, String> config = exactlyOnceConfig(db, key, topic, 2);
      config.put("payload.max.bytes", "1000");
      config.put("dead.letter.topic", deadLetters);
      CLUSTER.deploy(CONNECTOR, config);
      awaitPublished(db, key, 200);
      await().atMost(Duration.ofSeconds(60)).until(() -> db.count("FAILED", key) == poison.size());

      assertExactlyOnceInOrder(db, key, CLUSTER.readCommitted(topic), OutboxDb.ids("ok", 0, 200));
      List<Delivered> dead = CLUSTER.readCommitted(deadLetters);
      assertEquals(
          poison.stream().sorted().toList(),
          dead.stream().map(Delivered::messageId).sorted().toList(),
          "one dead letter per poison row, committed");
      for (String id : poison) {
        assertEquals("PAYLOAD_TOO_LARGE", db.row(id).lastFailureCode(), id);
      }
      // Each parked row learns where its committed copy is (at the task's next poll).
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> poison.stream().allMatch(id -> db.row(id).kafkaOffset() != null));
      for (Delivered copy : dead) {
        OutboxDb.Row row = db.row(copy.messageId());
        assertEquals(
            List.of(copy.topic(), copy.partition(), copy.offset()),
            List.of(row.kafkaTopic(), row.kafkaPartition(), row.kafkaOffset()),
            copy.messageId());
      }
      for (int task = 0; task < 2; task++) { // read, not absent (a missing bean counts 0)
        assertEquals(
            0L,
            dev.outboxrelay.testing.ConnectMBeans.taskMetric(CONNECTOR, task, "claim-lost-total")
                .orElseThrow(),
            "a dead letter's acknowledgement is not a lost claim, task " + task);
      }
    }
  }

  /**
   * A record that fails its task (here a transform's exception; a converter's or a broker's refusal
   * does the same) aborts its batch's transaction at every restart. After two, its batch's rows are
   * sent alone; the culprit fails alone, and the next start parks it EXHAUSTED (max.attempts=1):
   * every other row, those of its aggregate after it included, reaches a read_committed consumer
   * once, in order, after a few restarts instead of never.
   */
  @Test
  void aRecordThatFailsItsTaskEndsExhaustedAfterAFewRestartsInsteadOfFailingForEver()
      throws Exception {
    String key = "eos-crash-loop";
    String topic = "it-eos-crash-loop";
    try (OutboxDb db = OutboxDb.fresh("it_eos_crash_loop").migrate()) {
      CLUSTER.createTopic(topic, 3);
      List<dev.outboxrelay.writer.OutboxMessage> rows = new ArrayList<>(messages("cl", 30));
      rows.add(15, OutboxDb.message("bad", "cl-agg-3")); // mid-batch, before later rows of agg-3
      db.insert(key, rows);
      Map<String, String> config = exactlyOnceConfig(db, key, topic, 1);
      config.put("max.attempts", "1");
      config.put("transforms", "fail");
      config.put("transforms.fail.type", FailOnMessageTransform.class.getName());
      config.put("transforms.fail." + FailOnMessageTransform.MESSAGE_ID, "bad");
      CLUSTER.configure(CONNECTOR, config);

      int restarts = 0;
      while (true) {
        await()
            .atMost(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(200))
            .until(
                () ->
                    "EXHAUSTED".equals(db.row("bad").status())
                        || CLUSTER.taskStates(CONNECTOR).contains("0=FAILED"));
        if ("EXHAUSTED".equals(db.row("bad").status())) {
          break;
        }
        assertTrue(restarts < 8, "parked after a few restarts, not " + restarts);
        int released = db.row("bad").abandonedClaims();
        CLUSTER.restartFailedTasks(CONNECTOR);
        restarts++;
        // Started again: its recovery released the row once more (or parked it).
        await()
            .atMost(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(100))
            .until(() -> db.row("bad").abandonedClaims() > released);
      }
      awaitPublished(db, key, 30);

      assertExactlyOnceInOrder(db, key, CLUSTER.readCommitted(topic), OutboxDb.ids("cl", 0, 30));
      OutboxDb.Row bad = db.row("bad");
      assertEquals("ABANDONED_IN_ISOLATION", bad.lastFailureCode());
      assertEquals(1, bad.attempts());
      assertEquals(3, restarts, "twice with its batch, once alone");
      assertTrue(
          CLUSTER.readCommitted(topic).stream().noneMatch(d -> "bad".equals(d.messageId())),
          "never committed");
      CLUSTER.awaitRunning(CONNECTOR, 1);
    }
  }

  /**
   * A transform the relay does not know to refuse (unlike Filter) drops every record of a trickle:
   * Connect, with no transaction to commit, acknowledges none of them. The task fails naming the
   * first row, whose outcome is written per null.metadata.policy (retry: AMBIGUOUS), instead of
   * holding its rows in flight, RUNNING, until it claimed nothing more.
   */
  @Test
  void aTransformThatDropsEveryRecordFailsTheTaskNamingTheRow() throws Exception {
    String key = "eos-drop";
    String topic = "it-eos-drop";
    try (OutboxDb db = OutboxDb.fresh("it_eos_drop").migrate()) {
      CLUSTER.createTopic(topic, 3);
      DropTransform.reset();
      db.insert(key, List.of(OutboxDb.message("dropped", "dr-agg")));
      Map<String, String> config = exactlyOnceConfig(db, key, topic, 1);
      config.put("transforms", "drop");
      config.put("transforms.drop.type", DropTransform.class.getName());
      config.put("transforms.drop." + DropTransform.AGGREGATES_CONFIG, "dr-agg:1000");
      CLUSTER.deploy(CONNECTOR, config);

      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> CLUSTER.taskStates(CONNECTOR).contains("0=FAILED"));
      String trace = CLUSTER.status(CONNECTOR).tasks().get(0).trace();
      assertTrue(trace.contains("message_id=dropped (reason=DROPPED_UNDER_EXACTLY_ONCE)"), trace);
      assertTrue(DropTransform.drops("dropped") > 0);
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> "AMBIGUOUS".equals(db.row("dropped").status()));
    }
  }

  @Test
  void anAtLeastOnceConnectorOnAnExactlyOnceWorkerBehavesAsToday() throws Exception {
    String key = "alo-on-eos";
    String topic = "it-alo-on-eos";
    try (OutboxDb db = OutboxDb.fresh("it_alo_on_eos").migrate()) {
      CLUSTER.createTopic(topic, 3);
      db.insert(key, messages("al", 300));
      Map<String, String> config = ConnectCluster.relayConfig(db, key, 2);
      config.put("topic.template", topic);
      CLUSTER.deploy(CONNECTOR, config);
      awaitPublished(db, key, 300);
      // Transactional producers still, so read_committed sees every row, here exactly once.
      assertExactlyOnceInOrder(db, key, CLUSTER.readCommitted(topic), OutboxDb.ids("al", 0, 300));
      for (OutboxDb.Row row : db.rows(key).values()) {
        assertTrue(row.kafkaOffset() != null, "recorded from Kafka's acknowledgement");
      }
    }
  }

  /**
   * At least once on an exactly-once worker (Connect runs every source task in its exactly-once
   * task): a transform drops every record of a trickle, and Connect, with no transaction to commit,
   * acknowledges none. Each row is settled per null.metadata.policy (fail: FAILED), the task stays
   * RUNNING, and the rows after it are relayed; the dropped rows stayed in flight, leases renewed,
   * until the task held its limit and claimed nothing more.
   */
  @Test
  void anAtLeastOnceConnectorOnAnExactlyOnceWorkerSettlesRecordsATransformDropped()
      throws Exception {
    String key = "alo-drop";
    String topic = "it-alo-drop";
    try (OutboxDb db = OutboxDb.fresh("it_alo_drop").migrate()) {
      CLUSTER.createTopic(topic, 3);
      DropTransform.reset();
      db.insert(key, List.of(OutboxDb.message("dropped-1", "dr-agg")));
      Map<String, String> config = ConnectCluster.relayConfig(db, key, 1);
      config.put("topic.template", topic);
      config.put("null.metadata.policy", "fail");
      config.put("transforms", "drop");
      config.put("transforms.drop.type", DropTransform.class.getName());
      config.put("transforms.drop." + DropTransform.AGGREGATES_CONFIG, "dr-agg:1000");
      long mark = LogCapture.get().mark();
      CLUSTER.deploy(CONNECTOR, config);

      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> "FAILED".equals(db.row("dropped-1").status()));
      assertEquals("DROPPED_OR_UNDELIVERED", db.row("dropped-1").lastFailureCode());
      db.insert(key, List.of(OutboxDb.message("dropped-2", "dr-agg")));
      db.insert(key, List.of(OutboxDb.message("kept", "kept-agg")));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () ->
                  "FAILED".equals(db.row("dropped-2").status())
                      && "PUBLISHED".equals(db.row("kept").status()));
      assertTrue(DropTransform.drops("dropped-2") > 0);
      CLUSTER.awaitRunning(CONNECTOR, 1);
      // Connect acknowledged the dropped records again with kept's transaction: not written.
      assertEquals(List.of(), LogCapture.get().claimLost(CONNECTOR, mark));
    }
  }

  private static List<dev.outboxrelay.writer.OutboxMessage> messages(String prefix, int total) {
    List<dev.outboxrelay.writer.OutboxMessage> messages = new ArrayList<>();
    List<String> ids = OutboxDb.ids(prefix, 0, total);
    for (int i = 0; i < total; i++) {
      messages.add(OutboxDb.message(ids.get(i), prefix + "-agg-" + (i % 16)));
    }
    return messages;
  }

  /** Waits until {@code tasks} task instances of the connector have started since {@code mark}. */
  private static void awaitTasksStarted(long mark, int tasks) {
    await("task instances started")
        .atMost(Duration.ofSeconds(90))
        .until(
            () ->
                LogCapture.get().tasksLogging(CONNECTOR, mark, "Started outbox-relay task")
                    >= tasks);
  }

  /**
   * Waits for the rows published, restarting tasks the broker failed with its transaction
   * coordinator's race (ConnectCluster#restartTasksTheBrokerFailed): each step here replaces task
   * instances while rows flow.
   */
  private static void awaitPublished(OutboxDb db, String key, long atLeast) {
    await()
        .atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(500))
        .until(
            () -> {
              if (db.count("PUBLISHED", key) >= atLeast) {
                return true;
              }
              CLUSTER.restartTasksTheBrokerFailed(CONNECTOR);
              return false;
            });
  }

  /**
   * Every id exactly once among the committed records, every row PUBLISHED, and per aggregate the
   * records in Kafka follow the rows' insertion order.
   */
  static void assertExactlyOnceInOrder(
      OutboxDb db, String key, List<Delivered> committed, List<String> ids) {
    Map<String, List<Delivered>> byId = KafkaRecords.byMessageId(committed);
    List<String> duplicated = new ArrayList<>();
    List<String> missing = new ArrayList<>();
    for (String id : ids) {
      int copies = byId.getOrDefault(id, List.of()).size();
      if (copies == 0) {
        missing.add(id);
      } else if (copies > 1) {
        duplicated.add(id);
      }
    }
    assertEquals(List.of(), missing, "rows missing from Kafka");
    assertEquals(List.of(), duplicated, "rows a read_committed consumer sees twice");
    Map<String, OutboxDb.Row> rows = db.rows(key);
    for (String id : ids) {
      assertEquals("PUBLISHED", rows.get(id).status(), id);
    }
    // Records of one aggregate share a key, hence a partition: their offsets follow seq order.
    Map<String, Long> lastSeqByAggregate = new HashMap<>();
    for (Delivered d : committed) {
      OutboxDb.Row row = rows.get(d.messageId());
      long previous = lastSeqByAggregate.getOrDefault(row.aggregateId(), -1L);
      assertTrue(
          row.seq() > previous,
          "aggregate " + row.aggregateId() + " out of order at " + d.messageId());
      lastSeqByAggregate.put(row.aggregateId(), row.seq());
    }
  }
}
