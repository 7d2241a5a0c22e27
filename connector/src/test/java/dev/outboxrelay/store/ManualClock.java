package dev.outboxrelay.store;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/** A clock that only moves when told to. For tests and deterministic simulations. */
public final class ManualClock implements RelayClock {
  private final AtomicReference<Instant> now;

  public ManualClock(Instant start) {
    this.now = new AtomicReference<>(Objects.requireNonNull(start, "start"));
  }

  @Override
  public Instant override() {
    return now.get();
  }

  public Instant now() {
    return now.get();
  }

  public Instant advance(Duration by) {
    return now.updateAndGet(current -> current.plus(by));
  }
}
