package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;

class OutcomeLoopTest {

  /**
   * Whatever ends the thread, its exit hook runs once and admission closes: here an Error thrown
   * while the stop settles what Kafka never acknowledged (in production an OutOfMemoryError, say; a
   * plain Error here, which the test JVM's fork does not take for its own running out). Skipped,
   * the store's pool was never closed, and submit() kept queueing outcomes nobody would write.
   */
  @Test
  void anErrorWhileSettlingAtStopStillClosesAdmissionAndRunsTheExitHookOnce() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    var claimed = f.claimIntoLedger().get(0); // never acknowledged: settled at the stop
    Time time = new MockTime();
    StoreHealth health = new StoreHealth(f.metrics, time);
    LeaseRenewer renewer =
        new LeaseRenewer(f.store, f.ledger, f.metrics, f.settings, time, health, f.wake);
    OutcomeWriter writer =
        new OutcomeWriter(
            f.store,
            f.ledger,
            f.metrics,
            f.settings,
            time,
            f.wake,
            () -> {
              throw new Error("while settling at stop");
            });
    AtomicInteger exits = new AtomicInteger();
    OutcomeLoop loop =
        new OutcomeLoop(
            writer,
            renewer,
            f.ledger,
            f.metrics,
            health,
            time,
            f.wake,
            exits::incrementAndGet,
            "outcome-loop-test");
    loop.start();

    loop.stop(Duration.ZERO, Duration.ZERO);

    // The Error ends the thread, as it should: not Awaitility's to report as this test's failure.
    await().dontCatchUncaughtExceptions().until(() -> !loop.isAlive());
    assertEquals(1, exits.get(), "the exit hook ran once");
    assertFalse(
        loop.submit(new PendingOutcome.Released("m1", claimed.lease())),
        "admission closed: a late outcome is refused, not queued for nobody");
  }
}
