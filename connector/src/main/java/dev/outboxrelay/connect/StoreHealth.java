package dev.outboxrelay.connect;

import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.OutboxStoreException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.utils.Time;

/**
 * What the task's background threads learned about the store and about themselves: when a database
 * call last failed, and the first failure the task must fail with (a non-retriable store error, or
 * a thread that died). Shared by the outcome writer, the lease renewer and the task thread.
 */
final class StoreHealth {
  static final long NO_ERROR = Long.MIN_VALUE;

  /** Why the task must fail, already sanitized for Connect's REST status. */
  record Failure(String reasonCode, String detail) {
    String message() {
      return "outbox-relay: " + detail + " (reason=" + reasonCode + ")";
    }
  }

  private final RelayMetrics metrics;
  private final Time time;
  private final AtomicReference<OutboxStoreException> fatalStoreError = new AtomicReference<>();
  private final AtomicReference<Failure> threadFailure = new AtomicReference<>();
  private volatile long lastDatabaseErrorMs = NO_ERROR;

  StoreHealth(RelayMetrics metrics, Time time) {
    this.metrics = metrics;
    this.time = time;
  }

  /** Records a failed database call; a non-retriable one fails the task. */
  void databaseError(OutboxStoreException e) {
    metrics.databaseErrors.incrementAndGet();
    lastDatabaseErrorMs = time.hiResClockMs();
    if (!e.isRetriable()) {
      fatalStoreError.compareAndSet(null, e);
    }
  }

  /** A background thread ended by an unexpected throwable: the task cannot go on. */
  void threadDied(String threadRole, Throwable t) {
    threadFailure.compareAndSet(
        null,
        new Failure(
            "BACKGROUND_THREAD_DIED",
            "the " + threadRole + " thread stopped unexpectedly (" + t.getClass().getName() + ")"));
  }

  /**
   * When a database call last failed, on the monotonic clock ({@link Time#hiResClockMs()}), or
   * {@link #NO_ERROR}: only what has passed since is meant, never an instant.
   */
  long lastDatabaseErrorMs() {
    return lastDatabaseErrorMs;
  }

  /** The first non-retriable store failure (credentials, schema), or null. */
  OutboxStoreException fatalStoreError() {
    return fatalStoreError.get();
  }

  /** The first background thread that died, or null. */
  Failure threadFailure() {
    return threadFailure.get();
  }
}
