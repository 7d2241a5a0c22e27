package dev.outboxrelay.connect;

import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.DeadLetterCopy;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.writer.Printable;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exactly once: where Kafka committed the dead-letter records of rows parked before their batches
 * left, recorded in those rows at the next poll (an operator tells a row with a copy from one
 * without by it: {@code discard --dead-lettered}). Written on the task thread, where Connect
 * acknowledges an exactly-once record after its transaction committed; {@link #stop} comes from
 * Connect's stopping thread. A position is what an operator reads, not what delivery needs: one
 * that cannot be written is dropped with a line in the log, the row stays parked without it (as one
 * whose transaction aborted), and nothing waits on it. So are those still waiting when the task
 * stops (the last transaction's, usually): no poll comes to write them, and a write in stop() could
 * hold Connect's stop for a statement timeout.
 */
final class DeadLetterCopies {
  private static final Logger log = LoggerFactory.getLogger(DeadLetterCopies.class);

  /** Positions kept while the database is away; older ones beyond it are dropped. */
  static final int MAX_PENDING = 10_000;

  /**
   * {@link #MAX_PENDING}, or what one transaction may commit if more (the task's in-flight limit
   * and a claim beyond it, which count dead letters too): a healthy database never has a position
   * dropped between two polls.
   */
  private final int maxPending;

  /**
   * How long after a failed write the next is tried: a write that waits out the statement timeout
   * (a lock an operator's transaction holds on the row) must not hold every poll that long.
   */
  static final long RETRY_AFTER_MS = 30_000;

  /**
   * How long one poll writes positions before it leaves the rest to the next: Connect stops a task
   * only once its poll returns, within 5 s for the whole stop.
   */
  static final long WRITING_PER_POLL_MS = 1_000;

  /**
   * The most positions one statement writes: one each took the poll's second for one or two
   * thousand (a storm of unpublishable rows), and held the claims meanwhile.
   */
  static final int PER_STATEMENT = 1_000;

  private final int perStatement;

  /** How many rows changed since they were parked one line names; it counts the rest. */
  static final int NAMED_PER_LINE = 10;

  /**
   * How many of the next positions are written one per statement: those of a statement refused for
   * one of its rows (a trigger or a check of an adopted table), so that only that row's is dropped.
   */
  private int aloneLeft;

  private final OutboxStore store;
  private final StoreHealth health;
  private final RelayMetrics metrics;
  private final Time time;

  /** Each position is taken off before its write, so that a stop never reports one written. */
  private final Deque<DeadLetterCopy> pending = new ConcurrentLinkedDeque<>();

  /** How many positions {@link #pending} holds (its own size() walks it). */
  private final AtomicInteger count = new AtomicInteger();

  private volatile boolean stopped;
  private boolean failureReported;

  /** On the monotonic clock ({@link Time#hiResClockMs()}). */
  private long nextAttemptMs;

  DeadLetterCopies(OutboxStore store, StoreHealth health, RelayMetrics metrics, Time time) {
    this(store, health, metrics, time, MAX_PENDING);
  }

  /** {@code inOneTransaction}: the most records one transaction of the task may hold. */
  DeadLetterCopies(
      OutboxStore store,
      StoreHealth health,
      RelayMetrics metrics,
      Time time,
      int inOneTransaction) {
    this(store, health, metrics, time, inOneTransaction, PER_STATEMENT);
  }

  /** {@code perStatement}: the most positions one statement writes. */
  DeadLetterCopies(
      OutboxStore store,
      StoreHealth health,
      RelayMetrics metrics,
      Time time,
      int inOneTransaction,
      int perStatement) {
    this.perStatement = perStatement;
    this.maxPending = Math.max(MAX_PENDING, inOneTransaction);
    this.store = store;
    this.health = health;
    this.metrics = metrics;
    this.time = time;
    this.nextAttemptMs = time.hiResClockMs(); // at once (a monotonic clock may be negative)
  }

  /**
   * A dead-letter record of the row {@code messageId} ({@code seq}), parked at this claim position,
   * committed.
   */
  void committed(
      String messageId, long seq, long token, long epoch, long batch, KafkaCoordinates position) {
    if (count.get() >= maxPending) {
      DeadLetterCopy dropped = take();
      if (dropped != null) {
        notRecorded(dropped, "DATABASE_UNAVAILABLE");
      }
    }
    count.incrementAndGet(); // first, so that a take() never counts below zero
    pending.addLast(new DeadLetterCopy(messageId, seq, token, epoch, batch, position));
    if (stopped) {
      dropPending(); // acknowledged after the stop: no poll will write it
    }
  }

  /**
   * The task stops: what waits is dropped, each with its line, and so is what Kafka acknowledges
   * later. Any thread.
   */
  void stop() {
    stopped = true;
    dropPending();
  }

  private DeadLetterCopy take() {
    DeadLetterCopy copy = pending.pollFirst();
    if (copy != null) {
      count.decrementAndGet();
    }
    return copy;
  }

  private void dropPending() {
    for (DeadLetterCopy c = take(); c != null; c = take()) {
      notRecorded(c, "TASK_STOPPED");
    }
  }

  private static void notRecorded(DeadLetterCopy copy, String reasonCode) {
    log.warn(
        "Dead-letter position not recorded: message_id={} (reason={}; the row stays parked"
            + " without it)",
        Printable.escape(copy.messageId()),
        reasonCode);
  }

  /** Positions waiting to be recorded. */
  int pending() {
    return count.get();
  }

  /**
   * Records the positions committed since the last poll, {@link #PER_STATEMENT} a statement, for
   * {@link #WRITING_PER_POLL_MS} at most; keeps them while the database is away, tried again {@link
   * #RETRY_AFTER_MS} after a failure. Task thread only.
   */
  void record() {
    long startedMs = time.hiResClockMs();
    if (pending.isEmpty() || startedMs < nextAttemptMs) {
      return;
    }
    while (time.hiResClockMs() - startedMs < WRITING_PER_POLL_MS) {
      List<DeadLetterCopy> next = take(aloneLeft > 0 ? 1 : perStatement);
      if (next.isEmpty()) {
        return;
      }
      List<Boolean> recorded;
      try {
        recorded = store.recordDeadLetterCopies(next);
      } catch (OutboxStoreException e) {
        if (e.isRetriable()) {
          health.databaseError(e);
          keepForRetry(next, e);
          return;
        }
        if (failsTheTask(e)) {
          health.databaseError(e); // as at any other write: a privilege revoked, say
          log.warn(
              "Recording dead-letter positions failed (reason={}, sqlState={}); the task fails",
              e.reasonCode(),
              e.sqlState());
          putBack(next); // the task fails at its next poll: not one failing write per position
          return;
        }
        if (next.size() > 1) {
          putBack(next); // refused for one of its rows: each is written alone, that one dropped
          aloneLeft = next.size();
          continue;
        }
        aloneLeft = Math.max(0, aloneLeft - 1);
        metrics.databaseErrors.incrementAndGet(); // this row's own: the others go on
        log.warn(
            "Dead-letter position not recorded: message_id={} (reason={}, sqlState={}; the row"
                + " stays parked without it)",
            Printable.escape(next.get(0).messageId()),
            e.reasonCode(),
            e.sqlState());
        continue;
      } catch (RuntimeException e) {
        putBack(next); // not a store error: the task fails, and its stop says what waited
        throw e;
      }
      aloneLeft = Math.max(0, aloneLeft - next.size());
      reportChanged(next, recorded);
      failureReported = false;
    }
  }

  /**
   * One line per statement for the rows changed since they were parked, naming the first {@link
   * #NAMED_PER_LINE}: a statement retried after its reply was lost finds every row of it recorded,
   * a thousand lines for one event otherwise.
   */
  private static void reportChanged(List<DeadLetterCopy> written, List<Boolean> recorded) {
    List<String> changed = new ArrayList<>();
    int count = 0;
    for (int i = 0; i < written.size(); i++) {
      if (!recorded.get(i) && count++ < NAMED_PER_LINE) {
        changed.add("message_id=" + Printable.escape(written.get(i).messageId()));
      }
    }
    if (count == 0) {
      return;
    }
    log.info(
        "Dead-letter positions not recorded: {} row(s) changed since they were parked: {}{}"
            + " (reason=PARKED_ROW_CHANGED; requeued or discarded by an operator, or recorded by an"
            + " earlier attempt whose reply was lost)",
        count,
        String.join(", ", changed),
        count > NAMED_PER_LINE ? " and " + (count - NAMED_PER_LINE) + " more" : "");
  }

  /** Up to {@code n} positions off the front, in order. */
  private List<DeadLetterCopy> take(int n) {
    List<DeadLetterCopy> taken = new ArrayList<>();
    while (taken.size() < n) {
      DeadLetterCopy copy = take();
      if (copy == null) {
        break;
      }
      taken.add(copy);
    }
    return taken;
  }

  /**
   * Whether a write that retrying cannot fix fails the task: what fails every write of the task
   * (credentials, a privilege, the schema) does; a refusal of this row's write alone (a trigger or
   * a check of an adopted table) drops this position only, as the class's promise says.
   */
  private static boolean failsTheTask(OutboxStoreException e) {
    return switch (e.kind()) {
      case AUTHENTICATION, PERMISSION, SCHEMA -> true;
      default -> false;
    };
  }

  /** Back at the front, in their order. */
  private void putBack(List<DeadLetterCopy> copies) {
    for (int i = copies.size() - 1; i >= 0; i--) {
      count.incrementAndGet();
      pending.addFirst(copies.get(i));
    }
    if (stopped) {
      dropPending(); // stopped meanwhile: its drain may have run before the put-back
    }
  }

  private void keepForRetry(List<DeadLetterCopy> next, OutboxStoreException e) {
    putBack(next);
    nextAttemptMs = time.hiResClockMs() + RETRY_AFTER_MS;
    if (!failureReported) {
      failureReported = true;
      log.warn(
          "Recording {} dead-letter positions failed (reason={}, sqlState={}); tried again in 30 s",
          count.get(),
          e.reasonCode(),
          e.sqlState());
    }
  }
}
