package dev.outboxrelay.testing;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.utils.MockTime;

/**
 * A {@link MockTime} whose wall clock can be stepped, back as well as forward, as NTP or chrony's
 * makestep, or a VM's resume, steps a worker's: {@link #milliseconds()} moves by the step, while
 * {@link #nanoseconds()} and {@link #hiResClockMs()}, the monotonic clock, do not. {@link #sleep}
 * moves both, as MockTime's does ({@code setCurrentTimeMs} refuses to go back).
 */
public final class SteppableTime extends MockTime {
  private final AtomicLong wallOffsetMs = new AtomicLong();

  /** Steps the wall clock by {@code step} (negative: back); the monotonic clock stays. */
  public void stepWallClock(Duration step) {
    wallOffsetMs.addAndGet(step.toMillis());
  }

  @Override
  public long milliseconds() {
    return super.milliseconds() + wallOffsetMs.get();
  }
}
