package dev.outboxrelay.connect;

import dev.outboxrelay.mapping.SourceOffsets;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.BucketShare;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.CommittedPosition;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.ReasonCodes;
import dev.outboxrelay.store.Recovery;
import dev.outboxrelay.store.RecoveryPass;
import dev.outboxrelay.store.RecoveryRequest;
import dev.outboxrelay.writer.Printable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A task's exactly-once state (docs/design.md, "Exactly-once"): its epoch, the buckets it owns and
 * its claim counter. Before the first claim it recovers what its buckets hold under lower epochs,
 * judged by the committed source offsets; afterwards it releases, now and then, expired leases of
 * lower epochs (instances fenced in Kafka that still claimed). Used by one thread at a time: the
 * task thread, and the prefetch thread for the claims it makes ahead ({@link ClaimPrefetch} hands
 * each claim's result over through a future, which orders the two).
 */
final class ExactlyOnceState {
  private static final Logger log = LoggerFactory.getLogger(ExactlyOnceState.class);

  /** The orders a bucket's partition may have been committed under (all of its keys'). */
  private static final int KEY_ORDERS = 6;

  private static final Comparator<CommittedPosition> POSITION_ORDER =
      Comparator.comparingLong(CommittedPosition::epoch)
          .thenComparingLong(CommittedPosition::batch)
          .thenComparingLong(CommittedPosition::seq);
  private static final long NO_EPOCH = -1;

  private final OutboxStore store;
  private final BucketShare share;
  private final Set<String> instanceKeys;
  private final Supplier<OffsetStorageReader> offsets;
  private final RelayMetrics metrics;
  private final Time time;
  private final Duration sweepInterval;
  private final int maxAttempts;
  private final boolean isolatesSuspects;

  /** How soon a sweep that failed is tried again: not every poll, whose claims must go on. */
  static final Duration SWEEP_RETRY = Duration.ofSeconds(5);

  /**
   * Pages a call reads at most, of a recovery or a sweep: ≈0.12 s behind a large backlog
   * (docs/benchmarks.md, "Exactly-once recovery and sweeps, paged").
   */
  static final int PAGES_PER_CALL = 10;

  private final int pageRows;
  private long epoch = NO_EPOCH;
  private boolean recovered;

  /** The start's recovery under way, its position and committed positions kept between polls. */
  private RecoveryPass startRecovery;

  /** The sweep under way, between two claims; null between sweeps. */
  private RecoveryPass sweep;

  /**
   * When the current pass began, moved on by the time it spent failing (each failed call, and the
   * wait until its retry): the pass's own length, which spaces the next, is the time since. Counted
   * from its first call, a pass whose pages kept failing for hours (a row locked meanwhile) put the
   * next sweep off as long, leaving zombies' rows in flight.
   */
  private long sweepStartedMs;

  /** When the last call of the current pass failed; {@link #NOT_FAILED} otherwise. */
  private long sweepFailedAtMs = NOT_FAILED;

  private static final long NOT_FAILED = Long.MIN_VALUE;

  private long batch;

  /**
   * The positions committed before this instance started, as its recovery read them: a sweep
   * records a row they cover PUBLISHED, not released (the recovery's own write lost by the
   * database, a failover, would otherwise have the row sent again). Rows claimed later by an
   * instance of a lower epoch are never covered by them: that instance is fenced.
   */
  private List<CommittedPosition> committedAtStart = List.of();

  private volatile long handedThrough; // read by the stop's give-back on the outcome thread

  /** The last recovery or sweep failed: it may have committed, its reply lost. */
  private boolean settleFailed;

  private long nextSweepMs;

  /** How this connector's lease owners begin: another's live leases are left to it. */
  private final String ownOwners;

  /** Whether the last pass found another connector's live leases (said once until none are). */
  private boolean foreignReported;

  /**
   * The committed offsets as read right after the epoch was taken, for the start recovery; null
   * before, after, or when they could not be read then. Read later (the first poll can come long
   * after start()), they could hold a successor's offsets: one that fenced this instance, took a
   * later epoch and committed, which would be taken for another history of the database.
   */
  private List<CommittedPosition> committedAtEpoch;

  /** Rows leased under a later epoch already logged; the sweep finds them again and again. */
  private final Set<String> reportedLaterEpoch = new HashSet<>();

  /**
   * The seqs of the suspects this instance's recoveries released (rows whose instance ended without
   * Kafka committing them), claimed alone one by one before due rows; see {@link #nextClaim}.
   */
  private final TreeSet<Long> suspects = new TreeSet<>();

  ExactlyOnceState(
      OutboxStore store,
      TaskSettings settings,
      Supplier<OffsetStorageReader> offsets,
      RelayMetrics metrics,
      Time time) {
    this(store, settings, offsets, metrics, time, RecoveryPass.PAGE_ROWS);
  }

  /** With {@code pageRows} rows read per page of a recovery or sweep: small in tests. */
  ExactlyOnceState(
      OutboxStore store,
      TaskSettings settings,
      Supplier<OffsetStorageReader> offsets,
      RelayMetrics metrics,
      Time time,
      int pageRows) {
    this.pageRows = pageRows;
    this.store = store;
    this.share = settings.buckets();
    this.instanceKeys = settings.instanceKeys();
    this.offsets = offsets;
    this.metrics = metrics;
    this.time = time;
    this.sweepInterval = settings.abandonedProbeInterval();
    this.maxAttempts = settings.claimRequest().maxAttempts();
    this.isolatesSuspects = settings.isolatesSuspects();
    this.ownOwners = LeaseOwners.connectorOwners(settings.claimRequest().owner());
  }

  /**
   * Takes this instance's epoch, once: from {@code start()}, so that epoch order follows the order
   * in which Connect started (and fenced) the instances. Taken at the first poll instead, an
   * instance fenced by its successor whose first poll came late (a migration backing off, a slow
   * thread) would have taken the higher epoch, and its recovery released the successor's rows in
   * flight. When the database is away at start, the first poll takes it. The committed offsets are
   * read right after it ({@link #committedAtEpoch}).
   */
  void takeEpoch() {
    if (epoch != NO_EPOCH) {
      return;
    }
    epoch = store.newEpoch();
    try {
      List<CommittedPosition> committed = committedPositions();
      requireNoneAtThisEpoch(committed);
      committedAtEpoch = committed;
    } catch (RetriableException e) {
      // Kafka is away (said by readOffsets): the first poll reads them, and judges the epoch.
    }
  }

  /**
   * Fails the task when an offset has this instance's epoch: committed against another history of
   * the database (restored or moved), whose transaction ids climb through it, it would cover this
   * instance's own rows, uncommitted, should it crash before committing their bucket. Not a new
   * epoch instead: the offsets' read may take long, a successor start meanwhile, and a later epoch
   * taken then could be above the successor's, whose rows in flight the recovery would release. A
   * restart takes a new one, in start().
   */
  private void requireNoneAtThisEpoch(List<CommittedPosition> committed) {
    if (committed.stream().anyMatch(p -> p.epoch() == epoch)) {
      throw offsetAtThisEpoch();
    }
  }

  private static ConnectException offsetAtThisEpoch() {
    return new ConnectException(
        "outbox-relay: an exactly-once offset has this instance's epoch: committed against"
            + " another history of the database (restored or moved); restart the task, which"
            + " takes a new epoch, and reset the connector's offsets"
            + " (reason=OFFSET_AT_INSTANCE_EPOCH)");
  }

  /** As {@link #offsetAtThisEpoch()}, for an earlier build's offset, which no reset reaches. */
  private static ConnectException earlierBuildsOffsetAtThisEpoch() {
    return new ConnectException(
        "outbox-relay: an exactly-once offset an earlier build committed has this instance's"
            + " epoch: committed against another history of the database (restored or moved);"
            + " no offsets reset reaches it: create the connector anew under another name"
            + " (reason=OFFSET_AT_INSTANCE_EPOCH)");
  }

  /**
   * Recovers this instance's buckets (taking its epoch first if start() could not), at most {@link
   * #PAGES_PER_CALL} pages per call, so that a poll returns soon however large the backlog (Connect
   * calls {@code stop()} on the task thread once a poll has returned). Returns whether the recovery
   * has ended; nothing may be claimed before. Connect starts a task only after fencing every
   * earlier producer of its buckets, so the offsets read when the epoch was taken (or, when Kafka
   * was away then, at the first call) are final for them, and every page uses them.
   */
  boolean recover() {
    if (recovered) {
      return true;
    }
    if (startRecovery == null) {
      takeEpoch();
      List<CommittedPosition> committed =
          committedAtEpoch != null ? committedAtEpoch : committedPositions();
      committedAtEpoch = null;
      requireNoneAtThisEpoch(committed);
      committed.forEach(this::warnIfFromAnotherHistory);
      startRecovery =
          new RecoveryPass(
              new RecoveryRequest(
                  instanceKeys, share, epoch, committed, false, maxAttempts, ownOwners),
              pageRows);
    }
    RecoveryPass pass = startRecovery;
    if (!settlePages(pass, "start")) {
      return false;
    }
    recovered = true;
    startRecovery = null;
    committedAtStart = pass.request().committed();
    nextSweepMs = time.hiResClockMs() + sweepInterval.toMillis(); // monotonic: see sweepIfDue
    reportLaterEpoch(pass.laterEpoch());
    reportForeign(pass);
    log.info(
        "Exactly-once task recovered: epoch={} buckets={} of {} committed_positions={}"
            + " recorded_published={} released={} suspects={} exhausted={}"
            + " leased_under_later_epoch={} leased_by_another_connector={} pages_read={}",
        epoch,
        share.ownedBuckets(),
        share.buckets(),
        committedAtStart.size(),
        pass.published(),
        pass.released(),
        pass.suspects(),
        pass.exhausted(),
        pass.laterEpoch().size(),
        pass.foreign(),
        pass.pagesRead());
    return true;
  }

  /**
   * Settles expired leases of lower epochs in this task's buckets, a pass once per sweep interval
   * (or per pass's length, if longer), at most {@link #PAGES_PER_CALL} pages of it per call: a
   * claim goes between two calls, the ordered claim waiting as ever for a row still leased ahead of
   * its aggregate's next. Released, or recorded PUBLISHED where a position committed before the
   * start covers them. A page that fails is read again after {@link #SWEEP_RETRY} (or the interval,
   * if shorter, or the failed call's length, if longer). Returns whether pages were read now.
   */
  boolean sweepIfDue() {
    // Monotonic: a wall clock stepped back (an NTP correction) stopped the sweeps for as long,
    // leaving a fenced instance's expired rows in flight and their aggregates waiting.
    long now = time.hiResClockMs();
    if (now < nextSweepMs) {
      return false;
    }
    if (sweep == null) {
      sweep =
          new RecoveryPass(
              new RecoveryRequest(
                  instanceKeys, share, epoch, committedAtStart, true, maxAttempts, ownOwners),
              pageRows);
      sweepStartedMs = now;
    } else if (sweepFailedAtMs != NOT_FAILED) {
      sweepStartedMs += now - sweepFailedAtMs; // the wait for this retry is no part of its length
    }
    sweepFailedAtMs = NOT_FAILED;
    boolean ended;
    try {
      ended = settlePages(sweep, "sweep");
    } catch (RuntimeException e) {
      long failedAt = time.hiResClockMs();
      sweepStartedMs += failedAt - now; // the failed call is no part of the pass's length either
      sweepFailedAtMs = failedAt;
      // From the failure, not the page's start, and at least as long as the failed call took: a
      // page that waited out the statement timeout (a row locked by an operator's transaction) was
      // retried by the next claim, and every claim waited the timeout first while it failed so.
      nextSweepMs =
          failedAt
              + Math.max(
                  Math.min(sweepInterval.toMillis(), SWEEP_RETRY.toMillis()), failedAt - now);
      throw e;
    }
    if (ended) {
      reportLaterEpoch(sweep.laterEpoch());
      reportForeign(sweep);
      sweep = null;
      // Spaced by the interval, or by the pass's own length behind a backlog so large that it
      // outlasts the interval: then sweeping takes at most half of the claims' time.
      long end = time.hiResClockMs();
      nextSweepMs = end + Math.max(sweepInterval.toMillis(), end - sweepStartedMs);
    }
    return true;
  }

  /**
   * Settles at most {@link #PAGES_PER_CALL} pages of {@code pass}, each reported as it commits, and
   * returns whether the pass has ended. Throws, the position kept, when a page fails.
   */
  private boolean settlePages(RecoveryPass pass, String when) {
    for (int pages = 0; pages < PAGES_PER_CALL && !pass.isDone(); pages++) {
      report(settle(pass), when);
    }
    return pass.isDone();
  }

  /**
   * The next claim: {@code base} as this instance's next exactly-once claim. While suspects wait,
   * one of them alone: a record that fails its task (a converter's or transform's exception, a
   * broker's refusal) aborts the transaction of its whole batch, so every row of it comes back, and
   * the second time as a suspect; claimed alone, only the culprit fails again, is charged an
   * attempt by the next recovery, and ends EXHAUSTED after the budget instead of failing every
   * restarted task for ever.
   */
  ClaimRequest nextClaim(ClaimRequest base) {
    if (!suspects.isEmpty()) {
      return base.isolatingSuspect(epoch, ++batch, share, List.copyOf(suspects));
    }
    return base.exactlyOnce(epoch, ++batch, share);
  }

  /** The seq of the suspect claimed next, for a log line; -1 when none waits. */
  long firstSuspect() {
    return suspects.isEmpty() ? -1 : suspects.first();
  }

  /** Whether suspects wait to be claimed alone: nothing is claimed ahead meanwhile. */
  boolean isolating() {
    return !suspects.isEmpty();
  }

  /**
   * What a suspect's claim found: the row it took leaves the suspects, and so does every one when
   * it found none (each is then settled, no longer flagged, or waits behind an earlier row of its
   * aggregate: a claim of due rows takes it later, unflagged). A row it parked (over a lowered
   * budget) is no longer due and is skipped by the next.
   */
  void suspectClaimed(ClaimResult result) {
    if (result.isEmpty()) {
      suspects.clear();
      return;
    }
    for (ClaimedMessage row : result.claimed()) {
      suspects.remove(row.seq());
      metrics.abandonedReclaimed.incrementAndGet();
      log.info(
          "Claimed message_id={} instance_key={} alone: an earlier instance ended without Kafka"
              + " committing it (reason=NOT_COMMITTED)",
          Printable.escape(row.messageId()),
          Printable.escape(row.instanceKey()));
    }
  }

  /** This instance's epoch. */
  long epoch() {
    return epoch;
  }

  /** The latest claim's number, the batch of its rows' positions. */
  long batch() {
    return batch;
  }

  /** On the task thread: these records of one batch were handed to Connect. */
  void handedOver(List<SourceRecord> records) {
    if (!records.isEmpty()) {
      handedThrough = Math.max(handedThrough, SourceOffsets.batch(records.get(records.size() - 1)));
    }
  }

  /**
   * The last batch handed to Connect. A row of it or of an earlier one that is leased to this
   * instance and not held was committed to Kafka, or will be, or fails the task: only recovery, by
   * the committed offsets, settles it (its PUBLISHED write lost by the database, say).
   */
  long handedThrough() {
    return handedThrough;
  }

  /** The record of a row of the latest claim, at its bucket's partition and its position. */
  SourceRecord atPosition(SourceRecord record, ClaimedMessage row, boolean parked) {
    return SourceOffsets.atPosition(record, row, share, epoch, batch, parked);
  }

  /**
   * The committed position of each owned bucket. Read under every order of the partition's keys,
   * each in a call of its own (the reader would merge equal maps): builds before the fixed order
   * committed under their JVM's order, so one bucket may have offsets under several. The latest is
   * the one of the highest epoch, epoch order being ownership order.
   */
  private List<CommittedPosition> committedPositions() {
    List<List<Map<String, Object>>> everyOrder = new ArrayList<>();
    for (String key : instanceKeys) {
      for (int bucket : share.ownedBuckets()) {
        everyOrder.add(SourceOffsets.bucketPartitionInEveryOrder(key, bucket, share.buckets()));
      }
    }
    Map<List<Object>, CommittedPosition> latest = new LinkedHashMap<>();
    Set<List<Object>> underEarlierOrder = new HashSet<>(); // buckets whose latest is so
    for (int order = 0; order < KEY_ORDERS; order++) {
      List<Map<String, Object>> partitions = new ArrayList<>(everyOrder.size());
      for (List<Map<String, Object>> orders : everyOrder) {
        partitions.add(orders.get(order));
      }
      Map<Map<String, Object>, Map<String, Object>> stored = readOffsets(partitions);
      for (Map<String, Object> partition : partitions) {
        String key = (String) partition.get(SourceOffsets.INSTANCE_KEY);
        int bucket = (Integer) partition.get(SourceOffsets.BUCKET);
        Map<String, Object> offset = stored == null ? null : stored.get(partition);
        Optional<CommittedPosition> position = SourceOffsets.committedPosition(key, bucket, offset);
        if (position.isEmpty()) {
          continue;
        }
        if (order > 0 && position.get().epoch() == epoch) {
          // Ignored, it would be read again by a successor (of a later epoch), and cover this
          // instance's rows, sent or not, should it crash before committing the bucket.
          throw earlierBuildsOffsetAtThisEpoch();
        }
        if (order > 0 && position.get().epoch() > epoch) {
          warnIgnoredFromAnotherHistory(position.get());
          continue;
        }
        List<Object> id = List.of(key, bucket);
        boolean latestSoFar =
            latest.merge(id, position.get(), ExactlyOnceState::later) == position.get();
        if (latestSoFar && order > 0) { // the fixed order is read first
          underEarlierOrder.add(id);
        }
      }
    }
    for (List<Object> id : underEarlierOrder) {
      warnEarlierKeyOrder(latest.get(id));
    }
    return new ArrayList<>(latest.values());
  }

  /**
   * An offset of an epoch not below this instance's: every instance that committed before it took
   * its epoch earlier (Connect fences them before it starts this one), so the offset was committed
   * against another history of the database, restored from a dump or backup or moved, whose
   * transaction ids will climb through its epoch; an instance that then takes that very epoch and
   * crashes before committing the bucket would have its rows taken for committed. Said at every
   * start until the bucket commits again (docs/design.md, Limits: reset the connector's offsets).
   */
  private void warnIfFromAnotherHistory(CommittedPosition p) {
    if (p.epoch() >= epoch) {
      // Read after the epoch was taken, in start() or at the first poll: a read that took long (a
      // slow broker) may find a successor's that fenced this instance meanwhile, so the advice to
      // reset is always given with that caveat (a reset then sends committed rows again).
      log.warn(
          "Exactly-once offset from a later epoch than this instance's: instance_key={} bucket={}"
              + " offset_epoch={} epoch={} (reason=OFFSET_FROM_LATER_EPOCH): committed against"
              + " another history of the database (restored or moved), or by a successor of this"
              + " instance that fenced it while its offsets were read; unless another instance of"
              + " this task runs, stop the connector and reset its offsets"
              + " (DELETE /connectors/<name>/offsets)",
          Printable.escape(p.instanceKey()),
          p.bucket(),
          p.epoch(),
          epoch);
    }
  }

  /**
   * An offset an earlier build committed under another key order, of an epoch above this
   * instance's: another history of the database's (see {@link #warnIfFromAnotherHistory}), which a
   * reset cannot clear (Connect's offsets endpoints reach only the fixed order's bytes). Taken, it
   * would outrank every offset this history commits until its transaction ids pass that epoch: rows
   * committed to Kafka released and sent again at each restart. Ignored: at worst rows are sent
   * again. (One at this instance's very epoch fails the task instead: a successor would read it,
   * and take this instance's rows up to it for committed.)
   */
  private void warnIgnoredFromAnotherHistory(CommittedPosition p) {
    log.warn(
        "Exactly-once offset under an earlier build's key order from a later epoch than this"
            + " instance's, ignored: instance_key={} bucket={} offset_epoch={} epoch={}"
            + " (reason=OFFSET_FROM_LATER_EPOCH): committed against another history of the"
            + " database (restored or moved), and Connect's offsets endpoints cannot reset it",
        Printable.escape(p.instanceKey()),
        p.bucket(),
        p.epoch(),
        epoch);
  }

  /**
   * A bucket whose latest offset an earlier build committed under another key order: Connect's
   * offsets endpoints neither list it nor reset it, until this instance commits the bucket again.
   */
  private static void warnEarlierKeyOrder(CommittedPosition p) {
    log.warn(
        "Exactly-once recovery used an offset committed by an earlier build under another key"
            + " order: instance_key={} bucket={} (reason=OFFSET_UNDER_EARLIER_KEY_ORDER);"
            + " Connect's offsets endpoints cannot list or reset it until the bucket commits again",
        Printable.escape(p.instanceKey()),
        p.bucket());
  }

  private static CommittedPosition later(CommittedPosition a, CommittedPosition b) {
    return POSITION_ORDER.compare(a, b) >= 0 ? a : b;
  }

  private Map<Map<String, Object>, Map<String, Object>> readOffsets(
      List<Map<String, Object>> partitions) {
    try {
      return offsets.get().offsets(partitions);
    } catch (RuntimeException e) {
      // Connect reads the offsets topic to its end; a broker that is away makes that time out.
      // Nothing is claimed until it succeeds, so poll() is simply tried again.
      log.warn(
          "Exactly-once recovery could not read the committed offsets ({}; reason=OFFSETS_UNREADABLE);"
              + " nothing is claimed until they are read; will retry",
          e.getClass().getSimpleName());
      throw new RetriableException("outbox-relay: committed offsets unreadable, will retry");
    }
  }

  /**
   * One page of a recovery or sweep. After an attempt that failed without the server's reply, whose
   * commit may have gone through (a failover), the next says that what the failed one settled went
   * unreported: its parks are not counted in exhausted-total, its suspects are not claimed alone.
   * Not after an error the server answered (a statement timeout, a lock not available): that
   * attempt rolled back.
   */
  private Recovery settle(RecoveryPass pass) {
    boolean afterAFailedAttempt = settleFailed;
    Recovery recovery;
    try {
      recovery = pass.nextPage(store);
    } catch (OutboxStoreException e) {
      settleFailed = afterAFailedAttempt || e.mayHaveCommitted();
      throw e;
    } catch (RuntimeException | Error e) {
      settleFailed = true; // not the store's: whether it committed is unknown
      throw e;
    }
    settleFailed = false;
    if (afterAFailedAttempt) {
      log.warn(
          "Exactly-once recovery retried after an attempt that failed; had that attempt committed"
              + " (its reply lost), the rows it settled went unreported here (reason="
              + "WRITE_REPLY_LOST): outbox-relay-cli list --status EXHAUSTED shows any it parked");
    }
    return recovery;
  }

  private void report(Recovery recovery, String when) {
    metrics.recoveredPublished.addAndGet(recovery.published().size());
    // Another connector's rows: it may have sent them, so a duplicate is possible, as for a row
    // claimed back from an expired lease at least once; not "never committed" (no offset of this
    // connector's says anything of them).
    metrics.recoveredReleased.addAndGet(
        recovery.released().size() - recovery.foreignReleased().size());
    metrics.abandonedReclaimed.addAndGet(recovery.foreignReleased().size());
    metrics.exhausted.addAndGet(recovery.exhausted().size());
    if (isolatesSuspects) {
      suspects.addAll(recovery.suspects()); // else claimed with due rows, which unflags them
    }
    for (String id : recovery.exhausted()) {
      log.warn(
          "Message exhausted: claimed alone, its instance ended again without Kafka committing it"
              + " (the record likely fails its task): message_id={} (reason={}, at={})",
          Printable.escape(id),
          ReasonCodes.ABANDONED_IN_ISOLATION,
          when);
    }
    for (String id : recovery.published()) {
      log.info(
          "Recorded PUBLISHED from the committed offsets without sending again: message_id={}"
              + " (reason=RECOVERED_FROM_OFFSETS, at={})",
          Printable.escape(id),
          when);
    }
    Set<String> foreignReleased = Set.copyOf(recovery.foreignReleased());
    for (String id : recovery.released()) {
      if (foreignReleased.contains(id)) {
        log.warn(
            "Released a row of another connector's expired lease; that connector may have sent it,"
                + " so it may reach Kafka twice: message_id={} (reason={}, at={}); relay each"
                + " instance key with one connector",
            Printable.escape(id),
            ReasonCodes.FOREIGN_LEASE_RELEASED,
            when);
        continue;
      }
      log.info(
          "Released a claim of an earlier instance that Kafka never committed: message_id={}"
              + " (reason=NOT_COMMITTED, at={})",
          Printable.escape(id),
          when);
    }
  }

  /**
   * Rows of this task's buckets in flight under another connector's live lease: two connectors on
   * one instance key. Left to it (released, they were sent twice); said when a pass first finds
   * some, again after a pass that found none.
   */
  private void reportForeign(RecoveryPass pass) {
    metrics.foreignLeasedRows.set(pass.foreign());
    if (pass.foreign() == 0) {
      foreignReported = false;
      return;
    }
    if (!foreignReported) {
      foreignReported = true;
      log.warn(
          "{} rows of this task's buckets are in flight under live leases of another connector's"
              + " tasks (e.g. message_id={}); left to it: two connectors relay the same instance"
              + " key, and neither's recovery knows the other's offsets (a row whose lease expires"
              + " may be sent twice); relay each key with one connector"
              + " (reason=LEASED_BY_ANOTHER_CONNECTOR)",
          pass.foreign(),
          Printable.escape(pass.firstForeign()));
    }
  }

  /**
   * Rows that no instance's recovery will ever take, at start and at each sweep (an instance that
   * took its epoch late may claim after this one started); each logged once.
   */
  private void reportLaterEpoch(List<String> laterEpoch) {
    metrics.laterEpochRows.set(laterEpoch.size());
    // A row given back by hand meanwhile is forgotten: reported again should it come back.
    reportedLaterEpoch.retainAll(Set.copyOf(laterEpoch));
    for (String id : laterEpoch) {
      if (!reportedLaterEpoch.add(id)) {
        continue;
      }
      // A database restored or moved with rows in flight (docs/design.md, Exactly-once limits),
      // or an instance that took its epoch late.
      log.warn(
          "Row leased under a later epoch than this task's ({}) left in flight; nothing recovers"
              + " it: message_id={} (reason=LEASED_UNDER_LATER_EPOCH)",
          epoch,
          Printable.escape(id));
    }
  }
}
