package dev.outboxrelay.connect;

import java.time.Duration;

/**
 * How long {@code poll()} waits after a claim found nothing: {@link #FIRST} right after a claim
 * that found rows, doubling while claims keep finding nothing, up to the poll interval. A steady
 * stream of rows is then picked up within milliseconds even without notifications, while an idle
 * task still claims only once per poll interval. Not thread-safe: the task thread owns it.
 */
final class IdleBackoff {
  static final Duration FIRST = Duration.ofMillis(10);

  private final Duration max;
  private Duration next;

  /** Starts idle: the first wait is the whole poll interval. */
  IdleBackoff(Duration pollInterval) {
    this.max = pollInterval;
    this.next = pollInterval;
  }

  /** A claim found rows: the next empty claim waits only {@link #FIRST}. */
  void claimedRows() {
    next = FIRST.compareTo(max) < 0 ? FIRST : max;
  }

  /** The wait after an empty claim; each one doubles the next, up to the poll interval. */
  Duration nextWait() {
    Duration wait = next;
    Duration doubled = next.multipliedBy(2);
    next = doubled.compareTo(max) < 0 ? doubled : max;
    return wait;
  }
}
