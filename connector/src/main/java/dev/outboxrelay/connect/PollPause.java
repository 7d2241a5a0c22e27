package dev.outboxrelay.connect;

import java.time.Duration;

/**
 * A wait of {@code poll()} that may outlast one call. Connect stops a task only once its poll has
 * returned, so no poll waits longer than {@link #SLICE}: with a long {@code poll.interval.ms} a
 * stop would otherwise outlast Connect's graceful shutdown timeout (5 s), and the task would be
 * cancelled with records in flight. The rest of the wait is taken by the next polls; a wake-up (new
 * rows, freed room, stop) ends it at once. Real time, as the wake signal's waits are. Task thread
 * only.
 */
final class PollPause {
  static final Duration SLICE = Duration.ofSeconds(1);

  private final WakeSignal wake;
  private boolean pausing;
  private long untilNanos;

  PollPause(WakeSignal wake) {
    this.wake = wake;
  }

  /** Starts a pause of {@code wait} and waits its first slice. */
  void start(Duration wait) {
    pausing = true;
    untilNanos = System.nanoTime() + wait.toNanos();
    awaitSlice();
  }

  /**
   * Waits up to one slice of the pause; true once it is over (woken, or its time has passed), and
   * from then on until the next {@link #start}.
   */
  boolean awaitSlice() {
    if (!pausing) {
      return true;
    }
    long remaining = untilNanos - System.nanoTime();
    if (remaining > 0
        && !wake.await(Duration.ofNanos(Math.min(remaining, SLICE.toNanos())))
        && untilNanos - System.nanoTime() > 0) {
      return false;
    }
    pausing = false;
    return true;
  }
}
