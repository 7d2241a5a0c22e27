package dev.outboxrelay.connect;

import dev.outboxrelay.config.NullMetadataPolicy;
import dev.outboxrelay.connect.PendingOutcome.Failed;
import dev.outboxrelay.connect.PendingOutcome.Published;
import dev.outboxrelay.connect.PendingOutcome.Released;
import dev.outboxrelay.connect.PendingOutcome.Unconfirmed;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.EndedLeases;
import dev.outboxrelay.store.HeldLease;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.writer.Printable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes outcomes to the store, each fenced by its lease, and settles them: resolves the ledger
 * entry, counts the result and reports a lost claim. It only writes; {@link OutcomeLoop} decides
 * when, and retries what failed.
 */
final class OutcomeWriter {
  private static final Logger log = LoggerFactory.getLogger(OutcomeWriter.class);

  private final OutboxStore store;
  private final InFlightLedger ledger;
  private final RelayMetrics metrics;
  private final TaskSettings settings;
  private final Time time;
  private final WakeSignal pollWake;
  private final Runnable giveBackUnconfirmedClaim;

  /**
   * @param giveBackUnconfirmedClaim run at a stop before the leases of what Kafka never
   *     acknowledged end: releases a claim whose result never arrived, and exactly once the batches
   *     claimed that Connect never got ({@link ClaimLoop#giveBackAtStop}); never throws
   */
  OutcomeWriter(
      OutboxStore store,
      InFlightLedger ledger,
      RelayMetrics metrics,
      TaskSettings settings,
      Time time,
      WakeSignal pollWake,
      Runnable giveBackUnconfirmedClaim) {
    this.store = store;
    this.ledger = ledger;
    this.metrics = metrics;
    this.settings = settings;
    this.time = time;
    this.pollWake = pollWake;
    this.giveBackUnconfirmedClaim = giveBackUnconfirmedClaim;
  }

  /**
   * Applies outcomes, removing each from {@code remaining} once written and settled. A store
   * failure propagates with the unwritten outcomes still in {@code remaining}. Returns those set
   * aside (removed from {@code remaining} too, neither written nor settled): their rows are locked
   * by another session (an operator's open transaction) past the store's lock wait, and are to be
   * written again later.
   */
  List<PendingOutcome> write(List<PendingOutcome> remaining) {
    List<PendingOutcome> setAside = new ArrayList<>();
    write(remaining, false, () -> {}, false, setAside, new HashSet<>());
    return setAside;
  }

  /**
   * As {@link #write(List)}; {@code retried}: these outcomes' previous write failed, and may have
   * committed all the same (the connection lost at COMMIT). A publish then finds its rows gone:
   * those its own earlier attempt published are applied, not lost claims (which would count a false
   * duplicate each, by the hundred in a database failover). {@code beforeEachSingleWrite} runs
   * before each outcome written on its own (all but publishes, one statement each), and before a
   * retried publish's read-back: the caller renews the other leases there, which hundreds of such
   * writes in a batch (records a transform dropped, a slow database), or two statement timeouts in
   * a row, would otherwise hold back past their expiry.
   *
   * <p>A row lock another session holds past the store's lock wait sets outcomes aside rather than
   * failing them all: a publish that met one is sent again skipping locked rows, and their acks are
   * set aside; a single write that met one is set aside, and so is every single write after it in
   * {@code remaining}, untried (one lock wait per call, not one per locked row), ahead of it: tried
   * again in that order, each round writes what is no longer behind a locked row. Each leaves
   * {@code remaining} only once written or in {@code setAside}: should the thread die, none is in
   * neither. {@code skipLocked}: these are such outcomes, tried again: the publishes skip locked
   * rows at once. {@code foundLocked} gets the message id of each outcome set aside because its row
   * was found locked (counted in {@code outcome-row-locked-total}); those behind a single write
   * that met a lock were not tried, and are not counted.
   */
  void write(
      List<PendingOutcome> remaining,
      boolean retried,
      Runnable beforeEachSingleWrite,
      boolean skipLocked,
      List<PendingOutcome> setAside,
      Set<String> foundLocked) {
    List<PublishedAck> acks = acksOf(remaining);
    if (!acks.isEmpty()) {
      long start = time.hiResClockMs(); // a duration: a wall clock stepped meanwhile is no part
      List<Outcome> outcomes;
      try {
        outcomes = publish(acks, skipLocked);
      } finally { // a write that fails or times out is the one the figures must show
        metrics.recordOutcomeWrite(time.hiResClockMs() - start);
      }
      if (retried) {
        // A second statement: the leases still waiting for Kafka are renewed first if due, or two
        // statement timeouts in a row could outlast them.
        beforeEachSingleWrite.run();
        outcomes = withEarlierAttempt(acks, outcomes);
      }
      // Each leaves remaining once settled: should the thread die part-way (an Error), those
      // settled are not reported again as unwritten.
      int j = 0;
      for (Iterator<PendingOutcome> it = remaining.iterator(); it.hasNext(); ) {
        PendingOutcome next = it.next();
        if (next instanceof Published) {
          PublishedAck ack = acks.get(j);
          Outcome outcome = outcomes.get(j++);
          if (outcome == Outcome.ROW_LOCKED) {
            setAside.add(next);
            foundLocked.add(next.messageId());
            metrics.outcomesRowLocked.incrementAndGet();
          } else {
            settle(ack.messageId(), ack.lease(), OutcomeKind.PUBLISHED, outcome);
          }
          it.remove();
        }
      }
    }
    PendingOutcome metLock = null;
    for (Iterator<PendingOutcome> it = remaining.iterator(); it.hasNext(); ) {
      PendingOutcome next = it.next();
      if (metLock == null) {
        beforeEachSingleWrite.run();
        if (!writeOne(next)) {
          metLock = next; // left in remaining until it is set aside, last
          continue;
        }
      } else { // behind one that met a lock, untried: tried before it in the next round
        setAside.add(next);
      }
      it.remove();
    }
    if (metLock != null) {
      setAside.add(metLock);
      remaining.remove(metLock);
      foundLocked.add(metLock.messageId());
      metrics.outcomesRowLocked.incrementAndGet();
    }
  }

  /**
   * Publishes {@code acks}; when a row lock another session holds stopped the publish (SQLState
   * 55P03, after the store's lock wait: nothing was written), again at once, skipping locked rows.
   */
  private List<Outcome> publish(List<PublishedAck> acks, boolean skipLocked) {
    if (skipLocked) {
      return store.markPublishedSkippingLocked(acks);
    }
    try {
      return store.markPublished(acks);
    } catch (OutboxStoreException e) {
      if (!e.isLockWait()) {
        throw e;
      }
      return store.markPublishedSkippingLocked(acks);
    }
  }

  /**
   * After the late-acknowledgement grace of a stop, with records still without a written outcome:
   * unacknowledged (Connect closes the producer after stop, so few acknowledgements can still
   * come), or acknowledged too late to be written (LATE_ACK, DATABASE_UNAVAILABLE_AT_STOP).
   * Outcomes settled otherwise (found published by an earlier attempt, reported lost) left the
   * ledger. At least once their leases end now: the rows are abandoned rows at once instead of when
   * their leases would have run out, reclaimed one by one in isolation as after a crash (the stop
   * may be Connect's after a failure that one of them caused, which isolation charges and in the
   * end parks). Runs after the outcome loop has ended, on its thread: no renewal (which matches
   * owner and token, not a live lease) can extend a lease after this. Exactly once the next
   * instance's recovery settles them from the committed offsets, and only rows never handed to
   * Connect (claimed ahead, or dropped by the stop) are given back here. Never throws: the task is
   * stopping.
   */
  void settleUnresolvedAtStop() {
    giveBackUnconfirmedClaim.run(); // first: ending the leases below would make them abandoned
    int unresolved = ledger.size();
    if (unresolved == 0) {
      return;
    }
    if (settings.exactlyOnce()) {
      log.info( // routine: a transaction that did not commit, or a claim still running at the stop
          "Outcome writer closed with {} records without a written outcome (unacknowledged by"
              + " Kafka, or acknowledged too late); the next instance's recovery settles their rows"
              + " from the committed offsets"
              + " (reason=UNRESOLVED_AT_STOP)",
          unresolved);
      return;
    }
    List<HeldLease> held = ledger.heldLeases();
    EndedLeases ending;
    try {
      ending = store.expireLeases(held);
    } catch (RuntimeException e) { // NOPMD: stopping; the leases run out instead
      log.warn(
          "Outcome writer closed with {} records without a written outcome (unacknowledged by"
              + " Kafka, or acknowledged too late) and could not end their leases"
              + " (reason=UNRESOLVED_AT_STOP, error={}); the rows are reclaimed when the leases run"
              + " out",
          unresolved,
          e instanceof OutboxStoreException ose ? ose.reasonCode() : e.getClass().getName());
      return;
    }
    List<String> expired = ending.ended();
    for (String id : expired) {
      log.info(
          "Lease ended at stop without a written outcome: message_id={}"
              + " (reason=UNRESOLVED_AT_STOP; reclaimed alone, as an abandoned row)",
          Printable.escape(id));
    }
    Set<String> ended = new HashSet<>(expired);
    for (HeldLease lease : held) {
      if (ending.locked().contains(lease.messageId())) {
        log.warn(
            "Lease not ended at stop, no outcome written: message_id={} (reason=ROW_LOCKED; another"
                + " session holds its row's lock: the lease runs out instead, and the row is"
                + " reclaimed alone then, as an abandoned row)",
            Printable.escape(lease.messageId()));
      } else if (!ended.contains(lease.messageId())) {
        // Its lease ran out before the stop, and another task may have reclaimed it since the last
        // renewal: its record, if Kafka has it, may then reach Kafka twice.
        metrics.leasesNotHeldAtStop.incrementAndGet();
        log.warn(
            "Lease not held at stop, no outcome written: message_id={}"
                + " (reason=LEASE_NOT_HELD_AT_STOP; expired, or reclaimed by another task, which logs"
                + " it)",
            Printable.escape(lease.messageId()));
      }
    }
    log.warn(
        "Outcome writer closed with {} records without a written outcome (unacknowledged by"
            + " Kafka, or acknowledged too late); ended the leases of {} rows, reclaimed as"
            + " abandoned rows (reason=UNRESOLVED_AT_STOP)",
        unresolved,
        expired.size());
  }

  /**
   * Of these outcomes, never to be written (abandoned at a stop), the publishes whose rows the
   * published log holds under their own lease and coordinates: applied by an earlier attempt whose
   * reply was lost. Empty when the log cannot be read either.
   */
  Set<String> publishedByAnEarlierAttempt(List<PendingOutcome> outcomes) {
    List<PublishedAck> acks = acksOf(outcomes);
    if (acks.isEmpty()) {
      return Set.of();
    }
    try {
      return store.publishedUnderOwnLease(acks);
    } catch (RuntimeException e) { // NOPMD: stopping; unconfirmed, they are reported
      return Set.of();
    }
  }

  /** The publishes among {@code outcomes}, as the store takes them. */
  private static List<PublishedAck> acksOf(List<PendingOutcome> outcomes) {
    List<PublishedAck> acks = new ArrayList<>();
    for (PendingOutcome o : outcomes) {
      if (o instanceof Published p) {
        acks.add(new PublishedAck(p.messageId(), p.seq(), p.lease(), p.coordinates()));
      }
    }
    return acks;
  }

  /** {@code outcomes}, each lost claim that the earlier attempt applied after all made APPLIED. */
  private List<Outcome> withEarlierAttempt(List<PublishedAck> acks, List<Outcome> outcomes) {
    List<PublishedAck> lost = new ArrayList<>();
    for (int j = 0; j < acks.size(); j++) {
      if (outcomes.get(j) == Outcome.CLAIM_LOST) {
        lost.add(acks.get(j));
      }
    }
    if (lost.isEmpty()) {
      return outcomes;
    }
    Set<String> applied = new HashSet<>(store.publishedUnderOwnLease(lost));
    if (applied.isEmpty()) {
      return outcomes;
    }
    List<Outcome> corrected = new ArrayList<>(outcomes);
    for (int j = 0; j < acks.size(); j++) {
      // remove(): a repeated ack of one row stays a lost claim, as in any publish
      if (corrected.get(j) == Outcome.CLAIM_LOST && applied.remove(acks.get(j).messageId())) {
        corrected.set(j, Outcome.APPLIED);
      }
    }
    log.info(
        "A retried publish found {} rows published by its own earlier attempt, whose reply was"
            + " lost (reason=WRITE_REPLY_LOST)",
        lost.size() - (int) corrected.stream().filter(o -> o == Outcome.CLAIM_LOST).count());
    return corrected;
  }

  /**
   * Writes and settles one outcome; false, with nothing written, when its row stayed locked by
   * another session past the store's lock wait.
   */
  private boolean writeOne(PendingOutcome o) {
    long start = time.hiResClockMs(); // as above
    Written written;
    try {
      written = apply(o);
    } catch (OutboxStoreException e) {
      if (e.isLockWait()) {
        return false;
      }
      // One row's write: named, so that a refusal for good (a constraint or trigger of the
      // table's) is found from the task's status, where a batch's failure names none.
      throw e.ofMessage(o.messageId());
    } finally { // a write that fails or times out is the one the figures must show
      metrics.recordOutcomeWrite(time.hiResClockMs() - start);
    }
    String instanceKey = instanceKeyOf(o.messageId());
    settle(o.messageId(), o.lease(), written.kind(), written.outcome());
    if (o instanceof Unconfirmed u && written.outcome().isApplied()) {
      reportUnconfirmed(u, instanceKey, written.kind(), written.outcome());
    }
    return true;
  }

  /** What one outcome write recorded, and as what. */
  private record Written(OutcomeKind kind, Outcome outcome) {}

  private Written apply(PendingOutcome o) {
    if (o instanceof Unconfirmed u) {
      if (u.mayBeDropped() && settings.nullMetadataPolicy() == NullMetadataPolicy.FAIL) {
        return new Written(
            OutcomeKind.FAILED,
            store.markFailed(u.messageId(), u.lease(), "DROPPED_OR_UNDELIVERED"));
      }
      int attempts = ledger.get(u.messageId()).map(InFlightLedger.Entry::attempts).orElse(0);
      Duration delay =
          settings.backoff().delayAfter(attempts + 1, ThreadLocalRandom.current()::nextDouble);
      return new Written(
          OutcomeKind.RETRY,
          store.retryLater(
              u.messageId(), u.lease(), u.reasonCode(), delay, settings.maxAttempts()));
    } else if (o instanceof Failed f) {
      return new Written(
          f.deadLettered() ? OutcomeKind.DEAD_LETTERED : OutcomeKind.FAILED,
          store.markFailed(f.messageId(), f.lease(), f.reasonCode(), f.deadLetter()));
    } else if (o instanceof Released r) {
      return new Written(OutcomeKind.RELEASED, store.release(r.messageId(), r.lease()));
    }
    throw new IllegalStateException("unknown outcome " + o.getClass().getSimpleName());
  }

  private void settle(String messageId, Lease lease, OutcomeKind kind, Outcome outcome) {
    String instanceKey = instanceKeyOf(messageId);
    boolean fullBefore = ledger.isFull(settings);
    var reportedAtRenewal = ledger.takeLost(messageId, lease.token()); // before resolve drops it
    ledger.resolve(messageId, lease.token());
    if (InFlightLedger.freesPoll(fullBefore, ledger.isFull(settings), ledger.isEmpty())) {
      pollWake.wake();
    }
    if (outcome == null || outcome == Outcome.CLAIM_LOST) {
      if (reportedAtRenewal.isPresent()) {
        log.info(
            "Outcome {} not recorded for message_id={} instance_key={}: its claim was already"
                + " reported lost at lease renewal (reason=LEASE_TAKEN_OVER)",
            kind,
            Printable.escape(messageId),
            Printable.escape(reportedAtRenewal.get().instanceKey()));
        return;
      }
      metrics.claimLost.incrementAndGet();
      log.warn(
          "Claim lost: outcome {} not recorded for message_id={} instance_key={}"
              + " (reason=LEASE_TAKEN_OVER; another owner holds or resolved the row, {})",
          kind,
          Printable.escape(messageId),
          Printable.escape(instanceKey),
          settings.exactlyOnce() && kind == OutcomeKind.PUBLISHED
              // Acknowledged only after its transaction committed, so a successor of this
              // connector, which fenced this instance first, finds it covered by the committed
              // offsets; another connector on the same key does not read them (design.md, Limits).
              ? "no duplicate if this connector's next task took it: it records it from the"
                  + " committed offsets; another connector relaying the same key may send it again"
              : "a duplicate in Kafka is possible");
      return;
    }
    switch (kind) {
      case PUBLISHED -> metrics.published.incrementAndGet();
      case RETRY -> {
        if (outcome == Outcome.EXHAUSTED) {
          metrics.exhausted.incrementAndGet();
        } else {
          metrics.retried.incrementAndGet();
        }
      }
      case FAILED -> metrics.failed.incrementAndGet();
      case DEAD_LETTERED -> metrics.deadLettered.incrementAndGet();
      case RELEASED -> metrics.released.incrementAndGet();
    }
  }

  private String instanceKeyOf(String messageId) {
    return ledger.get(messageId).map(InFlightLedger.Entry::instanceKey).orElse("unknown");
  }

  private static void reportUnconfirmed(
      Unconfirmed u, String instanceKey, OutcomeKind kind, Outcome outcome) {
    if (kind == OutcomeKind.FAILED) {
      log.warn(
          "Delivery unconfirmed (a transform dropped the record, or it was not delivered), parked"
              + " FAILED as null.metadata.policy=fail asks: message_id={} instance_key={}"
              + " reason=DROPPED_OR_UNDELIVERED",
          Printable.escape(u.messageId()),
          Printable.escape(instanceKey));
    } else if (outcome == Outcome.EXHAUSTED) {
      log.warn(
          "Message exhausted its attempt budget: message_id={} instance_key={} reason={}",
          Printable.escape(u.messageId()),
          Printable.escape(instanceKey),
          u.reasonCode());
    } else if (u.mayBeDropped()) {
      log.info(
          "Delivery unconfirmed, retry scheduled: message_id={} instance_key={} reason={}",
          Printable.escape(u.messageId()),
          Printable.escape(instanceKey),
          u.reasonCode());
    } else {
      log.warn(
          "Kafka acknowledged without an offset, retry scheduled: message_id={} instance_key={}"
              + " reason={} (the producer must use acks=all)",
          Printable.escape(u.messageId()),
          Printable.escape(instanceKey),
          u.reasonCode());
    }
  }

  /** Whether the task relays exactly once (its outcomes' meaning at a stop differs). */
  boolean exactlyOnce() {
    return settings.exactlyOnce();
  }
}
