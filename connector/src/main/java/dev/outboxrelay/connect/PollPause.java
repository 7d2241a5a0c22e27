package dev.outboxrelay.connect;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * A wait of {@code poll()} that may outlast one call. Connect stops a task only once its poll has
 * returned, so a poll waits at most one {@link #SLICE}: with a long {@code poll.interval.ms} a stop
 * would otherwise outlast Connect's graceful shutdown timeout (5 s), and the task would be
 * cancelled with records in flight. The rest of the wait is taken by the next polls; a wake-up (new
 * rows, freed room, stop) ends it at once. Real time, as the wake signal's waits are. Task thread
 * only.
 */
final class PollPause {
  static final Duration SLICE = Duration.ofSeconds(1);

  private final WakeSignal wake;
  private LongSupplier nanoTime = System::nanoTime;
  private boolean pausing;
  private long untilNanos;

  /**
   * Whether this poll waited a slice already: a poll that took the end of an earlier wait and then
   * began a new one waited two slices (a poll interval of 1.9 s: 0.9 s, then 1 s).
   */
  private boolean waitedThisPoll;

  /** Slices waited, for tests. */
  private long slicesWaited;

  PollPause(WakeSignal wake) {
    this.wake = wake;
  }

  /**
   * For tests: the clock that judges when a pause is over, in nanoseconds (the waits themselves
   * stay real, a slice at most).
   */
  void judgeBy(LongSupplier nanoTime) {
    this.nanoTime = nanoTime;
  }

  /**
   * Starts a pause of {@code wait} and waits its first slice, unless this poll waited one already:
   * then the next poll does.
   */
  void start(Duration wait) {
    arm(wait);
    if (!waitedThisPoll) {
      waitOneSlice();
    }
  }

  /**
   * Starts a pause of {@code wait} without waiting in this poll: after a claim that failed, having
   * waited for its connection or statement, the next poll waits.
   */
  void arm(Duration wait) {
    pausing = true;
    untilNanos = nanoTime.getAsLong() + wait.toNanos();
  }

  /**
   * At the start of a poll: waits up to one slice of the pause; true once it is over (woken, or its
   * time has passed), and from then on until the next {@link #start}.
   */
  boolean awaitSlice() {
    waitedThisPoll = false;
    return waitOneSlice();
  }

  private boolean waitOneSlice() {
    if (!pausing) {
      return true;
    }
    long remaining = untilNanos - nanoTime.getAsLong();
    if (remaining > 0) {
      waitedThisPoll = true;
      slicesWaited++;
      if (!wake.await(Duration.ofNanos(Math.min(remaining, SLICE.toNanos())))
          && untilNanos - nanoTime.getAsLong() > 0) {
        return false;
      }
    }
    pausing = false;
    return true;
  }

  /** For tests: how many slices were waited, in every poll together. */
  long slicesWaited() {
    return slicesWaited;
  }
}
