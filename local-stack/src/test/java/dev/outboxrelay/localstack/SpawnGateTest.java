package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
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
    CompletableFuture<Void> close = CompletableFuture.runAsync(gate::close);
    assertFalse(close.isDone(), "close must wait while a process is being started");
    release.countDown();
    close.get(10, TimeUnit.SECONDS);
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
