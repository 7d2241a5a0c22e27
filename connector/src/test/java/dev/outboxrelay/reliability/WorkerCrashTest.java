package dev.outboxrelay.reliability;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.reliability.Verdict.Figures;
import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.OutboxDb;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorStateInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A Connect worker dies abruptly mid-stream and later rejoins. The in-process workers of the kit
 * can only be stopped gracefully, so the victim is a third worker in a JVM of its own that joins
 * the same group ({@link WorkerProcess}); it is killed with SIGKILL while its tasks hold leases and
 * have records in flight, then a new worker process joins in its place.
 */
class WorkerCrashTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.TWO_WORKERS);

  private static final int ROWS = 10_000;
  private static final int MAIN_TASKS = 4;

  @Test
  void aWorkerKilledMidStreamLosesNothingAndItsRowsAreTakenOver() throws Exception {
    ConnectCluster kit = CLUSTER;
    Path dir = Path.of("target", "reliability", "worker-crash");
    try (WorkerProcess victim = WorkerProcess.start(kit.workerProps(), dir.resolve("victim"));
        Scenario s = Scenario.open(kit, "worker-crash")) {
      Scenario.awaitTrue("the victim worker joins", Scenario.STARTUP, victim::healthy);
      s.deploy(s.mainConfig(MAIN_TASKS), s.otherConfig(2));
      // The victim's task instances, by the lease owners its own log names: a status read right
      // after deployment can predate a rebalance that moves a task to another worker.
      Scenario.awaitTrue(
          "a task of the main connector on the victim",
          Scenario.STARTUP,
          () -> !victim.leaseOwners(s.mainConnector).isEmpty());
      s.startLoad(Scenario.load(ROWS));
      s.awaitPublished(ROWS / 4);

      // Kill it while its task holds rows: once it is seen holding some, freeze it, and kill it
      // if it still holds some (else thaw it and try again), so the kill cannot race with its
      // last outcome write. Rows are held for milliseconds only, hence the short poll; the owners
      // are re-read from the log now and then, in case a task was restarted on the victim.
      VictimOwners owners = new VictimOwners(victim, s.mainConnector);
      Scenario.awaitTrue(
          "the victim frozen while its task holds leases",
          Scenario.DRAIN,
          Duration.ofMillis(5),
          () -> {
            if (heldBy(s, owners.current()) == 0) {
              return false;
            }
            victim.freeze();
            if (heldAfterSettling(s, owners.current()) > 0) {
              return true;
            }
            victim.thaw();
            return false;
          });
      // The owners that hold rows at the freeze (their replacements will have new ones).
      String[] victimOwners =
          s.db
              .map(
                  "SELECT DISTINCT lease_owner, lease_owner FROM outbox"
                      + " WHERE status = 'IN_FLIGHT' AND lease_owner = ANY (?)",
                  (Object) owners.current())
              .keySet()
              .toArray(String[]::new);
      String victimTasks = String.join(", ", victimOwners);
      victim.kill();
      long heldAtDeath = heldBy(s, victimOwners);
      Set<String> heldAtDeathIds =
          s.db
              .map(
                  "SELECT message_id, message_id FROM outbox"
                      + " WHERE status = 'IN_FLIGHT' AND lease_owner = ANY (?)",
                  (Object) victimOwners)
              .keySet();
      assertFalse(heldAtDeathIds.isEmpty(), "the frozen worker held rows");
      long killedAt = System.nanoTime();

      // A new worker process starts at once; it joins the group when its JVM is up, later.
      try (WorkerProcess rejoined =
          WorkerProcess.start(kit.workerProps(), dir.resolve("rejoined"))) {
        // Meanwhile the dead worker's leases expire and the surviving tasks reclaim its rows.
        Scenario.awaitTrue(
            "the dead worker's rows reclaimed", Scenario.DRAIN, () -> heldBy(s, victimOwners) == 0);
        long reclaimedAfter = secondsSince(killedAt);
        Scenario.awaitTrue("a worker rejoins", Scenario.STARTUP, rejoined::healthy);
        Scenario.awaitTrue(
            "every task running on a live worker",
            Scenario.STARTUP,
            () ->
                kit.allRunning(s.mainConnector)
                    && !onWorker(kit.status(s.mainConnector), victim.workerId()));
        long runningAfter = secondsSince(killedAt);
        Set<String> elsewhere = new HashSet<>(victim.claimLost());
        elsewhere.addAll(rejoined.claimLost());
        Figures f = Verdict.check(s, Map.of(), elsewhere);
        assertTrue(f.reclaimedRows() > 0, f::toString);
        // Each row the dead worker held was taken back as an abandoned row (its leases ran out),
        // not some other row reclaimed for another reason.
        Map<String, OutboxDb.Row> rows = s.db.rows(Scenario.MAIN_KEY);
        assertEquals(
            List.of(),
            heldAtDeathIds.stream()
                .filter(id -> rows.get(id) == null || rows.get(id).abandonedClaims() == 0)
                .sorted()
                .toList(),
            "rows the dead worker held, not reclaimed as abandoned rows");
        Scenario.report(
            "|  | worker-crash: task instances "
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

  private static boolean onWorker(ConnectorStateInfo status, String workerId) {
    return status.tasks().stream().anyMatch(t -> workerId.equals(t.workerId()));
  }

  /**
   * IN_FLIGHT rows held by these owners once the count has stopped changing: an outcome write the
   * victim sent just before it froze still completes in the database (CI once saw it publish every
   * row the frozen task held, leaving nothing to reclaim).
   */
  private static long heldAfterSettling(Scenario s, String[] owners) {
    long[] last = {heldBy(s, owners)};
    await("the frozen victim's leases settle")
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(25))
        .during(Duration.ofMillis(500))
        .until(
            () -> {
              long now = heldBy(s, owners);
              boolean same = now == last[0];
              last[0] = now;
              return same;
            });
    return last[0];
  }

  /** IN_FLIGHT rows held by exactly these lease owners. */
  private static long heldBy(Scenario s, String[] owners) {
    return s.db.scalar(
        "SELECT count(*) FROM outbox WHERE status = 'IN_FLIGHT' AND lease_owner = ANY (?)",
        (Object) owners);
  }

  /** The victim's lease owners of the main connector, re-read from its log every 250 ms. */
  private static final class VictimOwners {
    private final WorkerProcess victim;
    private final String connector;
    private String[] owners = new String[0];
    private long readAt;

    VictimOwners(WorkerProcess victim, String connector) {
      this.victim = victim;
      this.connector = connector;
    }

    String[] current() {
      if (owners.length == 0 || System.nanoTime() - readAt > Duration.ofMillis(250).toNanos()) {
        owners = victim.leaseOwners(connector).toArray(String[]::new);
        readAt = System.nanoTime();
      }
      return owners;
    }
  }
}
