package dev.outboxrelay.connect;

import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.HeldLease;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Renewal;
import dev.outboxrelay.writer.Printable;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Renews the leases of records still waiting for Kafka, so a broker outage does not hand them to
 * another task. A lease the renewal finds lost is a lost claim: reported once; its in-flight slot
 * stays counted until its record's outcome comes (Kafka may still be sending it). Runs on the
 * outcome loop's thread, so it never races an outcome write of the same row. Its times are the
 * monotonic clock's ({@link Time#hiResClockMs()}): on the wall clock, one stepped back (an NTP
 * correction, a VM resumed) held every renewal back for as long, and the worker's leases all ran
 * out, their rows reclaimed and sent again by other tasks.
 */
final class LeaseRenewer {
  private static final Logger log = LoggerFactory.getLogger(LeaseRenewer.class);

  private final OutboxStore store;
  private final InFlightLedger ledger;
  private final RelayMetrics metrics;
  private final TaskSettings settings;
  private final Time time;
  private final StoreHealth health;
  private final WakeSignal pollWake;

  private volatile boolean healthy = true;
  private volatile long lastPollMs;
  private volatile long lastAcknowledgementMs;
  private volatile boolean polling;
  private volatile boolean stopping;
  private volatile Thread taskThread;
  private boolean pauseReported;
  private long nextRenewalMs;

  /** Renewals failed in a row, since the last that succeeded (the outcome thread's). */
  private int failedRenewals;

  private boolean stallReported;

  /** When the task thread was last seen blocked in the producer (outcome thread only). */
  private long lastKafkaWaitMs = Long.MIN_VALUE / 2;

  private boolean kafkaWaitReported;

  /** Message ids reported skipped for their row's lock, and still skipped (outcome thread only). */
  private final Set<String> lockedReported = new HashSet<>();

  LeaseRenewer(
      OutboxStore store,
      InFlightLedger ledger,
      RelayMetrics metrics,
      TaskSettings settings,
      Time time,
      StoreHealth health,
      WakeSignal pollWake) {
    this.store = store;
    this.ledger = ledger;
    this.metrics = metrics;
    this.settings = settings;
    this.time = time;
    this.health = health;
    this.pollWake = pollWake;
    this.lastPollMs = time.hiResClockMs();
    this.lastAcknowledgementMs = time.hiResClockMs();
    this.nextRenewalMs = time.hiResClockMs() + settings.leaseRenewalInterval().toMillis();
  }

  /** The task thread calls this on every poll: renewal is a promise that the task is alive. */
  void taskPolled() {
    lastPollMs = time.hiResClockMs();
    polling = true;
    taskThread = Thread.currentThread();
  }

  /**
   * ... and when the poll returns. A poll in progress is the relay's own work (a claim, the
   * maintenance of task 0), bounded by its statement timeouts: however long it takes, the task is
   * alive, and its rows waiting for Kafka must not expire meanwhile.
   */
  void pollReturned() {
    lastPollMs = time.hiResClockMs();
    polling = false;
  }

  /**
   * Kafka acknowledged one of the task's records ({@code commitRecord}, any thread). The producer
   * is delivering, so a task thread away from poll is blocked in a send (a full producer buffer)
   * that these acknowledgements are draining, not hung.
   */
  void acknowledged() {
    lastAcknowledgementMs = time.hiResClockMs();
  }

  /**
   * The task is stopping. Exactly once, its records' fate is then the committed offsets' (Connect
   * makes every acknowledgement before it stops the task, and the next instance's recovery settles
   * the rest, bumping their tokens): renewing would only report those rows as lost claims, false
   * alarms on the signal of a zombie. At least once, acknowledgements still come during the stop's
   * grace, and the leases are renewed until then.
   */
  void taskStopping() {
    stopping = true;
  }

  /** For tests: whether {@link #taskStopping} was called. */
  boolean isStopping() {
    return stopping;
  }

  /** False while renewals fail: the task must not claim more than it can keep. */
  boolean isHealthy() {
    return healthy;
  }

  /** Milliseconds until the next renewal is due (0 when due now). */
  long millisUntilDue() {
    return Math.max(0, nextRenewalMs - time.hiResClockMs());
  }

  void renewIfDue() {
    renewIfDue(Set.of());
  }

  /**
   * As {@link #renewIfDue()}, between the retries of a failed outcome write: {@code undecided} are
   * the message ids of the outcomes still in hand. Their leases are renewed too (the write may not
   * have applied), but a renewal that misses one does not report it: the write may have committed
   * though its reply was lost (a failover), and then its rows are settled, not taken over. The
   * retried write decides, and reports a lost claim itself; returned are those missed, for the
   * caller to report should the write never be retried again (abandoned at a stop).
   */
  Set<String> renewIfDue(Set<String> undecided) {
    long now = time.hiResClockMs();
    if (now < nextRenewalMs) {
      return Set.of();
    }
    nextRenewalMs = now + settings.leaseRenewalInterval().toMillis();
    if (stopping && settings.exactlyOnce()) {
      return Set.of();
    }
    List<HeldLease> held = ledger.heldLeases();
    // A row no longer held is forgotten: held again later (claimed anew) and locked, it is said
    // again.
    lockedReported.retainAll(held.stream().map(HeldLease::messageId).toList());
    if (held.isEmpty()) {
      // Nothing left to keep or give up: a stall said before is over for the leases, and so is a
      // wait on Kafka unless the thread still waits there (its leases lost meanwhile): the gauge
      // stayed at 1, and the next episode went unsaid, until rows were held again.
      if (!ledger.isEmpty()) {
        // Records still awaited without a lease (exactly once, a parked row's dead letter; claims
        // all lost before the wait began): a wait on Kafka is said, and ended, as with leases
        // (not between two sends, when Connect backs off outside the producer); before, nothing
        // set the gauge then.
        isUnresponsive();
      } else if (!ProducerWait.isWaitingOnKafka(taskThread)) {
        kafkaWaitEnded();
      }
      stallEnded();
      recovered(false);
      return Set.of();
    }
    // A task thread stuck outside poll (a hung transform or converter) must not keep its rows
    // forever: stop renewing so the leases expire and another task reclaims them. A thread
    // blocked in a send by a full producer buffer is not stuck while acknowledgements arrive, nor
    // one waiting on Kafka in the producer (a broker outage: a topic's metadata, ProducerWait).
    if (isUnresponsive()) {
      if (!stallReported) {
        stallReported = true;
        metrics.taskUnresponsive.set(1);
        log.warn(
            "Task thread has not polled for over half a lease and Kafka acknowledged nothing"
                + " meanwhile (stuck outside poll: a transform, converter or predicate); not"
                + " renewing {} leases (reason=TASK_UNRESPONSIVE)",
            held.size());
      }
      // Look again soon: renew as soon as the thread is back, not a whole interval later.
      nextRenewalMs =
          time.hiResClockMs() + Math.min(1000, settings.leaseRenewalInterval().toMillis());
      return Set.of();
    }
    if (stallReported) {
      stallEnded();
      log.info("Task thread responsive again; renewing {} leases", held.size());
    }
    try {
      Renewal renewal = store.renew(held, settings.leaseDuration());
      recovered(true);
      reportLocked(renewal.locked());
      Set<String> lost = renewal.lost();
      Set<String> missedUndecided = new HashSet<>();
      for (HeldLease lease : held) {
        if (!lost.contains(lease.messageId())) {
          continue;
        }
        if (undecided.contains(lease.messageId())) {
          missedUndecided.add(lease.messageId());
        } else {
          claimLost(lease);
        }
      }
      return missedUndecided;
    } catch (OutboxStoreException e) {
      health.databaseError(e);
      failedRenewals++;
      if (healthy) {
        // Once per outage: renewals are tried again every second, and each failure said at WARN
        // filled the log through an outage; database-errors-total counts every one.
        log.warn(
            "Lease renewal for {} records failed (reason={}, sqlState={}); claiming paused,"
                + " renewals tried again every second until one succeeds (said once)",
            held.size(),
            e.reasonCode(),
            e.sqlState());
      } else {
        log.debug(
            "Lease renewal failed again (reason={}, sqlState={})", e.reasonCode(), e.sqlState());
      }
      healthy = false;
      // Try again soon rather than a whole interval later.
      nextRenewalMs =
          time.hiResClockMs() + Math.min(1000, settings.leaseRenewalInterval().toMillis());
      return Set.of();
    }
  }

  /**
   * Rows another session holds locked were skipped, not renewed: their leases run on, and the next
   * renewal tries again (a row changed by a transaction that committed while this renewal ran is
   * skipped too, and found lost by the next). Counted at each renewal, logged once for as long as a
   * row stays locked.
   */
  private void reportLocked(Set<String> locked) {
    lockedReported.retainAll(locked);
    metrics.leaseRenewalsLocked.addAndGet(locked.size());
    for (String messageId : locked) {
      if (lockedReported.add(messageId)) {
        log.warn(
            "Lease not renewed: another session holds its row's lock (or changed the row"
                + " meanwhile): message_id={} instance_key={} (reason=ROW_LOCKED; the lease runs"
                + " on, tried again at the next renewal, which finds a changed row lost)",
            Printable.escape(messageId),
            Printable.escape(
                ledger.get(messageId).map(InFlightLedger.Entry::instanceKey).orElse(null)));
      }
    }
  }

  /** Renewals work (again): a poll waiting since they failed claims now, not at its next turn. */
  private void recovered(boolean renewed) {
    if (!healthy) {
      healthy = true;
      if (renewed) {
        log.info(
            "Lease renewal succeeded again after {} failed attempts; claiming resumes",
            failedRenewals);
      } else {
        log.info(
            "No lease left to renew after {} failed renewals (their records settled); claiming"
                + " resumes",
            failedRenewals);
      }
      failedRenewals = 0;
      pollWake.wake();
    }
  }

  private boolean isUnresponsive() {
    long now = time.hiResClockMs();
    long halfLease = settings.leaseDuration().toMillis() / 2;
    // A stopping task polls no more; its grace is bounded and its records may still be sent.
    if (stopping || polling || now - lastPollMs <= halfLease) {
      kafkaWaitEnded();
      pauseReported = false;
      return false;
    }
    if (now - lastAcknowledgementMs <= halfLease) {
      // Records move, so the task is alive; a thread still in the producer still waits on Kafka:
      // ended at each acknowledgement, the wait was said again (and the gauge flipped) after each.
      if (!ProducerWait.isWaitingOnKafka(taskThread)) {
        kafkaWaitEnded();
      }
      return false;
    }
    // Not while acknowledgements come: the stack is read only where it decides.
    if (ConnectPause.isPaused(taskThread)) {
      // Every task of the connector is paused with it: none would take the rows meanwhile, and
      // at the resume the rows' records still waiting in Connect are sent under their leases.
      if (!pauseReported) {
        pauseReported = true;
        log.info(
            "Task paused by Connect; its {} leases are kept, renewed until it resumes",
            ledger.heldLeases().size());
      }
      return false;
    }
    if (ProducerWait.isWaitingOnKafka(taskThread)) {
      lastKafkaWaitMs = now;
      metrics.waitingOnKafka.set(1);
      if (!kafkaWaitReported) {
        kafkaWaitReported = true;
        log.warn(
            "Task thread has waited on Kafka in the producer or Connect's topic creation"
                + " (topic.creation.*) for over half a lease (a broker unreachable, or a topic"
                + " without metadata: one that does not exist waits until it does); its {} leases"
                + " are kept, {} records awaited (reason=WAITING_ON_KAFKA)",
            ledger.heldLeases().size(),
            ledger.size());
      }
      return false;
    }
    // Seen waiting on Kafka lately: between two sends Connect backs off outside the producer.
    boolean unresponsive = now - lastKafkaWaitMs > halfLease;
    if (unresponsive) {
      kafkaWaitReported = false; // not ended: the thread is away, as the stall says
      metrics.waitingOnKafka.set(0);
    }
    return unresponsive;
  }

  private void stallEnded() {
    stallReported = false;
    metrics.taskUnresponsive.set(0);
  }

  private void kafkaWaitEnded() {
    if (kafkaWaitReported) {
      kafkaWaitReported = false;
      log.info(
          "Task thread no longer waits on Kafka; {} records awaited (WAITING_ON_KAFKA ended)",
          ledger.size());
    }
    metrics.waitingOnKafka.set(0);
  }

  /**
   * The row is no longer ours: stop renewing it. Its record may still reach Kafka (a duplicate of
   * what the new owner sends), and holds its place in the in-flight budget until then; its outcome
   * write will be fenced off.
   */
  private void claimLost(HeldLease lease) {
    var entry = ledger.markLost(lease.messageId(), lease.lease().token());
    if (entry.isEmpty()) {
      return; // settled meanwhile
    }
    metrics.leaseRenewalsLost.incrementAndGet();
    metrics.claimLost.incrementAndGet();
    log.warn(
        "Claim lost while waiting for Kafka: message_id={} instance_key={}"
            + " (reason=LEASE_TAKEN_OVER; lease renewal matched no row, a duplicate in Kafka is"
            + " possible; Kafka's acknowledgement may have come already, its outcome still"
            + " queued)",
        Printable.escape(lease.messageId()),
        Printable.escape(entry.get().instanceKey()));
  }
}
