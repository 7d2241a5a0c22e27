package dev.outboxrelay.localstack;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * Waits for a condition by polling it, checking between polls that the process being waited for is
 * still alive, so a crash is reported at once instead of after the timeout.
 */
final class Waiter {
  private static final Duration POLL = Duration.ofMillis(200);

  private Waiter() {}

  /**
   * Returns when {@code condition} holds. Throws a {@link StackException} naming {@code what} when
   * {@code timeout} passes first; {@code stillAlive} throws its own when the awaited process died.
   */
  static void until(String what, Duration timeout, BooleanSupplier condition, Runnable stillAlive) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      stillAlive.run();
      if (condition.getAsBoolean()) {
        return;
      }
      if (System.nanoTime() - deadline > 0) {
        throw new StackException(what + " did not happen within " + timeout.toSeconds() + " s");
      }
      try {
        Thread.sleep(POLL.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new StackException("interrupted while waiting: " + what, e);
      }
    }
  }
}
