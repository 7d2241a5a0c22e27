package dev.outboxrelay.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.ConnectMBeans;
import dev.outboxrelay.testing.Deliveries;
import dev.outboxrelay.testing.LoadWriter;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.OutboxDb;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The database goes away mid-stream: every backend of the connector is terminated and the database
 * refuses new connections until each task has been refused three times (at least a few seconds, as
 * each attempt waits connection.timeout.ms). The tasks stay RUNNING throughout (no restart), resume
 * by themselves once it is back, and lose nothing.
 */
class DatabaseOutageTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.ONE_WORKER);

  private static final Logger log = LoggerFactory.getLogger(DatabaseOutageTest.class);
  private static final String CONNECTOR = "outage-relay";
  private static final String KEY = "outage";
  private static final String TOPIC = "it-outage";
  private static final int TASKS = 2;
  private static final int TOTAL = 900;
  private static final int REFUSED_PER_TASK = 3;

  private OutboxDb db;

  @AfterEach
  void undeploy() throws InterruptedException {
    if (db != null) {
      db.allowConnections(true);
      db.close();
    }
    CLUSTER.delete(CONNECTOR);
  }

  @Test
  void tasksRideOutADatabaseOutageWithoutRestartingOrLosingRows() throws Exception {
    LogCapture logs = LogCapture.get();
    db = OutboxDb.fresh("it_outage").migrate();
    Map<String, String> config = ConnectCluster.relayConfig(db, KEY, TASKS);
    config.put("topic.template", TOPIC);
    config.put("claim.batch.size", "20");
    config.put("lease.duration.ms", "5000");
    config.put("lease.renewal.interval.ms", "1500");
    config.put("connection.timeout.ms", "1000");
    CLUSTER.deploy(CONNECTOR, config);
    long startMark = logs.mark();

    try (LoadWriter writer = LoadWriter.messages(db, KEY, "db", TOTAL, 50, 300).start()) {
      long[] inFlight = new long[1];
      await("rows flowing, some in flight")
          .atMost(Duration.ofSeconds(120))
          .pollInterval(Duration.ofMillis(20))
          .until(
              () ->
                  db.count("PUBLISHED", KEY) >= 200
                      && (inFlight[0] = db.count("IN_FLIGHT", KEY)) > 0);
      long errorsBefore = ConnectMBeans.sumOverTasks(CONNECTOR, TASKS, "database-errors-total");

      // The database goes away: no new connections, and every existing one is cut.
      db.allowConnections(false);
      int terminated = db.terminateRelayBackends();
      assertTrue(terminated > 0, "the connector had backends to terminate");
      int writtenAtOutage = writer.written();
      long outageMark = logs.mark();
      await("each task has been refused a connection " + REFUSED_PER_TASK + " times")
          .atMost(Duration.ofSeconds(90))
          .pollInterval(Duration.ofMillis(250))
          .until(
              () -> {
                CLUSTER.assertRunning(CONNECTOR, TASKS); // never FAILED meanwhile
                for (int task = 0; task < TASKS; task++) {
                  if (refusedOperations(logs, outageMark, task) < REFUSED_PER_TASK) {
                    return false;
                  }
                }
                return true;
              });
      assertTrue(
          ConnectMBeans.sumOverTasks(CONNECTOR, TASKS, "database-errors-total") > errorsBefore,
          "the failures are counted in database-errors-total");
      CLUSTER.assertRunning(CONNECTOR, TASKS);

      // It comes back; nobody touches the connector.
      db.allowConnections(true);
      writer.awaitDone(Duration.ofSeconds(120));
      await("every row PUBLISHED")
          .atMost(Duration.ofSeconds(120))
          .until(() -> db.count("PUBLISHED", KEY) == TOTAL);
      assertTrue(writtenAtOutage < TOTAL, "rows were still being written when it went away");

      CLUSTER.assertRunning(CONNECTOR, TASKS);
      List<LogCapture.Event> restarts =
          logs.matching(
              startMark,
              e ->
                  e.message().startsWith("Started outbox-relay task")
                      && e.connectContext().contains(CONNECTOR + "|"));
      assertEquals(List.of(), restarts, "no task was restarted");
      assertFalse(
          logs.matching(
                  startMark,
                  e ->
                      e.message().startsWith("Database unavailable while claiming")
                          && e.message().contains("reason=DB_UNAVAILABLE")
                          && e.connectContext().contains(CONNECTOR + "|"))
              .isEmpty(),
          "the outage was reported as transient");

      Map<String, OutboxDb.Row> rows = db.rows();
      Map<String, Integer> duplicates =
          Deliveries.assertAllPublishedAtLeastOnce(rows, CLUSTER.readAll(TOPIC), writer.ids());
      Deliveries.assertDuplicatesReported(duplicates, startMark);
      Deliveries.assertNoAttemptCharged(rows, writer.ids());
      log.warn(
          "Outage test: {} rows, {} in flight and {} backends terminated at the outage, {}"
              + " delivered more than once {}",
          TOTAL,
          inFlight[0],
          terminated,
          duplicates.size(),
          duplicates);
    }
  }

  /**
   * Database operations of this task (claims, outcome writes, lease renewals) that failed for want
   * of a connection, rather than on a connection that was cut (57P01): each waited
   * connection.timeout.ms for the database to let it in.
   */
  private static long refusedOperations(LogCapture logs, long mark, int task) {
    return logs.matching(
            mark,
            e ->
                e.logger().startsWith("dev.outboxrelay")
                    && e.message().contains("reason=DB_UNAVAILABLE")
                    && !e.message().contains("sqlState=57P01")
                    && e.connectContext().contains(CONNECTOR + "|task-" + task))
        .size();
  }
}
