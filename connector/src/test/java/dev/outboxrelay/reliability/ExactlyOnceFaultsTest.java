package dev.outboxrelay.reliability;

import static dev.outboxrelay.reliability.ExactlyOnceMode.exactlyOnce;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.reliability.ExactlyOnceMode.Recoveries;
import dev.outboxrelay.reliability.ExactlyOnceVerdict.Figures;
import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.ConnectMBeans;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.OutboxDb;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Faults of {@link FaultsUnderLoadTest} and a tasks.max change in exactly-once mode: both
 * connectors exactly-once, on workers with exactly-once source support. Each ends with {@link
 * ExactlyOnceVerdict#check}: a read_committed consumer sees every row once, in order.
 */
class ExactlyOnceFaultsTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ExactlyOnceMode.WORKERS);

  static final int ROWS = Integer.getInteger("outbox.reliability.eos.rows", 10_000);

  @AfterEach
  void releaseHangs() {
    HangInTransactionTransform.disarm();
  }

  /**
   * tasks.max 3 → 1 → 4 while acknowledgement writes are held back, so that at each change the rows
   * of the stopping generation are still IN_FLIGHT although Kafka committed their records: each new
   * generation must record them PUBLISHED from the offsets (recovery), not send them again.
   */
  @Test
  void tasksMaxChangesThreeToOneToFourWithRowsInFlight() throws Exception {
    try (Scenario s = Scenario.open(CLUSTER, "eos-tasks-max")) {
      OutcomeHold hold = OutcomeHold.install(s.db, Scenario.MAIN_KEY);
      Map<String, String> main = exactlyOnce(s.mainConfig(3));
      s.deploy(main, exactlyOnce(s.otherConfig(2)));
      s.startLoad(Scenario.load(ROWS));
      s.awaitPublished(ROWS / 4);
      hold.hold();
      for (int tasks : new int[] {1, 4}) {
        Scenario.awaitTrue(
            "rows committed in Kafka wait IN_FLIGHT for their acknowledgement write",
            Scenario.DRAIN,
            () -> s.db.count("IN_FLIGHT", Scenario.MAIN_KEY) >= 100);
        long inFlight = s.db.count("IN_FLIGHT", Scenario.MAIN_KEY);
        long mark = LogCapture.get().mark();
        main.put("tasks.max", Integer.toString(tasks));
        s.kit.deploy(s.mainConnector, main);
        Scenario.awaitTrue(
            "each new task recovered",
            Scenario.STARTUP,
            () -> ExactlyOnceMode.recoveries(s.mainConnector, mark).starts() >= tasks);
        Recoveries recovered = ExactlyOnceMode.recoveries(s.mainConnector, mark);
        assertTrue(
            recovered.published() > 0,
            "tasks.max -> " + tasks + ": " + inFlight + " in flight, recovered " + recovered);
        assertTrue(
            ConnectMBeans.sumOverTasks(s.mainConnector, tasks, "recovered-published-total") > 0,
            "recovered-published-total");
        Scenario.report(
            "|  | eos-tasks-max: -> "
                + tasks
                + " with "
                + inFlight
                + " rows IN_FLIGHT; recovery recorded "
                + recovered.published()
                + " PUBLISHED, released "
                + recovered.released()
                + " |");
      }
      hold.resume();
      Figures f = ExactlyOnceVerdict.check(s);
      assertEquals(4, s.kit.status(s.mainConnector).tasks().size(), f::toString);
      assertTrue(f.recordedFromOffsets() > 0, f::toString);
    }
  }

  /**
   * A task thread hangs in a transform with its transaction open for longer than the producer's
   * transaction.timeout.ms: the broker aborts the transaction (and fences the producer); released,
   * the task fails; restarted through REST, it releases the rows of the aborted transaction and
   * sends them again. A read_uncommitted consumer sees the aborted records, a read_committed one
   * each row once.
   */
  @Test
  void aHungTaskWhoseTransactionTimesOutIsRestartedWithoutDuplicates() throws Exception {
    try (Scenario s = Scenario.open(CLUSTER, "eos-hung-task")) {
      Map<String, String> main = exactlyOnce(s.mainConfig(3));
      main.put("producer.override.transaction.timeout.ms", "5000");
      main.put("transforms", "hang");
      main.put("transforms.hang.type", HangInTransactionTransform.class.getName());
      s.deploy(main, exactlyOnce(s.otherConfig(2)));
      s.startLoad(Scenario.load(ROWS));
      s.awaitPublished(ROWS / 4);
      HangInTransactionTransform.Hang hang = HangInTransactionTransform.arm();
      int task;
      try {
        Scenario.awaitTrue("a task hangs mid-transaction", Scenario.DRAIN, hang::hasHung);
        task = Integer.parseInt(hang.thread().substring(hang.thread().lastIndexOf('-') + 1));
        String transactionalId = ExactlyOnceMode.transactionalId(s.kit, s.mainConnector, task);
        Scenario.awaitTrue(
            "the broker aborts the hung transaction",
            Scenario.DRAIN,
            () -> aborted(ExactlyOnceMode.transaction(s.kit, transactionalId)));
      } finally {
        hang.release();
      }
      Scenario.awaitTrue(
          "the fenced task fails",
          Scenario.DRAIN,
          () -> s.kit.taskStates(s.mainConnector).contains(task + "=FAILED"));
      long mark = LogCapture.get().mark();
      s.kit.restartFailedTasks(s.mainConnector);
      s.kit.awaitRunning(s.mainConnector, 3);
      Figures f = ExactlyOnceVerdict.check(s);
      Recoveries restarted = ExactlyOnceMode.recoveries(s.mainConnector, mark);
      assertTrue(restarted.released() > 0, () -> "the restart released nothing: " + restarted);
      assertTrue(f.abortedRecords() > 0, () -> "no aborted record in Kafka: " + f);
    }
  }

  /**
   * The database goes away (connections refused, every backend terminated) for longer than a lease,
   * then returns. No task may take another's rows, so nothing is sent twice.
   */
  @Test
  void theDatabaseGoesAwayForLongerThanALease() throws Exception {
    try (Scenario s = Scenario.open(CLUSTER, "eos-db-outage")) {
      s.deploy(exactlyOnce(s.mainConfig(3)), exactlyOnce(s.otherConfig(2)));
      s.startLoad(Scenario.load(ROWS));
      s.awaitPublished(ROWS / 4);
      long mark = LogCapture.get().mark();
      s.db.goAway();
      Instant goneAt = OutboxDb.serverNow();
      try {
        Scenario.awaitTrue(
            "the outage outlasts every lease and every task met it",
            Scenario.DRAIN,
            () ->
                OutboxDb.serverNow().isAfter(goneAt.plus(Scenario.LEASE).plusSeconds(1))
                    && LogCapture.get().tasksLogging(s.mainConnector, mark, "reason=DB_UNAVAILABLE")
                        == 3);
      } finally {
        s.db.comeBack();
      }
      ExactlyOnceVerdict.check(s);
      assertTrue(s.kit.allRunning(s.mainConnector), () -> s.kit.taskStates(s.mainConnector) + "");
    }
  }

  private static boolean aborted(Optional<TransactionDescription> transaction) {
    return transaction
        .map(t -> Set.of(TransactionState.PREPARE_ABORT, TransactionState.COMPLETE_ABORT))
        .filter(states -> states.contains(transaction.get().state()))
        .isPresent();
  }
}
