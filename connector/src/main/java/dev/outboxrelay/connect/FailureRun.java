package dev.outboxrelay.connect;

import dev.outboxrelay.store.OutboxStoreException;
import java.time.Duration;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;

/**
 * A run of retriable database failures of one thread's work (the task thread's claims, the outcome
 * thread's writes), said once: the first failure of a kind (its reason, SQLState and operation) at
 * WARN, its repeats at DEBUG, at WARN again when the kind changes or every {@link #REMINDER} while
 * the run lasts; the caller says its end at INFO. A 10-minute outage logged a WARN at every poll
 * and every retry, hundreds per task, and nothing when it ended. Confined to one thread.
 */
final class FailureRun {
  static final Duration REMINDER = Duration.ofMinutes(5);

  /** What every line of a run says of how its repeats are logged. */
  private static final String SAID_ONCE =
      " (said at WARN once, then at DEBUG while the same failure lasts, again every 5 minutes;"
          + " its end at INFO)";

  private final Time time;
  private String kind; // null: no run
  private int failures;
  private long warnedAtMs;

  FailureRun(Time time) {
    this.time = time;
  }

  /**
   * Counts the failure and says it ({@code format}, then how repeats are said) at WARN where it is
   * news, at DEBUG otherwise.
   */
  void failed(OutboxStoreException e, Logger log, String format, Object... args) {
    String failed = e.reasonCode() + "/" + e.sqlState() + "/" + e.operation();
    long now = time.hiResClockMs();
    failures++;
    if (!failed.equals(kind) || now - warnedAtMs >= REMINDER.toMillis()) {
      kind = failed;
      warnedAtMs = now;
      log.warn(format + SAID_ONCE, args);
    } else {
      log.debug(format + SAID_ONCE, args);
    }
  }

  /** Ends the run: how many failures it had (0: there was none). */
  int end() {
    int had = failures;
    failures = 0;
    kind = null;
    return had;
  }
}
