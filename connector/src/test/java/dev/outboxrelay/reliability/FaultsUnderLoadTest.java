package dev.outboxrelay.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.reliability.Verdict.Figures;
import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.ConnectMBeans;
import dev.outboxrelay.testing.HangOnceTransform;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.OutboxDb;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Faults injected while rows flow through several tasks on two workers, each in its own scenario,
 * with a second connector of another instance key on the same table throughout. Each ends with
 * {@link Verdict#check}: nothing lost, order kept, every duplicate accounted for.
 */
class FaultsUnderLoadTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.TWO_WORKERS);

  static final int ROWS = 10_000;

  /**
   * A task thread hangs in a transform until its leases expire (it stops renewing once it has not
   * polled for half a lease); the other tasks take its rows over; then it wakes up and tries to
   * record what it held. Every such write is rejected and the rows keep what their new owners
   * wrote.
   */
  @Test
  void aHungTaskIsFencedOffAndEveryStaleWriteIsRejected() throws Exception {
    try (Scenario s = Scenario.open(CLUSTER, "hung-task")) {
      String trigger = "m-" + ROWS / 4;
      HangOnceTransform.Hang hang = HangOnceTransform.arm(trigger);
      Set<String> takenOver;
      Map<String, String> newOwnersWrote;
      try { // released whatever fails: an armed hang would wait for a later test's row
        Map<String, String> main = s.mainConfig(3);
        main.put("transforms", "hang");
        main.put("transforms.hang.type", HangOnceTransform.class.getName());
        s.deploy(main, s.otherConfig(2));
        s.startLoad(Scenario.load(ROWS));
        Scenario.awaitTrue("the task hangs", Scenario.DRAIN, hang::hasHung);
        String hungOwner =
            s.db
                .map("SELECT message_id, lease_owner FROM outbox WHERE message_id = ?", trigger)
                .get(trigger);
        String[] held =
            s.db
                .map(
                    "SELECT message_id, lease_owner FROM outbox"
                        + " WHERE lease_owner = ? AND status = 'IN_FLIGHT'",
                    hungOwner)
                .keySet()
                .toArray(String[]::new);
        assertTrue(List.of(held).contains(trigger));

        // It stops renewing; its leases expire and the other tasks take its rows over.
        Scenario.awaitTrue(
            "the hung task's rows taken over and published",
            Scenario.DRAIN,
            () ->
                s.db.scalar(
                        "SELECT count(*) FROM outbox WHERE message_id = ANY (?)"
                            + " AND (status <> 'PUBLISHED' OR lease_owner = ?)",
                        held,
                        hungOwner)
                    == 0);
        assertTrue(
            LogCapture.get().tasksLogging(s.mainConnector, s.logMark, "reason=TASK_UNRESPONSIVE")
                > 0,
            "the hung task says it stopped renewing");
        takenOver =
            s.db
                .map(
                    "SELECT message_id, lease_owner FROM "
                        + s.db.messages()
                        + " WHERE message_id = ANY (?) AND abandoned_claims > 0",
                    (Object) held)
                .keySet();
        assertTrue(takenOver.contains(trigger), takenOver::toString);
        newOwnersWrote = s.db.snapshot("message_id = ANY (?)", (Object) ids(takenOver));
      } finally {
        hang.release();
      }

      // It wakes up, sends what it still held and tries to record it: every write is rejected.
      Scenario.awaitTrue(
          "a claim-lost line for every row taken over from the hung task",
          Scenario.DRAIN,
          () -> claimLostIds(s).containsAll(takenOver));
      assertEquals(newOwnersWrote, s.db.snapshot("message_id = ANY (?)", (Object) ids(takenOver)));

      Figures f = Verdict.check(s);
      // Every row taken over is reported; another task may lose a claim too on a loaded machine
      // (its row is then reported as well, and each duplicate is accounted for by the verdict).
      Set<String> reported = claimLostIds(s);
      assertTrue(reported.containsAll(takenOver), () -> takenOver + " not all in " + reported);
      assertTrue(f.duplicatedRows() <= reported.size(), f::toString);
    }
  }

  /**
   * The database goes away (new connections refused, every backend terminated) for longer than a
   * lease, then returns. Tasks stay RUNNING and recover by themselves.
   */
  @Test
  void theDatabaseGoesAwayForLongerThanALeaseAndReturns() throws Exception {
    try (Scenario s = Scenario.open(CLUSTER, "db-outage")) {
      s.deploy(s.mainConfig(3), s.otherConfig(2));
      s.startLoad(Scenario.load(ROWS));
      s.awaitPublished(ROWS / 4);
      long mark = LogCapture.get().mark();
      s.db.goAway();
      Instant goneAt = OutboxDb.serverNow();
      try {
        // Every lease held when it went away has expired by the database's own clock, and every
        // task has found the database unavailable (claiming, writing outcomes or renewing).
        Scenario.awaitTrue(
            "the outage outlasts every lease and every task met it",
            Scenario.DRAIN,
            () ->
                OutboxDb.serverNow().isAfter(goneAt.plus(Scenario.LEASE).plusSeconds(1))
                    && LogCapture.get().tasksLogging(s.mainConnector, mark, "reason=DB_UNAVAILABLE")
                        == 3);
        assertTrue(
            s.kit.allRunning(s.mainConnector), () -> s.kit.taskStates(s.mainConnector).toString());
      } finally {
        s.db.comeBack();
      }
      Figures f = Verdict.check(s);
      assertTrue(s.kit.allRunning(s.mainConnector), "tasks were never restarted or failed");
      assertTrue(s.kit.allRunning(s.otherConnector));
      assertEquals(List.of(), newErrorsAbout(mark, s), "errors logged during the outage");
      Scenario.report(
          "|  | db-outage: "
              + LogCapture.get().relayLines(mark).stream()
                  .filter(l -> l.message().contains("reason=DB_UNAVAILABLE"))
                  .count()
              + " refused database operations logged |");
    }
  }

  /**
   * Kafka stops acknowledging the records of two of the main connector's three tasks for longer
   * than a lease (their producers' I/O threads stall, as with a broker that accepts but does not
   * answer), while the cluster and Connect's group stay up and the third task keeps working and
   * probing for abandoned rows. The stalled tasks keep polling, so their leases are renewed and no
   * row is taken from them: zero duplicates, zero claim-lost, zero rows reclaimed.
   */
  @Test
  void kafkaStopsAcknowledgingForLongerThanALeaseAndNothingIsSentTwice() throws Exception {
    try (Scenario s = Scenario.open(CLUSTER, "kafka-slow")) {
      Map<String, String> main = s.mainConfig(3);
      main.put("producer.override.interceptor.classes", StallingInterceptor.class.getName());
      s.deploy(main, s.otherConfig(2));
      s.startLoad(Scenario.load(ROWS));
      s.awaitPublished(ROWS / 4);
      String[] stalledTasks = {s.mainConnector + "/task-0/%", s.mainConnector + "/task-1/%"};
      StallingInterceptor.stall(
          id ->
              id.equals("connector-producer-" + s.mainConnector + "-0")
                  || id.equals("connector-producer-" + s.mainConnector + "-1"));
      try {
        Scenario.awaitTrue(
            "two producers stop acknowledging",
            Scenario.DRAIN,
            () -> StallingInterceptor.stalledThreads() == 2);
        Instant stalledAt = OutboxDb.serverNow();
        // What those tasks hold now cannot be acknowledged until they resume.
        Map<String, String> waiting =
            s.db.map(
                "SELECT message_id, lease_token::text FROM outbox WHERE status = 'IN_FLIGHT'"
                    + " AND lease_owner LIKE ANY (?)",
                (Object) stalledTasks);
        assertTrue(waiting.size() > 0, "the stalled tasks hold rows");
        String[] ids = waiting.keySet().toArray(String[]::new);
        Timestamp renewedBeyond = Timestamp.from(stalledAt.plus(Scenario.LEASE).plusSeconds(1));
        Scenario.awaitTrue(
            "the waiting rows' leases renewed past the lease they had when Kafka stalled",
            Scenario.DRAIN,
            () ->
                OutboxDb.serverNow().isAfter(stalledAt.plus(Scenario.LEASE).plusSeconds(1))
                    && s.db.scalar(
                            "SELECT count(*) FROM outbox WHERE message_id = ANY (?)"
                                + " AND status = 'IN_FLIGHT' AND lease_expires_at <= ?",
                            ids,
                            renewedBeyond)
                        == 0);
        // Rows still wait for Kafka, longer than a lease, and none changed hands.
        assertTrue(
            s.db.scalar(
                    "SELECT count(*) FROM outbox WHERE message_id = ANY (?)"
                        + " AND status = 'IN_FLIGHT'",
                    (Object) ids)
                > 0,
            "rows still waiting for Kafka");
        assertEquals(
            waiting,
            s.db.map(
                "SELECT message_id, lease_token::text FROM outbox WHERE message_id = ANY (?)",
                (Object) ids),
            "every row held when Kafka stalled keeps its claim (lease token)");
      } finally {
        StallingInterceptor.resume();
      }
      Figures f = Verdict.check(s);
      assertEquals(0, f.duplicateRecords(), f::toString);
      assertEquals(0, f.claimLostLines(), f::toString);
      assertEquals(0, f.reclaimedRows(), f::toString);
      assertTrue(s.kit.allRunning(s.mainConnector));
      // Its connections name it, so the audit of other keys' rows can tell its changes (Verdict).
      assertTrue(s.db.backends(Scenario.MAIN_APPLICATION) > 0, "main connector's connections");
    }
  }

  /**
   * The broker itself stops (the only one: the whole cluster is away) for longer than a lease, and
   * later returns. Records wait in the producers meanwhile, and Connect may revoke tasks of a
   * worker that cannot reach its group coordinator. Nothing is lost (the verdict); records sent
   * again by the rows' new owners are each accounted for by a reclaimed lease or a claim-lost line;
   * and the connector's three tasks run again.
   */
  @Test
  void theBrokerStopsAndReturns() throws Exception {
    try (Scenario s = Scenario.open(CLUSTER, "broker-down")) {
      s.deploy(s.mainConfig(3), s.otherConfig(2));
      s.startLoad(Scenario.load(ROWS));
      s.awaitPublished(ROWS / 4);
      Instant stoppedAt = OutboxDb.serverNow();
      s.kit.connect().kafka().stopOnlyBrokers();
      try {
        Scenario.awaitTrue(
            "the broker stays away for longer than a lease",
            Scenario.DRAIN,
            () -> OutboxDb.serverNow().isAfter(stoppedAt.plus(Scenario.LEASE).plusSeconds(1)));
      } finally {
        s.kit.connect().kafka().restartOnlyBrokers();
      }
      Verdict.check(s);
      s.kit.awaitRunning(s.mainConnector, 3);
    }
  }

  /**
   * tasks.max changes twice mid-stream (2 to 4, then 4 to 2): each of the four tasks claims, then
   * two remain, and the verdict holds across both changes, with nothing reclaimed or sent twice.
   */
  @Test
  void tasksMaxChangesMidStream() throws Exception {
    try (Scenario s = Scenario.open(CLUSTER, "tasks-max")) {
      Map<String, String> main = s.mainConfig(2);
      s.deploy(main, s.otherConfig(2));
      s.startLoad(Scenario.load(ROWS));
      s.awaitPublished(ROWS / 4);
      main.put("tasks.max", "4");
      s.kit.deploy(s.mainConnector, main);
      Scenario.awaitTrue(
          "each of the four tasks claims",
          Scenario.DRAIN,
          () -> {
            for (int t = 0; t < 4; t++) {
              if (ConnectMBeans.taskMetric(s.mainConnector, t, "claimed-total").orElse(-1) <= 0) {
                return false;
              }
            }
            return true;
          });
      s.awaitPublished(ROWS / 2);
      main.put("tasks.max", "2");
      s.kit.deploy(s.mainConnector, main);
      Figures f = Verdict.check(s);
      assertEquals(2, s.kit.status(s.mainConnector).tasks().size(), f::toString);
      // The stopped tasks flushed their outcomes: no lease was left to run out.
      assertEquals(0, f.reclaimedRows(), f::toString);
      assertEquals(0, f.duplicateRecords(), f::toString);
    }
  }

  private static String[] ids(Set<String> ids) {
    return ids.toArray(String[]::new);
  }

  private static Set<String> claimLostIds(Scenario s) {
    return LogCapture.get().claimLost(s.mainConnector, s.logMark).stream()
        .map(LogCapture.ClaimLost::messageId)
        .collect(Collectors.toSet());
  }

  private static List<String> newErrorsAbout(long mark, Scenario s) {
    return LogCapture.get().errors(mark).stream()
        .map(LogCapture.Event::fullText)
        .filter(e -> e.contains(s.mainConnector) || e.contains(s.otherConnector))
        .toList();
  }
}
