package dev.outboxrelay.connect;

import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.writer.Printable;
import java.util.ArrayDeque;
import java.util.Deque;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exactly once: where Kafka committed the dead-letter records of rows parked before their batches
 * left, recorded in those rows at the next poll (an operator tells a row with a copy from one
 * without by it: {@code discard --dead-lettered}). Task thread only: Connect acknowledges an
 * exactly-once record on it, after its transaction committed. A position is what an operator reads,
 * not what delivery needs: one that cannot be written is dropped with a line in the log, the row
 * stays parked without it (as one whose transaction aborted), and nothing waits on it.
 */
final class DeadLetterCopies {
  private static final Logger log = LoggerFactory.getLogger(DeadLetterCopies.class);

  /** Positions kept while the database is away; older ones beyond it are dropped. */
  static final int MAX_PENDING = 10_000;

  /**
   * How long after a failed write the next is tried: a write that waits out the statement timeout
   * (a lock an operator's transaction holds on the row) must not hold every poll that long.
   */
  static final long RETRY_AFTER_MS = 30_000;

  private final OutboxStore store;
  private final RelayMetrics metrics;
  private final Time time;
  private final Deque<Copy> pending = new ArrayDeque<>();
  private boolean failureReported;

  /** On the monotonic clock ({@link Time#hiResClockMs()}). */
  private long nextAttemptMs;

  DeadLetterCopies(OutboxStore store, RelayMetrics metrics, Time time) {
    this.store = store;
    this.metrics = metrics;
    this.time = time;
    this.nextAttemptMs = time.hiResClockMs(); // at once (a monotonic clock may be negative)
  }

  private record Copy(
      String messageId, long token, long epoch, long batch, KafkaCoordinates position) {}

  /**
   * A dead-letter record of the row {@code messageId}, parked at this claim position, committed.
   */
  void committed(String messageId, long token, long epoch, long batch, KafkaCoordinates position) {
    if (pending.size() >= MAX_PENDING) {
      Copy dropped = pending.removeFirst();
      log.warn(
          "Dead-letter position not recorded: message_id={} (reason=DATABASE_UNAVAILABLE; the"
              + " row stays parked without it)",
          Printable.escape(dropped.messageId()));
    }
    pending.addLast(new Copy(messageId, token, epoch, batch, position));
  }

  /** Positions waiting to be recorded. */
  int pending() {
    return pending.size();
  }

  /**
   * Records the positions committed since the last poll; keeps them while the database is away,
   * tried again {@link #RETRY_AFTER_MS} after a failure.
   */
  void record() {
    if (pending.isEmpty() || time.hiResClockMs() < nextAttemptMs) {
      return;
    }
    while (!pending.isEmpty()) {
      Copy next = pending.peekFirst();
      try {
        if (!store.recordDeadLetterCopy(
            next.messageId(), next.token(), next.epoch(), next.batch(), next.position())) {
          log.info(
              "Dead-letter position not recorded: message_id={} changed since it was parked"
                  + " (reason=PARKED_ROW_CHANGED; requeued or discarded by an operator, or recorded"
                  + " by an earlier attempt whose reply was lost)",
              Printable.escape(next.messageId()));
        }
      } catch (OutboxStoreException e) {
        metrics.databaseErrors.incrementAndGet();
        if (e.isRetriable()) {
          nextAttemptMs = time.hiResClockMs() + RETRY_AFTER_MS;
          if (!failureReported) {
            failureReported = true;
            log.warn(
                "Recording {} dead-letter positions failed (reason={}, sqlState={}); tried again"
                    + " in 30 s",
                pending.size(),
                e.reasonCode(),
                e.sqlState());
          }
          return;
        }
        log.warn(
            "Dead-letter position not recorded: message_id={} (reason={}, sqlState={}; the row"
                + " stays parked without it)",
            Printable.escape(next.messageId()),
            e.reasonCode(),
            e.sqlState());
      }
      pending.removeFirst();
      failureReported = false;
    }
  }
}
