package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;

import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.OutboxDb;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A real worker's paused task thread is seen as paused (by its frames, all a task can see of a
 * pause), and a resumed one no longer: the lease renewer keeps a paused task's leases on it.
 */
class ConnectPauseTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.ONE_WORKER);

  private static final String CONNECTOR = "pause-relay";

  @Test
  void aPausedTaskThreadIsSeenPausedAndAResumedOneNot() throws Exception {
    try (OutboxDb db = OutboxDb.fresh("it_pause").migrate()) {
      CLUSTER.deploy(CONNECTOR, ConnectCluster.relayConfig(db, "pause", 1));
      try {
        CLUSTER.connect().pauseConnector(CONNECTOR);
        await().until(() -> taskThread().filter(ConnectPause::isPaused).isPresent());
        CLUSTER.connect().resumeConnector(CONNECTOR);
        await().until(() -> taskThread().filter(t -> !ConnectPause.isPaused(t)).isPresent());
      } finally {
        CLUSTER.delete(CONNECTOR);
      }
    }
  }

  /** Connect names a task's thread after the task while it runs the task. */
  private static Optional<Thread> taskThread() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals("task-thread-" + CONNECTOR + "-0"))
        .findFirst();
  }
}
