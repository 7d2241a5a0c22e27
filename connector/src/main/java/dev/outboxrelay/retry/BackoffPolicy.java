package dev.outboxrelay.retry;

import java.time.Duration;
import java.util.function.DoubleSupplier;

/**
 * Exponential backoff with jitter for retries. The delay is computed here, but the clock that
 * judges it lives in the row ({@code next_attempt_at}), never in memory.
 *
 * @param initial delay after the first failed attempt
 * @param max upper bound of any delay
 * @param multiplier growth per attempt, at least 1
 * @param jitter fraction in [0, 1] of the delay that is randomized (spreads retries of a batch)
 */
public record BackoffPolicy(Duration initial, Duration max, double multiplier, double jitter) {
  public BackoffPolicy {
    if (initial.isNegative() || max.compareTo(initial) < 0) {
      throw new IllegalArgumentException("backoff needs 0 <= initial <= max");
    }
    if (multiplier < 1.0 || Double.isNaN(multiplier)) {
      throw new IllegalArgumentException("backoff multiplier must be at least 1");
    }
    if (jitter < 0.0 || jitter > 1.0 || Double.isNaN(jitter)) {
      throw new IllegalArgumentException("backoff jitter must be within [0, 1]");
    }
  }

  /**
   * The delay before attempt number {@code attempt + 1}, where {@code attempt} (at least 1) failed
   * attempts have happened. {@code random} yields values in [0, 1).
   */
  public Duration delayAfter(int attempt, DoubleSupplier random) {
    double base = initial.toMillis() * Math.pow(multiplier, Math.max(0, attempt - 1));
    double capped = Math.min(base, max.toMillis());
    double jittered = capped * (1.0 - jitter * random.getAsDouble());
    return Duration.ofMillis(Math.max(0L, Math.round(jittered)));
  }
}
