package dev.outboxrelay.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.ConnectMBeans;
import dev.outboxrelay.testing.HangOnceTransform;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.LogCapture.Event;
import dev.outboxrelay.testing.OutboxDb;
import dev.outboxrelay.testing.OutboxDb.Row;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A task whose thread hangs in a transform loses its row to the other task once the lease runs out;
 * when the hung task finally sends the record and Kafka acknowledges it, while the new owner still
 * holds the row, that stale acknowledgement is rejected by the lease's owner and token: logged,
 * counted in the plugin metrics, and the row ends recording a copy of a claim that held it. (Sent
 * after the new owner had published the row, the stale write found no row whatever it checked.)
 */
class StaleAcknowledgementTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.ONE_WORKER);

  private static final String CONNECTOR = "stale-relay";
  private static final String KEY = "stale";
  private static final String TOPIC = "it-stale";
  private static final String TARGET = "stale-target";

  @AfterEach
  void undeploy() throws InterruptedException {
    HangOnceTransform.releaseAll();
    CLUSTER.delete(CONNECTOR);
  }

  @Test
  void acknowledgementOfATakenOverLeaseIsRejectedVisiblyAndChangesNothing() throws Exception {
    LogCapture logs = LogCapture.get();
    HangOnceTransform.Hang gate = HangOnceTransform.arm(TARGET);
    try (OutboxDb db = OutboxDb.fresh("it_stale").migrate()) {
      Map<String, String> config = ConnectCluster.relayConfig(db, KEY, 2);
      config.put("topic.template", TOPIC);
      config.put("lease.duration.ms", "3000");
      config.put("lease.renewal.interval.ms", "1000");
      config.put("poll.interval.ms", "100");
      config.put("transforms", "block");
      config.put("transforms.block.type", HangOnceTransform.class.getName());
      CLUSTER.deploy(CONNECTOR, config);
      long mark = logs.mark();
      db.insert(KEY, List.of(OutboxDb.message(TARGET, "agg-1")));

      // One task claims the row and hangs in the transform with it.
      await("a task hangs on " + TARGET).atMost(Duration.ofSeconds(30)).until(gate::hasHung);
      int hungTask = taskOf(gate.thread());
      int otherTask = 1 - hungTask;
      long firstToken = db.row(TARGET).leaseToken();
      assertEquals("IN_FLIGHT", db.row(TARGET).status());

      // Its lease is no longer renewed, expires, and the other task reclaims it, and hangs on it in
      // turn: the stale acknowledgement below then meets the row as its new owner holds it, where
      // only the lease's owner and token tell the two apart (once published, the row would be gone
      // from the table, and the stale write would find nothing whatever it checked).
      HangOnceTransform.Hang newOwner = HangOnceTransform.arm(TARGET);
      await("the other task reclaims " + TARGET)
          .atMost(Duration.ofSeconds(60))
          .until(newOwner::hasHung);
      assertEquals(otherTask, taskOf(newOwner.thread()));
      Row taken = db.row(TARGET);
      assertEquals("IN_FLIGHT", taken.status());
      assertTrue(taken.leaseToken() > firstToken, () -> "reclaimed under a new token: " + taken);
      assertTrue(recordsOf(TARGET).isEmpty(), "nobody has sent it yet");
      assertFalse(
          logs.matching(
                  mark,
                  e ->
                      e.message().contains("Reclaimed abandoned message_id=" + TARGET)
                          && e.connectContext().contains("task-" + otherTask))
              .isEmpty(),
          "the other task reclaimed the row in isolation");
      assertFalse(
          logs.matching(
                  mark,
                  e ->
                      e.message().contains("reason=TASK_UNRESPONSIVE")
                          && e.connectContext().contains("task-" + hungTask))
              .isEmpty(),
          "the hung task stopped renewing its lease");
      assertEquals(0, claimLost(hungTask));

      // The hung task wakes up, sends its copy and hears back from Kafka: too late. Its claim is
      // found lost by whichever comes first: its next lease renewal (it polls again once the send
      // is handed over) or the acknowledgement's write; reported once either way.
      gate.release();
      await("the stale acknowledgement is rejected")
          .atMost(Duration.ofSeconds(60))
          .until(
              () ->
                  claimLost(hungTask) >= 1
                      && !claimLostLines(mark, hungTask).isEmpty()
                      && !recordsOf(TARGET).isEmpty()
                      && outcomeSettled(mark, hungTask));
      Event line = claimLostLines(mark, hungTask).get(0);
      assertEquals("WARN", line.level());
      assertTrue(line.message().contains("instance_key=" + KEY), line.message());
      assertTrue(
          line.message().contains("outcome PUBLISHED")
              || line.message().contains("Claim lost while waiting for Kafka"),
          line.message());
      assertEquals(1, claimLostLines(mark, hungTask).size(), "reported once");
      assertEquals(1, claimLost(hungTask));
      // The first copy: the hung task's, sent as it woke (should the new owner's lease have run
      // out meanwhile, the hung task's next claim of the row sends a later one).
      Delivered stale = recordsOf(TARGET).get(0);

      // The new owner sends its copy and records it. Should its lease have run out while it hung
      // (a loaded machine), the row is taken again and recorded by that claim: either way the row
      // records a copy of a claim that held it, never the stale one.
      newOwner.release();
      await("the row published again")
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> "PUBLISHED".equals(db.row(TARGET).status()) && recordsOf(TARGET).size() >= 2);
      List<Delivered> after = recordsOf(TARGET);
      Row published = db.row(TARGET);
      assertNotEquals(coordinates(stale), coordinates(published), "the stale copy recorded");
      assertTrue(
          after.stream().map(d -> coordinates(d)).anyMatch(coordinates(published)::equals),
          () -> coordinates(published) + " is none of " + after);
      CLUSTER.assertRunning(CONNECTOR, 2);
    }
  }

  private static int taskOf(String threadName) {
    // Connect names task threads "task-thread-{connector}-{task}".
    return Integer.parseInt(threadName.substring(threadName.lastIndexOf('-') + 1));
  }

  private static long claimLost(int task) {
    return ConnectMBeans.taskMetric(CONNECTOR, task, "claim-lost-total").orElse(-1);
  }

  private static List<Event> claimLostLines(long mark, int task) {
    return LogCapture.get()
        .matching(
            mark,
            e ->
                e.message().contains("Claim lost")
                    && e.message().contains("message_id=" + TARGET)
                    && e.message().contains("reason=LEASE_TAKEN_OVER")
                    && e.connectContext().contains(CONNECTOR + "|task-" + task));
  }

  /**
   * The hung task's acknowledgement of its copy was handled: rejected as a lost claim, or, when its
   * renewal had reported the loss, noted as already reported.
   */
  private static boolean outcomeSettled(long mark, int task) {
    return !LogCapture.get()
        .matching(
            mark,
            e ->
                (e.message().contains("outcome PUBLISHED")
                        || e.message().contains("Outcome PUBLISHED not recorded"))
                    && e.message().contains("message_id=" + TARGET)
                    && e.connectContext().contains(CONNECTOR + "|task-" + task))
        .isEmpty();
  }

  private static List<Delivered> recordsOf(String messageId) {
    return CLUSTER.readAll(TOPIC).stream().filter(d -> messageId.equals(d.messageId())).toList();
  }

  private static String coordinates(Delivered d) {
    return d.topic() + "/" + d.partition() + "@" + d.offset();
  }

  private static String coordinates(Row r) {
    return r.kafkaTopic() + "/" + r.kafkaPartition() + "@" + r.kafkaOffset();
  }
}
