package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class WakeSignalTest {

  /**
   * An interrupt does not end a wait: a wait that an interrupt ended would end at once every time
   * after it, and a poll waiting in a loop would spin. The flag is there again on return.
   */
  @Test
  void anInterruptedThreadStillWaitsForTheWakeUpAndKeepsItsFlag() {
    WakeSignal wake = new WakeSignal();
    Thread[] waiter = new Thread[1];
    CompletableFuture<List<Boolean>> result =
        CompletableFuture.supplyAsync(
            () -> {
              Thread.currentThread().interrupt();
              boolean woke = wake.await(Duration.ofHours(1));
              return List.of(woke, Thread.interrupted());
            },
            r -> {
              waiter[0] = new Thread(r, "waiter");
              waiter[0].start();
            });
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> waiter[0] != null && waiter[0].getState() == Thread.State.TIMED_WAITING);
    assertFalse(result.isDone(), "still waiting, interrupted as it was");

    wake.wake();
    assertEquals(List.of(true, true), result.join(), "woken, and the interrupt restored");
  }

  @Test
  void aWakeUpBeforeTheWaitIsNotLost() {
    WakeSignal wake = new WakeSignal();
    wake.wake();
    assertTrue(wake.isSignalled());
    assertTrue(wake.await(Duration.ofHours(1)));
    assertFalse(wake.isSignalled());
  }

  @Test
  void aWaitWithoutAWakeUpEndsWhenItsTimeHasPassed() {
    assertFalse(new WakeSignal().await(Duration.ZERO));
  }
}
