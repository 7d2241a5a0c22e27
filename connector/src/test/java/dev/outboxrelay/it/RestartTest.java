package dev.outboxrelay.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.Deliveries;
import dev.outboxrelay.testing.LoadWriter;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.OutboxDb;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Restarting one task, then the connector with all its tasks, while an application keeps writing
 * and the relay keeps publishing, loses nothing: every row ends PUBLISHED and is in Kafka at least
 * once. Duplicates are allowed (at-least-once) and reported.
 */
class RestartTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.ONE_WORKER);

  private static final Logger log = LoggerFactory.getLogger(RestartTest.class);
  private static final String CONNECTOR = "restart-relay";
  private static final String KEY = "restart";
  private static final String TOPIC = "it-restart";
  private static final int TASKS = 2;
  private static final int TOTAL = 1200;

  @AfterEach
  void undeploy() throws InterruptedException {
    CLUSTER.delete(CONNECTOR);
  }

  @Test
  void restartingATaskAndTheConnectorMidStreamLosesNothing() throws Exception {
    try (OutboxDb db = OutboxDb.fresh("it_restart").migrate()) {
      Map<String, String> config = ConnectCluster.relayConfig(db, KEY, TASKS);
      config.put("topic.template", TOPIC);
      config.put("claim.batch.size", "20");
      config.put("poll.interval.ms", "100");
      config.put("lease.duration.ms", "4000");
      config.put("lease.renewal.interval.ms", "1000");
      long logMark = LogCapture.get().mark();
      CLUSTER.deploy(CONNECTOR, config);

      try (LoadWriter writer = LoadWriter.messages(db, KEY, "rs", TOTAL, 50, 300).start()) {
        long inFlightAtTaskRestart = awaitPublishedWithRowsInFlight(db, 300);
        int writtenAtTaskRestart = writer.written();
        long taskRestartMark = LogCapture.get().mark();
        CLUSTER.restartTask(CONNECTOR, 0);
        awaitTaskStarts(taskRestartMark, 1, "task 0 restarted"); // the request alone is 202
        CLUSTER
            .connect()
            .assertions()
            .assertConnectorAndExactlyNumTasksAreRunning(CONNECTOR, TASKS, "after task restart");

        long inFlightAtConnectorRestart = awaitPublishedWithRowsInFlight(db, 700);
        int writtenAtConnectorRestart = writer.written();
        long connectorRestartMark = LogCapture.get().mark();
        CLUSTER.restartConnectorAndTasks(CONNECTOR);
        awaitTaskStarts(connectorRestartMark, TASKS, "every task restarted");
        CLUSTER
            .connect()
            .assertions()
            .assertConnectorAndExactlyNumTasksAreRunning(CONNECTOR, TASKS, "after restart");

        writer.awaitDone(Duration.ofSeconds(120));
        awaitPublished(db, TOTAL);
        assertTrue(
            writtenAtTaskRestart < TOTAL && writtenAtConnectorRestart < TOTAL,
            "both restarts happened while rows were still being written");

        Map<String, OutboxDb.Row> rows = db.rows();
        Map<String, Integer> duplicates =
            Deliveries.assertAllPublishedAtLeastOnce(rows, CLUSTER.readAll(TOPIC), writer.ids());
        Deliveries.assertDuplicatesReported(duplicates, logMark);
        Deliveries.assertNoAttemptCharged(rows, writer.ids());
        log.warn(
            "Restart test: {} rows, {} delivered more than once {} (written/in flight at task"
                + " restart {}/{}, at connector restart {}/{})",
            TOTAL,
            duplicates.size(),
            duplicates,
            writtenAtTaskRestart,
            inFlightAtTaskRestart,
            writtenAtConnectorRestart,
            inFlightAtConnectorRestart);
        CLUSTER.assertRunning(CONNECTOR, TASKS);
      }
    }
  }

  /** Waits until this connector's tasks have logged {@code starts} starts since the mark. */
  private static void awaitTaskStarts(long mark, int starts, String what) {
    await(what)
        .atMost(Duration.ofSeconds(120))
        .until(
            () ->
                LogCapture.get()
                        .matching(
                            mark,
                            e ->
                                e.message().startsWith("Started outbox-relay task")
                                    && e.connectContext().contains(CONNECTOR + "|"))
                        .size()
                    >= starts);
  }

  /** Waits for a moment with rows in flight once enough are published; returns how many. */
  private static long awaitPublishedWithRowsInFlight(OutboxDb db, int rows) {
    long[] inFlight = new long[1];
    await(rows + " rows PUBLISHED and more in flight")
        .atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(20))
        .until(
            () ->
                db.count("PUBLISHED", KEY) >= rows
                    && (inFlight[0] = db.count("IN_FLIGHT", KEY)) > 0);
    return inFlight[0];
  }

  private static void awaitPublished(OutboxDb db, int rows) {
    await(rows + " rows PUBLISHED")
        .atMost(Duration.ofSeconds(120))
        .until(() -> db.count("PUBLISHED", KEY) >= rows);
  }
}
