package dev.outboxrelay.connect;

import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.AggregateAffinity;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.ExhaustedMessage;
import dev.outboxrelay.store.HeldLease;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.SqlStates;
import dev.outboxrelay.writer.Printable;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.NavigableMap;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides what the task claims next, on the task thread: nothing while it holds all it may or
 * cannot renew; an abandoned row alone when it is time to look for one and a look (which holds
 * nothing back) found one; otherwise due rows of its own share of the aggregates, and of any share
 * once its own stayed dry or, while its own keeps yielding, once in a while. Judges time by the
 * task's {@link Time}, so tests move it.
 */
final class ClaimLoop {
  private static final Logger log = LoggerFactory.getLogger(ClaimLoop.class);

  /**
   * "Not yet" for the claim clocks below, which read a monotonic clock whose values may be
   * negative: -1 could be a real reading.
   */
  private static final long NEVER = Long.MIN_VALUE;

  /** How often a sweep failure that lasts is said again (a row locked for hours). */
  private static final long SWEEP_FAILURE_REPEAT_MS = Duration.ofMinutes(1).toMillis();

  /** Pages of the backlog a stop reads at most to release a lost claim's rows. */
  static final int STOP_RELEASE_PAGES = 10;

  /** Pages of a lost claim's release that one claim reads at most before poll() returns. */
  static final int RELEASE_PAGES_PER_CLAIM = 4;

  /** The reason code of rows released after their claim's result was lost. */
  static final String CLAIM_RESULT_LOST = "CLAIM_RESULT_LOST";

  private final OutboxStore store;
  private final TaskSettings settings;
  private final InFlightLedger ledger;
  private final LeaseRenewer renewer;
  private final StoreHealth health;
  private final RelayMetrics metrics;
  private final Time time;
  private final ExactlyOnceState exactlyOnce;

  private long nextAbandonedProbeMs;

  /**
   * The reason and SQLState of the last sweep failure logged, and when (monotonic clock); null for
   * none.
   */
  private String sweepFailureSaid;

  private long sweepFailureSaidMs;

  /** How long the last probe for abandoned rows took, by the monotonic clock. */
  private long lastProbeMs;

  private boolean drainingForProbe;
  private volatile boolean holdsIsolatedClaim; // read by isolating() off the claiming thread
  private long shareDrySinceMs = NEVER;

  /** When the task's own share last yielded rows; NEVER before its first. */
  private long ownRowsMs = NEVER;

  /**
   * When the own share first yielded rows since the last claim of any share (or since a pause of
   * two fallback delays without rows); NEVER when it has not since.
   */
  private long ownRowsSinceAnyShareMs = NEVER;

  /**
   * The last claim of any share came back full with rows of another share that existed a fallback
   * delay before (a share nobody drains: its task failed; a live task leaves none that old), and
   * the own share's last claim came back short (this task has room to spare): then every other
   * claim is of any share, until one comes back otherwise or the own share fills a batch.
   */
  private boolean anyShareFull;

  private boolean ownShareShort;

  /** The last claim of due rows was of any share: the next one is the own share's. */
  private boolean lastClaimOfAnyShare;

  /**
   * A claim threw, so its result never arrived, and its rows are not released yet: the release
   * under way, or null. Set only once a claim has failed, never while one runs: a stop ({@link
   * #giveBackAtStop}, on the outcome thread) must not take a claim still running on the task thread
   * for a lost one.
   */
  private volatile LostClaimRelease lostClaim;

  /** The release whose lost claim was said to be still ending; written under {@link #claiming}. */
  private LostClaimRelease stillEndingReported;

  /**
   * The task is stopping: no claim starts any more, and a release of a lost claim's rows on the
   * task thread reads no more.
   */
  private volatile boolean stopping;

  /**
   * Rows of a claim that committed and that the task did not use: giving back its rows past the
   * byte budget failed, and the whole result was dropped. Given back by their seqs and leases
   * before the next claim or at a stop; the release of a lost result would read the backlog for
   * them. Written under {@link #claiming}.
   */
  private volatile List<HeldLease> unusedClaim = List.of();

  /** Exactly once: SUSPECT_LOCKED was said, and no suspect's claim has succeeded since. */
  private boolean suspectLockedSaid;

  /**
   * Exactly once, the rows of each claim not yet handed to Connect, by batch, written under {@link
   * #claiming}: at a stop, the batches Connect never got are given back by them. More than one: a
   * stop that comes while a batch's parks are written drops that batch after the next was claimed
   * ahead, and giving back only the last left the dropped one leased for the next instance's
   * recovery, which takes its rows for suspects.
   */
  private final NavigableMap<Long, List<HeldLease>> claimsNotHandedOver =
      new ConcurrentSkipListMap<>();

  /**
   * Held while the task claims (or releases a lost claim first): a stop's release ({@link
   * #giveBackAtStop}) must not interleave with either, or it could take a claim that commits
   * meanwhile for the lost one and release rows whose reply came.
   */
  private final ReentrantLock claiming = new ReentrantLock();

  /** The estimated record size of the next claim's rows (see {@link #sizedRequest}). */
  private long rowBytes;

  /** The limit of the last sized claim ({@link #fullBatch}); the task thread's. */
  private int fullBatch;

  ClaimLoop(
      OutboxStore store,
      TaskSettings settings,
      InFlightLedger ledger,
      LeaseRenewer renewer,
      StoreHealth health,
      RelayMetrics metrics,
      Time time) {
    this(store, settings, ledger, renewer, health, metrics, time, null);
  }

  /**
   * @param exactlyOnce the task's exactly-once state, or null in at-least-once mode
   */
  ClaimLoop(
      OutboxStore store,
      TaskSettings settings,
      InFlightLedger ledger,
      LeaseRenewer renewer,
      StoreHealth health,
      RelayMetrics metrics,
      Time time,
      ExactlyOnceState exactlyOnce) {
    this.exactlyOnce = exactlyOnce;
    this.store = store;
    this.settings = settings;
    this.ledger = ledger;
    this.renewer = renewer;
    this.health = health;
    this.metrics = metrics;
    this.time = time;
    this.nextAbandonedProbeMs = time.hiResClockMs();
    this.rowBytes = settings.payloadMaxBytes() + InFlightLedger.RECORD_OVERHEAD_BYTES;
    this.fullBatch = settings.claimRequest().limit();
  }

  /** The next claim: rows now leased to this task (and rows the claim parked), or nothing. */
  ClaimResult next() {
    claiming.lock();
    try {
      return claimNext();
    } finally {
      claiming.unlock();
    }
  }

  private ClaimResult claimNext() {
    releaseCut = false;
    if (stopping) {
      // A claim queued on the prefetch thread as the task stopped: it would only lease rows that
      // nobody sends, to wait out their leases or the next instance's recovery.
      return ClaimResult.EMPTY;
    }
    if (ledger.isFull(settings) || !renewer.isHealthy()) {
      return ClaimResult.EMPTY; // wait for Kafka to acknowledge what we hold
    }
    LostClaimRelease release = lostClaim;
    int pagesBefore = release == null ? 0 : release.pagesRead();
    if (!releaseUnconfirmedClaim(
        () -> stopping || release.pagesRead() - pagesBefore >= RELEASE_PAGES_PER_CLAIM)) {
      // Stopping (the stop reads on, a few pages at most), or a few pages read: the next poll
      // reads on at once (readsOnAtOnce). Connect stops a task once poll() returned, so a release
      // through a backlog of millions in one poll held its stop back past the graceful timeout.
      releaseCut = !stopping && release != null && release.claimEnded();
      return ClaimResult.EMPTY;
    }
    giveBackUnusedClaim();
    if (exactlyOnce != null) {
      return claimInBuckets();
    }
    if (holdsIsolatedClaim) {
      if (!ledger.isEmpty()) {
        // Alone until it settles, whatever happens meanwhile (a database error included): rows
        // claimed beside it would share the blame if the worker crashed on it.
        return ClaimResult.EMPTY;
      }
      holdsIsolatedClaim = false;
    }
    // Monotonic, as StoreHealth's: a wall clock stepped back held the probe back for as long.
    long now = time.hiResClockMs();
    if (recentDatabaseError(now)) {
      drainingForProbe = false; // owners first
    } else if (now >= nextAbandonedProbeMs && !drainingForProbe) {
      // Settles what it holds for an isolated claim only when there is a row to take; holding
      // nothing, it tries the claim at once (one statement instead of two when there is one).
      drainingForProbe =
          ledger.isEmpty() || probed(now, () -> store.hasAbandoned(settings.claimRequest()), false);
      if (!drainingForProbe) {
        nextAbandonedProbeMs = nextProbeMs();
      }
    }
    if (!drainingForProbe) {
      return claimDue();
    }
    if (!ledger.isEmpty()) {
      return ClaimResult.EMPTY; // an isolated claim must be the only thing this task holds
    }
    ClaimResult result =
        probed(
            now,
            () -> confirmed(1, () -> store.claimAbandoned(settings.claimRequest())),
            ClaimResult.EMPTY);
    if (!result.claimed().isEmpty()) {
      holdsIsolatedClaim = true;
      metrics.abandonedReclaimed.incrementAndGet();
      log.info(
          "Reclaimed abandoned message_id={} instance_key={} in isolation"
              + " (reason=ABANDONED_RECLAIMED; it may already be in Kafka)",
          Printable.escape(result.claimed().get(0).messageId()),
          Printable.escape(result.claimed().get(0).instanceKey()));
      return result;
    }
    if (!result.exhausted().isEmpty()) {
      return result; // probe again at once: there may be more
    }
    drainingForProbe = false;
    nextAbandonedProbeMs = nextProbeMs();
    return claimDue();
  }

  /**
   * A probe for abandoned rows ({@code probe}, begun at {@code startMs}), or {@code none} where the
   * statement timeout cancelled it. No index serves the probe (the lease is kept out of every
   * index, docs/design.md), so where none is abandoned it reads every active row of the keys: on a
   * backlog of tens of millions, past the timeout. Such a probe is said and spaced out, not thrown
   * (every probe interval, the poll threw and the task thread spent the timeout on it again); a
   * statement the server cancelled changed nothing.
   */
  private <T> T probed(long startMs, Supplier<T> probe, T none) {
    try {
      T found = probe.get();
      lastProbeMs = time.hiResClockMs() - startMs;
      return found;
    } catch (OutboxStoreException e) {
      if (!SqlStates.QUERY_CANCELED.equals(e.sqlState())) {
        throw e;
      }
      lastProbeMs = time.hiResClockMs() - startMs;
      drainingForProbe = false;
      // Seen by the database-errors alert, as a failed retention run: abandoned rows wait unfound.
      // Not the store's health: owners need no interval first, nothing was away.
      metrics.databaseErrors.incrementAndGet();
      log.warn(
          "Probing for abandoned rows was cancelled after {} ms (reason=ABANDONED_PROBE_TIMED_OUT):"
              + " no index serves the probe, which reads the keys' active rows where none is"
              + " abandoned; abandoned rows wait for the next probe, in {} ms",
          lastProbeMs,
          probeSpacingMs());
      return none;
    }
  }

  /**
   * When the next probe is due: a probe interval from now, or ten times as long as the last probe
   * took where that is longer, at most ten intervals (as the backlog's count): a probe that reads a
   * backlog of millions takes about a tenth of the task thread while it takes less than an
   * interval, and one that takes longer (or is cancelled) runs once every ten intervals.
   */
  private long nextProbeMs() {
    return time.hiResClockMs() + probeSpacingMs();
  }

  private long probeSpacingMs() {
    long interval = settings.abandonedProbeInterval().toMillis();
    return Math.min(Math.max(interval, 10 * lastProbeMs), 10 * interval);
  }

  /**
   * Owners get the first chance after a database error (an outage, a failover): every task's leases
   * may have run out while their holders could not renew, and their outcome writers renew them or
   * write their outcomes as soon as the database is back. Probing for abandoned rows at once would
   * take rows that were never abandoned and re-send them, so the probe waits until a probe interval
   * has passed without an error in this task's claims, outcome writes or renewals (all recorded in
   * {@link StoreHealth}).
   */
  private boolean recentDatabaseError(long now) {
    long last = health.lastDatabaseErrorMs();
    return last != StoreHealth.NO_ERROR
        && now - last < settings.abandonedProbeInterval().toMillis();
  }

  /**
   * Claims due rows of this task's share of the aggregates; once the share has stayed dry for a
   * while, of any share too; and while the share yields rows (a stream or a trickle), of any share
   * once per such while. Other shares' rows must not wait for a task that is gone or being
   * restarted (a failed task stays failed until someone restarts it), but taking them at once would
   * block the aggregates their own task is working through (the benchmark measured ordered tasks
   * stealing each other's aggregates to a third of one task's speed): one batch of any share per
   * quarter of a lease keeps a share without a task moving, oldest rows first, whatever the own
   * share holds. While that batch comes back full, with rows of another share that waited past the
   * fallback delay, and the own share's claims come back short (the task has room to spare), every
   * other claim is of any share: one batch per quarter of a lease let a failed task's share fall
   * behind without end under a stream of more than that.
   */
  private ClaimResult claimDue() {
    ClaimRequest request = sizedRequest();
    if (request.affinity() == null) {
      return confirmed(request.limit(), () -> store.claim(request));
    }
    long now = time.hiResClockMs(); // monotonic: a wall clock stepped back must not stop them
    long delay = settings.shareFallbackDelay().toMillis();
    if (ownRowsSinceAnyShareMs != NEVER
        && now - ownRowsSinceAnyShareMs >= delay
        && now - ownRowsMs < 2 * delay) {
      return claimAnyShare(request); // the own share keeps yielding: once per delay
    }
    if (anyShareFull && ownShareShort && !lastClaimOfAnyShare) {
      return claimAnyShare(request); // room to spare, and a share nobody drains: help
    }
    lastClaimOfAnyShare = false;
    ClaimResult result = confirmed(request.limit(), () -> store.claim(request));
    seqs.saw(result, now, delay);
    ownShareShort = result.claimed().size() < request.limit();
    if (!result.isEmpty()) {
      if (ownRowsSinceAnyShareMs == NEVER || now - ownRowsMs >= 2 * delay) {
        ownRowsSinceAnyShareMs = now; // not at once after a pause (a short burst, a drain)
      }
      ownRowsMs = now;
      shareDrySinceMs = NEVER;
      return result;
    }
    if (shareDrySinceMs == NEVER) {
      shareDrySinceMs = now;
    }
    if (now - shareDrySinceMs < delay) {
      return result;
    }
    return claimAnyShare(request);
  }

  /** A claim of any share, the oldest due rows first; the periodic one's clock starts again. */
  private ClaimResult claimAnyShare(ClaimRequest request) {
    ownRowsSinceAnyShareMs = NEVER; // before the claim: one that fails waits its turn too
    lastClaimOfAnyShare = true;
    anyShareFull = false;
    ClaimResult result = confirmed(request.limit(), () -> store.claim(request.withoutAffinity()));
    long now = time.hiResClockMs();
    long delay = settings.shareFallbackDelay().toMillis();
    long existedADelayAgo = seqs.seenADelayAgo(now, delay);
    AggregateAffinity affinity = request.affinity();
    anyShareFull =
        result.claimed().size() >= request.limit()
            && result.claimed().stream()
                .anyMatch(
                    row ->
                        row.aggregateHash() % affinity.slots() != affinity.slot()
                            && row.seq() <= existedADelayAgo);
    seqs.saw(result, now, delay);
    return result;
  }

  /**
   * The highest seq the task's claims had returned, as it grew, to tell a row that existed a
   * fallback delay ago from a newer one: a row of another share that existed then and is still
   * unclaimed was left by its share's task (a live task claims its rows sooner, and helping it with
   * them would take the earliest rows of the aggregates it works through, blocking it). By seq, not
   * by a time of the row's: created_at may be an application's event time (column.event
   * .timestamp), in any zone or none.
   */
  private static final class SeqsSeen {
    /** (monotonic ms, the highest seq returned by then), the oldest first. */
    private final ArrayDeque<long[]> samples = new ArrayDeque<>();

    private long highest = -1;

    void saw(ClaimResult result, long nowMs, long delayMs) {
      for (ClaimedMessage row : result.claimed()) {
        highest = Math.max(highest, row.seq());
      }
      if (highest >= 0 && (samples.isEmpty() || samples.peekLast()[1] != highest)) {
        samples.addLast(new long[] {nowMs, highest});
      }
      // Keep the youngest sample that is a delay old, and the younger ones.
      while (samples.size() >= 2 && nowMs - secondOldest()[0] >= delayMs) {
        samples.removeFirst();
      }
    }

    private long[] secondOldest() {
      var it = samples.iterator();
      it.next();
      return it.next();
    }

    /** The highest seq returned at least {@code delayMs} ago; -1 if none was. */
    long seenADelayAgo(long nowMs, long delayMs) {
      long[] oldest = samples.peekFirst();
      return oldest != null && nowMs - oldest[0] >= delayMs ? oldest[1] : -1;
    }
  }

  private final SeqsSeen seqs = new SeqsSeen();

  /**
   * A batch, or fewer rows where a batch of rows the size of the largest of the last claim would
   * take the records held past {@code maxInFlightBytes}: large payloads are claimed a few at a
   * time, so that neither the heap nor the producer's buffer holds several batches of them. At
   * least one row, and the first claim of a task assumes rows of {@code payload.max.bytes}. The
   * claim itself stops at the room left ({@link ClaimRequest#readRoom}): rows larger than the last
   * claim's are not claimed past it, to be read whole and given back.
   */
  private ClaimRequest sizedRequest() {
    ClaimRequest request = settings.claimRequest();
    long room = settings.maxInFlightBytes() - ledger.bytes();
    long rows = Math.max(1, room / Math.max(1, rowBytes));
    ClaimRequest sized = rows >= request.limit() ? request : request.withLimit((int) rows);
    fullBatch = sized.limit();
    return sized.withReadRoom(Math.max(0, room));
  }

  /**
   * The rows the last claim of due rows asked for: a claim that returned as many was a full batch
   * (a backlog), whatever the byte budget made of {@code claim.batch.size}.
   */
  int fullBatch() {
    return fullBatch;
  }

  /**
   * The rows of a claim that fit in the bytes left, in seq order (the first always); the rest are
   * given back at once, so the bound holds when rows grew since the last claim (a burst of large
   * payloads after small ones): the claim counted their payloads and headers only, these count
   * their records (text fields and overhead too). Only rows after every kept one go back, so no
   * aggregate's later row leaves before an earlier one. Throws, like a claim, while the database is
   * away; the claim then stays unconfirmed, and its rows are released before the next. (A row no
   * longer under its lease when given back, parked by an operator meanwhile, is no longer the
   * task's to give back.) Its largest row is the size the next claim assumes ({@link
   * #sizedRequest}).
   */
  private ClaimResult withinBudget(ClaimResult result) {
    if (result.claimed().isEmpty()) {
      return result;
    }
    long claimedBytes = 0;
    long largest = 0;
    for (ClaimedMessage row : result.claimed()) {
      long bytes = InFlightLedger.recordBytes(row);
      claimedBytes += bytes;
      largest = Math.max(largest, bytes);
    }
    rowBytes = largest; // the size of the next claim's rows
    long room = settings.maxInFlightBytes() - ledger.bytes();
    if (result.claimed().size() < 2 || claimedBytes <= room) {
      return result; // the rule: rows like the last claim's
    }
    List<ClaimedMessage> bySeq = new ArrayList<>(result.claimed());
    bySeq.sort(Comparator.comparingLong(ClaimedMessage::seq));
    long taken = 0;
    int keep = 0;
    while (keep < bySeq.size()) {
      long bytes = InFlightLedger.recordBytes(bySeq.get(keep));
      if (keep > 0 && taken + bytes > room) {
        break;
      }
      taken += bytes;
      keep++;
    }
    if (keep == bySeq.size()) {
      return result;
    }
    List<ClaimedMessage> kept = bySeq.subList(0, keep);
    // By their seqs and leases: releasing what the task does not hold would read the whole backlog.
    List<HeldLease> past =
        bySeq.subList(keep, bySeq.size()).stream().map(ClaimedMessage::heldLease).toList();
    List<String> released = giveBack(past, "rows past the in-flight byte budget");
    metrics.claimed.addAndGet(past.size()); // the caller counts the kept ones
    metrics.released.addAndGet(released.size());
    log.info(
        "Claimed {} rows past the in-flight byte budget ({} bytes) and gave them back at once",
        released.size(),
        settings.maxInFlightBytes());
    return new ClaimResult(List.copyOf(kept), result.exhausted());
  }

  /**
   * A claim, unconfirmed until it returns: one that throws may still have committed (the connection
   * lost at COMMIT), leasing rows to this owner that no record will ever carry. Not one the server
   * answered with an error (a statement timeout on a large backlog): that one rolled back, and
   * releasing after it would read the same backlog, time out the same way, and hold every claim
   * back. The rows it parked (over a lowered max.attempts, or abandoned in isolation) are reported
   * as soon as it returns: they are committed even if giving back rows past the byte budget then
   * fails, which leaves rows leased as a lost result does.
   */
  private ClaimResult confirmed(int limit, Supplier<ClaimResult> claim) {
    ClaimResult claimed;
    try {
      claimed = claim.get();
    } catch (OutboxStoreException e) {
      if (e.mayHaveCommitted()) {
        lostClaim = newLostClaimRelease(limit);
      }
      throw e;
    } catch (RuntimeException | Error e) {
      lostClaim =
          newLostClaimRelease(limit); // it may have committed: leased rows no record carries
      throw e;
    }
    try {
      reportExhausted(claimed);
      return withinBudget(claimed);
    } catch (RuntimeException | Error e) {
      // Committed: rows leased that no record will carry, each known by its seq and lease.
      unusedClaim = claimed.claimed().stream().map(ClaimedMessage::heldLease).toList();
      throw e;
    }
  }

  /** Gives back the rows of a claim that committed and was not used ({@link #unusedClaim}). */
  private void giveBackUnusedClaim() {
    if (unusedClaim.isEmpty()) {
      return;
    }
    List<String> given = giveBack(unusedClaim, "a claim never handed to Connect");
    metrics.claimed.addAndGet(unusedClaim.size()); // never handed to Connect: not counted by poll
    metrics.released.addAndGet(given.size());
    log.info(
        "Gave back {} rows of a claim never handed to Connect (giving back its rows past the"
            + " in-flight byte budget had failed)",
        given.size());
    unusedClaim = List.of();
  }

  /**
   * Gives back rows of a claim never handed to Connect ({@link OutboxStore#giveBack}). One no
   * longer held under its lease is named (INFO), not counted as a lost claim: this task never sent
   * it, so no duplicate is its doing, and it may be none of another owner's either (given back by
   * an earlier attempt whose reply was lost, parked by this task, or already reported lost).
   */
  private List<String> giveBack(List<HeldLease> rows, String what) {
    List<String> given = store.giveBack(rows);
    if (given.size() < rows.size()) {
      Set<String> found = Set.copyOf(given);
      for (HeldLease row : rows) {
        if (!found.contains(row.messageId())) {
          log.info(
              "Not given back, no longer held under its lease: message_id={}"
                  + " (reason=GIVE_BACK_UNMATCHED; from {}, never sent by this task: given back by"
                  + " an earlier attempt whose reply was lost, parked, or taken over by another"
                  + " owner)",
              Printable.escape(row.messageId()),
              what);
        }
      }
    }
    return given;
  }

  /**
   * @param limit the most rows the lost claim asked for (one abandoned row, one suspect, a batch):
   *     the release stops reading the backlog once it has released that many
   */
  private LostClaimRelease newLostClaimRelease(int limit) {
    return new LostClaimRelease(
        settings.instanceKeys(), settings.owner(), limit, LostClaimRelease.PAGE_ROWS);
  }

  /**
   * Before the next claim: releases the rows of a claim whose result never arrived (leased to this
   * owner, unique to this instance, and not held), page by page. Left leased, they would let later
   * rows of their aggregates go first; at least once they would wait a lease and a reclaim in
   * isolation, and exactly once the next batch's committed offset would cover them, so that a
   * recovery recorded them PUBLISHED unsent. Throws, like a claim, while the database is away; the
   * next call reads on from the page that failed. Returns whether the release has ended: not when
   * {@code stop} said to stop reading pages, nor while the lost claim is still ending on the server
   * (its commit waiting for a synchronous standby), which the next call asks again.
   */
  private boolean releaseUnconfirmedClaim(BooleanSupplier stop) {
    LostClaimRelease release = lostClaim;
    if (release == null) {
      return true;
    }
    int before = release.released().size();
    boolean ended;
    try {
      ended = release.run(store, ledger::heldSeqs, handedThrough(), stop);
    } catch (OutboxStoreException e) {
      if (e.mayHaveCommitted() && release.claimEnded()) { // a page's failure, not the check's
        // Read again, the page finds the rows it gave back due already: say so, once.
        log.warn(
            "A page of the release of a claim whose result never arrived failed without a reply"
                + " (reason={}, sqlState={}): rows it released, if it committed, are not listed"
                + " (reason={})",
            e.reasonCode(),
            e.sqlState(),
            CLAIM_RESULT_LOST);
      }
      throw e;
    } finally { // also the rows of the pages before one that failed
      reportReleased(release.released().subList(before, release.released().size()));
    }
    List<String> released = release.released();
    if (!ended && !release.claimEnded() && stillEndingReported != release) {
      stillEndingReported = release; // once per release
      log.warn(
          "A claim whose result never arrived is still ending on the server (its commit may wait"
              + " for a synchronous standby): its rows are released once it has ended, and the"
              + " task claims nothing until then (reason={})",
          CLAIM_RESULT_LOST);
    }
    if (ended) {
      log.info(
          "Release of a claim whose result never arrived ended: {} rows released, {} pages of"
              + " the backlog read; rows the claim may have parked EXHAUSTED (over max.attempts)"
              + " are neither named nor counted in exhausted-total: outbox-relay-cli list"
              + " --instance-key <key> --status EXHAUSTED shows them (reason={})",
          released.size(),
          release.pagesRead(),
          CLAIM_RESULT_LOST);
      lostClaim = null;
    }
    return ended;
  }

  private void reportReleased(List<String> released) {
    for (String id : released) {
      log.warn(
          "Released a claim whose result never arrived: message_id={} (reason={})",
          Printable.escape(id),
          CLAIM_RESULT_LOST);
    }
    metrics.unconfirmedReleased.addAndGet(released.size());
  }

  /**
   * At a stop, the release of a claim whose result never arrived, a few pages at most: the stop
   * must end, and rows it does not reach are reclaimed when their leases run out.
   */
  private void releaseAtStop() {
    LostClaimRelease release = lostClaim;
    if (release == null) {
      return;
    }
    int start = release.pagesRead();
    if (!releaseUnconfirmedClaim(() -> release.pagesRead() - start >= STOP_RELEASE_PAGES)) {
      warnReleaseCut();
    }
  }

  /**
   * Whether the release of a lost claim's rows has pages left to read now (the claim ended on the
   * server): the next claim reads on at once, with no idle wait before it.
   */
  boolean readsOnAtOnce() {
    return releaseCut && !stopping;
  }

  /**
   * The last claim read its share of a lost claim's release, and pages are left: not a claim that
   * returned at once (the ledger full, renewals failing), whose next poll must wait, or it spun.
   */
  private volatile boolean releaseCut;

  /** A stop came before the release of a lost claim's rows ended. */
  private void warnReleaseCut() {
    LostClaimRelease release = lostClaim;
    log.warn(
        "Stopped before every row of a claim whose result never arrived was found ({} pages of"
            + " the backlog read); {} (reason={})",
        release == null ? 0 : release.pagesRead(),
        exactlyOnce == null
            ? "rows not found are reclaimed when their leases run out"
            : "the next instance's recovery releases rows not found",
        CLAIM_RESULT_LOST);
  }

  /**
   * The task is stopping (Connect called {@code stop()}): a release of a lost claim's rows on the
   * task thread stops at its next page, so that poll() returns; the stop reads on from there
   * ({@link #giveBackAtStop}), a few pages at most.
   */
  void taskStopping() {
    stopping = true;
  }

  /** Exactly once, the last batch handed to Connect, whose rows only recovery may release. */
  private long handedThrough() {
    return exactlyOnce == null ? 0 : exactlyOnce.handedThrough();
  }

  /**
   * At a stop, on the outcome thread: releases the rows of a claim whose result never arrived, due
   * again at once, as the next claim would have, reading a few pages of the backlog at most (a
   * claim still running on the task thread is not such a claim; if it commits, its rows wait out
   * their lease; a release running there stops at its next page). Left leased, they waited out
   * their lease and were then reclaimed one by one in isolation as abandoned rows, counted as
   * possible duplicates though no record of them was ever sent. Exactly once, also the rows of the
   * batches claimed that Connect never got (the one ahead, one whose parks the stop interrupted;
   * the stop forgot them): left leased, the next instance's recovery would release them as
   * suspects, to be claimed one by one. Never throws: the task is stopping, and the leases run out
   * instead.
   */
  void giveBackAtStop() {
    taskStopping();
    if (!claiming.tryLock()) {
      if (lostClaim != null) {
        // Not a claim: the release of a lost one, which stops at its next page (taskStopping).
        warnReleaseCut();
        return;
      }
      // A claim still running (the task thread's, or one ahead): its rows, if it commits, wait
      // for their leases to run out, or exactly once for the next instance's recovery.
      log.info(
          "Nothing given back at stop: a claim is still running (reason=CLAIM_RUNNING_AT_STOP);"
              + " {}",
          exactlyOnce == null
              ? "rows it leases are reclaimed when their leases run out"
              : "the next instance's recovery, or a sweep once their leases run out, releases the"
                  + " rows it leases");
      return;
    }
    try {
      giveBackUnusedClaim();
      if (exactlyOnce != null) {
        // By their leases, first: a lost claim's release ends at one claim's worth of rows, and
        // the batches never handed over are not among them (the stop forgot them).
        releaseClaimedAhead();
      }
      releaseAtStop();
    } catch (RuntimeException e) { // NOPMD: stopping; the leases run out instead
      log.warn(
          "Could not give back at stop the rows claimed and never handed to Connect (error={});"
              + " {}",
          e instanceof OutboxStoreException ose ? ose.reasonCode() : e.getClass().getName(),
          exactlyOnce == null
              ? "they are reclaimed when their leases run out (reason=" + CLAIM_RESULT_LOST + ")"
              : "the next instance's recovery releases them");
    } finally {
      claiming.unlock();
    }
  }

  /**
   * Exactly once, at a stop: the rows of the claims whose batches were never handed to Connect (the
   * stop forgot the batch claimed ahead, and one whose parks it interrupted), so that no record of
   * them can be in Kafka. By their seqs and leases: releasing every row leased to the instance that
   * it does not hold read the keys' whole due backlog at every stop. (A claim whose result was lost
   * is released page by page after this; a row left leased all the same is released by the next
   * instance's recovery.) Batches handed over are the ledger's, settled from the committed offsets.
   */
  private void releaseClaimedAhead() {
    NavigableMap<Long, List<HeldLease>> ahead = claimsNotHandedOver.tailMap(handedThrough(), false);
    List<HeldLease> rows = ahead.values().stream().flatMap(List::stream).toList();
    ahead.clear();
    if (rows.isEmpty()) {
      return;
    }
    List<String> released = giveBack(rows, "a claim ahead that Connect never got");
    metrics.released.addAndGet(released.size());
    for (String id : released) {
      log.info(
          "Gave back a row claimed ahead that Connect never got: message_id={}"
              + " (reason=CLAIMED_AHEAD_AT_STOP)",
          Printable.escape(id));
    }
  }

  /**
   * Exactly-once: due rows of this task's buckets only, never another share's, and no abandoned
   * reclaim (an abandoned row may have been committed to Kafka: only recovery, which consults the
   * offsets, settles it). Expired leases of lower epochs are released by the sweep first. The
   * suspects a recovery released are claimed first, each alone: only while the task holds nothing,
   * and nothing else is claimed until it is resolved ({@link ExactlyOnceState#nextClaim}).
   */
  private ClaimResult claimInBuckets() {
    if (holdsIsolatedClaim) {
      if (!ledger.isEmpty()) {
        return ClaimResult.EMPTY; // the suspect's transaction is alone until Kafka committed it
      }
      holdsIsolatedClaim = false;
    }
    try {
      if (exactlyOnce.sweepIfDue()) {
        sweepFailureSaid = null; // a failure after a sweep that went through is said at once
      }
    } catch (OutboxStoreException e) {
      if (!e.isRetriable()) {
        throw e;
      }
      // A sweep waits a second for row locks (a fenced instance's write must settle first) and
      // fails past it; the claims skip locked rows and go on, as between sweeps.
      health.databaseError(e);
      long now = time.hiResClockMs();
      String failure = e.reasonCode() + "/" + e.sqlState();
      if (!failure.equals(sweepFailureSaid)
          || now - sweepFailureSaidMs >= SWEEP_FAILURE_REPEAT_MS) {
        // Once a minute while the same failure lasts: a lock held for hours failed a sweep every
        // few seconds.
        sweepFailureSaid = failure;
        sweepFailureSaidMs = now;
        log.warn(
            "Exactly-once sweep failed (reason={}, sqlState={}); claiming on, sweep retried soon"
                + " (said once a minute while it fails so)",
            e.reasonCode(),
            e.sqlState());
      }
    }
    while (exactlyOnce.isolating()) {
      if (!ledger.isEmpty()) {
        // Alone in its transaction: what the task holds is acknowledged (committed) first. The
        // outcome writer wakes poll() once the ledger empties.
        return ClaimResult.EMPTY;
      }
      ClaimRequest alone = exactlyOnce.nextClaim(settings.claimRequest());
      ClaimResult suspect;
      try {
        suspect = remembered(alone, confirmed(alone.limit(), () -> store.claim(alone)));
      } catch (OutboxStoreException e) {
        if (!SqlStates.LOCK_NOT_AVAILABLE.equals(e.sqlState())) {
          throw e;
        }
        return waitForALockedSuspect();
      }
      suspectLockedSaid = false;
      exactlyOnce.suspectClaimed(suspect);
      if (!suspect.claimed().isEmpty()) {
        holdsIsolatedClaim = true;
        return suspect;
      }
      // Empty: none left to isolate. Parked over a lowered budget: on to the next suspect.
    }
    ClaimRequest request = exactlyOnce.nextClaim(sizedRequest());
    return remembered(request, confirmed(request.limit(), () -> store.claim(request)));
  }

  /**
   * Exactly once: the next suspect is locked by another session (an operator's open transaction;
   * its claim fails at once, NOWAIT): nothing is claimed until the lock is gone, then the suspect
   * alone. Skipped instead (SKIP LOCKED), it was taken for settled and went out in an ordinary
   * batch once the lock was gone; a claim of due rows meanwhile would send the other suspects in
   * one, and a culprit among them would fail that batch too. Said once while it lasts, naming it.
   */
  private ClaimResult waitForALockedSuspect() {
    if (!suspectLockedSaid) {
      suspectLockedSaid = true;
      log.warn(
          "The next row to send alone (seq={}, released twice without Kafka committing it) is"
              + " locked by another session; nothing is claimed until the lock is gone, then that"
              + " row alone: end the session holding it (pg_locks, pg_stat_activity)"
              + " (reason=SUSPECT_LOCKED)",
          exactlyOnce.firstSuspect());
    }
    return ClaimResult.EMPTY;
  }

  /**
   * Exactly once: {@code result}, remembered until its batch is handed over ({@link
   * #claimsNotHandedOver}). Forgotten by now: batches handed over, and every batch before the
   * previous claim's. A claim starts only once the batch before it was handed over, or parked whole
   * (no record to hand over: then nothing advances past it, and the entries of a backlog parked
   * batch by batch, a payload format that fits none of its rows, grew without bound).
   */
  private ClaimResult remembered(ClaimRequest request, ClaimResult result) {
    long batch = request.exactlyOnce().batch();
    claimsNotHandedOver.headMap(Math.max(handedThrough() + 1, batch - 1), false).clear();
    if (!result.claimed().isEmpty()) {
      claimsNotHandedOver.put(
          batch, result.claimed().stream().map(ClaimedMessage::heldLease).toList());
    }
    return result;
  }

  /**
   * Exactly once: the row whose mapping failed the task is not given back at the stop with the rest
   * of its claim: it is parked (TaskRuntime#parkUnmappable), or, where that could not be written,
   * left leased under this epoch for the next instance's recovery to release (as a suspect, claimed
   * alone and charged an attempt each time it fails a task, once it has ended an instance before),
   * until it is parked EXHAUSTED. Given back, it went out again in an ordinary batch and failed
   * that task too, for ever.
   */
  void leaveLeasedAtStop(String messageId) {
    claiming.lock();
    try {
      claimsNotHandedOver.replaceAll(
          (batch, rows) -> rows.stream().filter(r -> !r.messageId().equals(messageId)).toList());
    } finally {
      claiming.unlock();
    }
  }

  /**
   * Exactly once: whether the next claim must wait for what the task holds (a suspect's claim, or
   * the claim after one): nothing is claimed ahead meanwhile.
   */
  boolean isolating() {
    return exactlyOnce != null && (holdsIsolatedClaim || exactlyOnce.isolating());
  }

  private void reportExhausted(ClaimResult result) {
    for (ExhaustedMessage row : result.exhausted()) {
      metrics.exhausted.incrementAndGet();
      log.warn(
          "Message exhausted by a claim instead of being sent: message_id={} instance_key={}"
              + " reason={}",
          Printable.escape(row.messageId()),
          Printable.escape(row.instanceKey()),
          row.reasonCode());
    }
  }
}
