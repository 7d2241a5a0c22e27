package dev.outboxrelay.reliability;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.reliability.Verdict.Figures;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorStateInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A Connect worker dies abruptly mid-stream and later rejoins. The in-process workers of the kit
 * can only be stopped gracefully, so the victim is a third worker in a JVM of its own that joins
 * the same group ({@link WorkerProcess}); it is killed with SIGKILL while its tasks hold leases and
 * have records in flight, then a new worker process joins in its place.
 */
@ExtendWith(ReliabilityCluster.class)
class WorkerCrashTest {
  private static final int ROWS = 10_000;
  private static final int MAIN_TASKS = 4;

  @Test
  void aWorkerKilledMidStreamLosesNothingAndItsRowsAreTakenOver() throws Exception {
    ConnectKit kit = ReliabilityCluster.kit();
    Path dir = Path.of("target", "reliability", "worker-crash");
    try (WorkerProcess victim = WorkerProcess.start(kit.workerProps(), dir.resolve("victim"));
        Scenario s = Scenario.open(kit, "worker-crash")) {
      ConnectKit.awaitTrue("the victim worker joins", ConnectKit.STARTUP, victim::healthy);
      s.deploy(s.mainConfig(MAIN_TASKS), s.otherConfig(2));
      Set<Integer> victimTasks = tasksOn(kit.status(s.mainConnector), victim.workerId());
      assertFalse(
          victimTasks.isEmpty(), () -> "no task on the victim: " + kit.status(s.mainConnector));
      s.startLoad(Scenario.load(ROWS));
      s.awaitPublished(ROWS / 4);

      // Kill it while its task holds rows: once it is seen holding some, freeze it, and kill it
      // if it still holds some (else thaw it and try again), so the kill cannot race with its
      // last outcome write. Rows are held for milliseconds only, hence the short poll.
      String[] victimTaskPatterns = ownerPatterns(s.mainConnector, victimTasks);
      ConnectKit.awaitTrue(
          "the victim frozen while its task holds leases",
          Scenario.DRAIN,
          Duration.ofMillis(5),
          () -> {
            if (heldByOwnerLike(s, victimTaskPatterns) == 0) {
              return false;
            }
            victim.freeze();
            if (heldByOwnerLike(s, victimTaskPatterns) > 0) {
              return true;
            }
            victim.thaw();
            return false;
          });
      // The lease owners of the frozen task instances (their replacements will have new ones).
      String[] victimOwners =
          s.db
              .map(
                  "SELECT DISTINCT lease_owner, lease_owner FROM outbox"
                      + " WHERE status = 'IN_FLIGHT' AND lease_owner LIKE ANY (?)",
                  (Object) victimTaskPatterns)
              .keySet()
              .toArray(String[]::new);
      victim.kill();
      long heldAtDeath = heldBy(s, victimOwners);
      long killedAt = System.nanoTime();

      // A new worker process starts at once; it joins the group when its JVM is up, later.
      try (WorkerProcess rejoined =
          WorkerProcess.start(kit.workerProps(), dir.resolve("rejoined"))) {
        // Meanwhile the dead worker's leases expire and the surviving tasks reclaim its rows.
        ConnectKit.awaitTrue(
            "the dead worker's rows reclaimed", Scenario.DRAIN, () -> heldBy(s, victimOwners) == 0);
        long reclaimedAfter = secondsSince(killedAt);
        ConnectKit.awaitTrue("a worker rejoins", ConnectKit.STARTUP, rejoined::healthy);
        ConnectKit.awaitTrue(
            "every task running on a live worker",
            ConnectKit.STARTUP,
            () ->
                kit.allRunning(s.mainConnector)
                    && !onWorker(kit.status(s.mainConnector), victim.workerId()));
        long runningAfter = secondsSince(killedAt);
        Set<String> elsewhere = new HashSet<>(victim.claimLost());
        elsewhere.addAll(rejoined.claimLost());
        Figures f = Verdict.check(s, Map.of(), elsewhere);
        assertTrue(f.reclaimedRows() > 0, f::toString);
        Scenario.report(
            "|  | worker-crash: tasks "
                + victimTasks
                + " killed holding "
                + heldAtDeath
                + " leases; their rows reclaimed "
                + reclaimedAfter
                + " s after the kill; all tasks running again after "
                + runningAfter
                + " s |");
      }
    }
  }

  private static long secondsSince(long nanos) {
    return Duration.ofNanos(System.nanoTime() - nanos).toSeconds();
  }

  private static Set<Integer> tasksOn(ConnectorStateInfo status, String workerId) {
    Set<Integer> tasks = new HashSet<>();
    status.tasks().stream()
        .filter(t -> workerId.equals(t.workerId()))
        .forEach(t -> tasks.add(t.id()));
    return tasks;
  }

  private static boolean onWorker(ConnectorStateInfo status, String workerId) {
    return status.tasks().stream().anyMatch(t -> workerId.equals(t.workerId()));
  }

  private static String[] ownerPatterns(String connector, Set<Integer> tasks) {
    return tasks.stream().map(t -> connector + "/task-" + t + "/%").toArray(String[]::new);
  }

  /** IN_FLIGHT rows held by any instance of the given tasks (LIKE patterns). */
  private static long heldByOwnerLike(Scenario s, String[] ownerPatterns) {
    return s.db.count(
        "SELECT count(*) FROM outbox WHERE status = 'IN_FLIGHT' AND lease_owner LIKE ANY (?)",
        (Object) ownerPatterns);
  }

  /** IN_FLIGHT rows held by exactly these lease owners. */
  private static long heldBy(Scenario s, String[] owners) {
    return s.db.count(
        "SELECT count(*) FROM outbox WHERE status = 'IN_FLIGHT' AND lease_owner = ANY (?)",
        (Object) owners);
  }
}
