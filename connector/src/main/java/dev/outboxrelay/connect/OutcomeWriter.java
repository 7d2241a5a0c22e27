package dev.outboxrelay.connect;

import dev.outboxrelay.connect.PendingOutcome.Failed;
import dev.outboxrelay.connect.PendingOutcome.Published;
import dev.outboxrelay.connect.PendingOutcome.Released;
import dev.outboxrelay.connect.PendingOutcome.Unconfirmed;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.PublishedAck;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Applies outcomes in fenced batches on its own thread, so that {@code commitRecord} (which runs on
 * the producer's I/O thread) never waits for the database. Also renews the leases of records still
 * waiting for Kafka. Outcomes are never dropped: a failed write is retried until it applies, is
 * reported lost, or the task is abandoned.
 */
final class OutcomeWriter {
  private static final Logger log = LoggerFactory.getLogger(OutcomeWriter.class);
  private static final int MAX_BATCH = 1000;
  private static final Duration ERROR_BACKOFF_MIN = Duration.ofMillis(100);
  private static final Duration ERROR_BACKOFF_MAX = Duration.ofSeconds(5);
  static final long NO_ERROR = Long.MIN_VALUE;

  private final OutboxStore store;
  private final InFlightLedger ledger;
  private final RelayMetrics metrics;
  private final TaskSettings settings;
  private final Time time;
  private final WakeSignal pollWake;
  private final BlockingQueue<PendingOutcome> queue = new LinkedBlockingQueue<>();
  private final AtomicReference<OutboxStoreException> fatal = new AtomicReference<>();
  private final Thread thread;
  private final Map<String, String> mdc;

  private volatile boolean accepting = true;
  private volatile long closeDeadlineMs = Long.MAX_VALUE;
  private volatile boolean renewalHealthy = true;
  private volatile long lastPollMs;
  private volatile long lastDatabaseErrorMs = NO_ERROR;
  private boolean stallReported;
  private long nextRenewalMs;
  private int consecutiveErrors;

  OutcomeWriter(
      OutboxStore store,
      InFlightLedger ledger,
      RelayMetrics metrics,
      TaskSettings settings,
      Time time,
      WakeSignal pollWake,
      String threadName) {
    this.store = store;
    this.ledger = ledger;
    this.metrics = metrics;
    this.settings = settings;
    this.time = time;
    this.pollWake = pollWake;
    this.mdc = MDC.getCopyOfContextMap();
    this.nextRenewalMs = time.milliseconds() + settings.leaseRenewalInterval().toMillis();
    this.lastPollMs = time.milliseconds();
    this.thread = new Thread(this::run, threadName);
    this.thread.setDaemon(true);
  }

  /** When a write or renewal of this writer last failed, or {@link #NO_ERROR}. */
  long lastDatabaseErrorMs() {
    return lastDatabaseErrorMs;
  }

  void start() {
    thread.start();
  }

  /**
   * Queues an outcome; never blocks. Returns false once the writer has closed: the caller reports
   * it as a late acknowledgement (the row keeps its lease until expiry, then is reclaimed).
   */
  boolean submit(PendingOutcome outcome) {
    if (!accepting) {
      return false;
    }
    queue.add(outcome);
    return true;
  }

  /** The first non-retriable store failure (credentials, schema), for the task to fail with. */
  OutboxStoreException fatalError() {
    return fatal.get();
  }

  /** The task thread calls this on every poll: renewal is a promise that the task is alive. */
  void taskPolled() {
    lastPollMs = time.milliseconds();
  }

  /** False while renewals fail: the task must not claim more than it can keep. */
  boolean isRenewalHealthy() {
    return renewalHealthy;
  }

  /**
   * Waits up to {@code timeout} for queued outcomes to be written, then keeps accepting late
   * acknowledgements for the grace period (Connect closes the producer after stop, and callbacks
   * may still arrive), closing the store when every handed record is resolved or grace ends.
   */
  void stop(Duration flushTimeout, Duration lateAckGrace, Runnable onClosed) {
    long flushDeadline = time.milliseconds() + flushTimeout.toMillis();
    while (!queue.isEmpty() && time.milliseconds() < flushDeadline && thread.isAlive()) {
      pollWake.await(Duration.ofMillis(10));
    }
    closeDeadlineMs = time.milliseconds() + lateAckGrace.toMillis();
    this.onClosed = onClosed;
    thread.interrupt();
  }

  private volatile Runnable onClosed = () -> {};

  private void run() {
    if (mdc != null) {
      MDC.setContextMap(mdc);
    }
    try {
      while (true) {
        boolean closing = closeDeadlineMs != Long.MAX_VALUE;
        if (closing
            && (ledger.isEmpty() && queue.isEmpty() || time.milliseconds() >= closeDeadlineMs)) {
          break;
        }
        List<PendingOutcome> batch = nextBatch();
        if (!batch.isEmpty()) {
          writeUntilDone(batch);
        }
        if (time.milliseconds() >= nextRenewalMs) {
          renew();
        }
      }
    } finally {
      accepting = false;
      int unresolved = ledger.size() + queue.size();
      if (unresolved > 0) {
        log.warn(
            "Outcome writer closed with {} unresolved records; their leases expire and the rows"
                + " are reclaimed (reason=UNRESOLVED_AT_STOP)",
            unresolved);
      }
      onClosed.run();
    }
  }

  private List<PendingOutcome> nextBatch() {
    List<PendingOutcome> batch = new ArrayList<>();
    long waitMs = Math.max(1, Math.min(nextRenewalMs - time.milliseconds(), 200));
    try {
      PendingOutcome first = queue.poll(waitMs, TimeUnit.MILLISECONDS);
      if (first != null) {
        batch.add(first);
        queue.drainTo(batch, MAX_BATCH - 1);
      }
    } catch (InterruptedException e) {
      // stop() interrupts to end the wait early; the loop re-checks whether to close.
      Thread.interrupted();
      queue.drainTo(batch, MAX_BATCH);
    }
    return batch;
  }

  /** Writes the batch, retrying transient failures with backoff; never drops an outcome. */
  private void writeUntilDone(List<PendingOutcome> batch) {
    List<PendingOutcome> remaining = new ArrayList<>(batch);
    while (!remaining.isEmpty()) {
      try {
        writeSome(remaining);
        consecutiveErrors = 0;
      } catch (OutboxStoreException e) {
        metrics.databaseErrors.incrementAndGet();
        lastDatabaseErrorMs = time.milliseconds();
        if (!e.isRetriable()) {
          fatal.compareAndSet(null, e);
        }
        consecutiveErrors++;
        log.warn(
            "Writing {} outcomes failed (reason={}, sqlState={}); retrying",
            remaining.size(),
            e.reasonCode(),
            e.sqlState());
        if (time.milliseconds() >= closeDeadlineMs) {
          return; // abandoned: the leases expire and the rows are reclaimed
        }
        backoff();
      }
    }
  }

  private void backoff() {
    long max = ERROR_BACKOFF_MAX.toMillis();
    long delay = Math.min(max, ERROR_BACKOFF_MIN.toMillis() << Math.min(consecutiveErrors, 10));
    delay = (long) (delay * (0.5 + ThreadLocalRandom.current().nextDouble() / 2));
    try {
      Thread.sleep(delay); // not a test wait: production backoff between database retries
    } catch (InterruptedException e) {
      Thread.interrupted(); // stop() shortens the wait; the caller re-checks the deadline
    }
  }

  /** Applies outcomes, removing each from {@code remaining} once written. */
  private void writeSome(List<PendingOutcome> remaining) {
    List<PublishedAck> acks = new ArrayList<>();
    for (PendingOutcome o : remaining) {
      if (o instanceof Published p) {
        acks.add(new PublishedAck(p.messageId(), p.lease(), p.coordinates()));
      }
    }
    if (!acks.isEmpty()) {
      long start = time.milliseconds();
      List<Outcome> outcomes = store.markPublished(acks);
      metrics.recordOutcomeWrite(time.milliseconds() - start);
      for (int j = 0; j < acks.size(); j++) {
        PublishedAck ack = acks.get(j);
        settle(ack.messageId(), ack.lease().token(), "PUBLISHED", outcomes.get(j));
      }
      remaining.removeIf(Published.class::isInstance);
    }
    for (Iterator<PendingOutcome> it = remaining.iterator(); it.hasNext(); ) {
      writeOne(it.next());
      it.remove();
    }
  }

  private void writeOne(PendingOutcome o) {
    long start = time.milliseconds();
    Outcome outcome;
    String kind;
    if (o instanceof Unconfirmed u) {
      if (settings.nullMetadataPolicy() == NullMetadataPolicy.FAIL) {
        kind = "FAILED";
        outcome = store.markFailed(u.messageId(), u.lease(), "DROPPED_OR_UNDELIVERED");
      } else {
        kind = "RETRY";
        int attempts = ledger.get(u.messageId()).map(e -> e.message().attempts()).orElse(0);
        Duration delay =
            settings.backoff().delayAfter(attempts + 1, ThreadLocalRandom.current()::nextDouble);
        outcome =
            store.retryLater(
                u.messageId(), u.lease(), "DELIVERY_UNCONFIRMED", delay, settings.maxAttempts());
      }
    } else if (o instanceof Failed f) {
      kind = f.deadLettered() ? "DEAD_LETTERED" : "FAILED";
      outcome = store.markFailed(f.messageId(), f.lease(), f.reasonCode());
    } else if (o instanceof Released r) {
      kind = "RELEASED";
      outcome = store.release(r.messageId(), r.lease());
    } else {
      throw new IllegalStateException("unknown outcome " + o.getClass().getSimpleName());
    }
    metrics.recordOutcomeWrite(time.milliseconds() - start);
    settle(o.messageId(), o.lease().token(), kind, outcome);
  }

  private void settle(String messageId, long token, String kind, Outcome outcome) {
    String instanceKey =
        ledger.get(messageId).map(e -> e.message().instanceKey()).orElse("unknown");
    ledger.resolve(messageId, token);
    metrics.inFlight.set(ledger.size());
    pollWake.wake();
    if (outcome == null || outcome == Outcome.CLAIM_LOST) {
      metrics.claimLost.incrementAndGet();
      log.warn(
          "Claim lost: outcome {} not recorded for message_id={} instance_key={}"
              + " (reason=LEASE_TAKEN_OVER; another owner holds or resolved the row, a duplicate"
              + " in Kafka is possible)",
          kind,
          messageId,
          instanceKey);
      return;
    }
    switch (kind) {
      case "PUBLISHED" -> metrics.published.incrementAndGet();
      case "RETRY" -> {
        if (outcome == Outcome.EXHAUSTED) {
          metrics.exhausted.incrementAndGet();
          log.warn(
              "Message exhausted its attempt budget: message_id={} instance_key={}"
                  + " reason=DELIVERY_UNCONFIRMED",
              messageId,
              instanceKey);
        } else {
          metrics.retried.incrementAndGet();
          log.info(
              "Delivery unconfirmed, retry scheduled: message_id={} instance_key={}"
                  + " reason=DELIVERY_UNCONFIRMED",
              messageId,
              instanceKey);
        }
      }
      case "FAILED" -> metrics.failed.incrementAndGet();
      case "DEAD_LETTERED" -> metrics.deadLettered.incrementAndGet();
      case "RELEASED" -> metrics.released.incrementAndGet();
      default -> throw new IllegalStateException(kind);
    }
  }

  private void renew() {
    nextRenewalMs = time.milliseconds() + settings.leaseRenewalInterval().toMillis();
    var held = ledger.heldLeases();
    if (held.isEmpty()) {
      renewalHealthy = true;
      return;
    }
    // A task thread stuck outside poll (a hung transform or converter) must not keep its rows
    // forever: stop renewing so the leases expire and another task reclaims them. A broker
    // outage does not trip this: sends only queue in the producer, and poll keeps being called.
    if (time.milliseconds() - lastPollMs > settings.leaseDuration().toMillis() / 2) {
      if (!stallReported) {
        stallReported = true;
        log.warn(
            "Task thread has not polled for over half a lease; not renewing {} leases"
                + " (reason=TASK_UNRESPONSIVE)",
            held.size());
      }
      return;
    }
    stallReported = false;
    try {
      Set<String> lost = store.renew(held, settings.leaseDuration());
      renewalHealthy = true;
      for (String messageId : lost) {
        metrics.leaseRenewalsLost.incrementAndGet();
        log.warn(
            "Lease lost while waiting for Kafka: message_id={} instance_key={}"
                + " (reason=LEASE_TAKEN_OVER)",
            messageId,
            ledger.get(messageId).map(e -> e.message().instanceKey()).orElse("unknown"));
      }
    } catch (OutboxStoreException e) {
      metrics.databaseErrors.incrementAndGet();
      lastDatabaseErrorMs = time.milliseconds();
      renewalHealthy = false;
      if (!e.isRetriable()) {
        fatal.compareAndSet(null, e);
      }
      log.warn(
          "Lease renewal for {} records failed (reason={}, sqlState={}); claiming paused",
          held.size(),
          e.reasonCode(),
          e.sqlState());
      // Try again soon rather than a whole interval later.
      nextRenewalMs =
          time.milliseconds() + Math.min(1000, settings.leaseRenewalInterval().toMillis());
    }
  }
}
