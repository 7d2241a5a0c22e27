package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.Thread.State;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

class SpawnGateTest {
  @Test
  void aClosedGateStartsNothing() {
    SpawnGate gate = new SpawnGate();
    assertEquals("started", gate.spawn(() -> "started"));
    gate.close();
    assertThrows(StackException.class, () -> gate.spawn(() -> "too late"));
  }

  @Test
  void closingWaitsForASpawnInProgress() throws Exception {
    SpawnGate gate = new SpawnGate();
    CountDownLatch spawning = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    CompletableFuture<String> spawn =
        CompletableFuture.supplyAsync(
            () ->
                gate.spawn(
                    () -> {
                      spawning.countDown();
                      await(release);
                      return "pid file written";
                    }));
    assertTrue(spawning.await(10, TimeUnit.SECONDS));
    Thread closer = new Thread(gate::close, "closer");
    closer.start();
    // Blocked on the gate, not merely not scheduled yet: only then does "not done" mean it waits.
    Awaitility.await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> closer.getState() == State.BLOCKED);
    assertTrue(closer.isAlive(), "close must wait while a process is being started");
    release.countDown();
    closer.join(10_000);
    assertFalse(closer.isAlive(), "close returns once the spawn is done");
    assertEquals("pid file written", spawn.get(10, TimeUnit.SECONDS));
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
