package dev.outboxrelay.connect;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.BacklogSnapshot;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.SqlStates;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Periodic work of one task per connector (task 0): retention cleanup of PUBLISHED rows in bounded
 * batches, and the backlog and lag figures. Own instance keys only. Scheduled on the monotonic
 * clock ({@link Time#hiResClockMs()}): a wall clock stepped back held both back for as long.
 *
 * <p>Started by {@code poll()} when due, and run on a thread of its own: counting a backlog of
 * millions takes seconds, up to the statement timeout, and during an outage each read waits for a
 * connection; run in {@code poll()}, that held the poll, and a stop meanwhile (Connect stops a task
 * only once its poll has returned) outlasted Connect's graceful shutdown timeout, which closes the
 * producer with records in flight. A failure that retrying cannot fix is thrown by the next {@link
 * #runIfDue}, in a poll, which fails the task.
 */
final class Maintenance {
  private static final Logger log = LoggerFactory.getLogger(Maintenance.class);

  /** Batches per run, so one run never holds up claiming for long. */
  private static final int MAX_BATCHES_PER_RUN = 10;

  /**
   * How often a run starts when the one before ended on a full batch (retention is behind): a whole
   * {@code cleanup.interval.ms} would cap retention at 10 batches per interval (167 rows/s with the
   * defaults), below what one task publishes, and the published log would grow without end. A run
   * that takes longer is followed by a pause as long as it took.
   */
  static final long CATCH_UP_PAUSE_MS = 1000;

  /** How long retention may stay behind before a WARN says so, and again while it lasts. */
  static final long RETENTION_BEHIND_WARN_MS = 10 * 60_000L;

  /** When the last RETENTION_BEHIND warning was logged (monotonic), or -1. */
  private long retentionBehindWarnedMs = -1;

  private final OutboxStore store;
  private final OutboxSourceConfig config;
  private final RelayMetrics metrics;
  private final Time time;
  private final boolean enabled;

  /** How this connector's lease owners begin; null: rows leased elsewhere are not counted here. */
  private final String ownOwners;

  private boolean leasedElsewhereReported;

  /**
   * Whether a failed count of rows leased elsewhere was said: it reads every unsettled row of the
   * keys, as the backlog count does, and on a backlog too large to count it times out at every read
   * too, a WARN per interval otherwise.
   */
  private boolean leasedElsewhereFailureReported;

  /**
   * A lag read between counts failed, said at WARN: the next failures until a read of the lag
   * succeeds (alone or with a count) not.
   */
  private boolean lagAloneFailureReported;

  private volatile long nextCleanupMs;
  private volatile long nextBacklogMs;

  /** When the lag is next read alone, between counts spaced further apart than an interval. */
  private volatile long nextLagMs;

  /** Where a run runs: a thread of the task's own, or (tests) the caller's. */
  private final Executor runs;

  private final AtomicBoolean running = new AtomicBoolean();

  /** The last run's failure that retrying cannot fix, thrown by the next {@link #runIfDue}. */
  private final AtomicReference<Throwable> failed = new AtomicReference<>();

  /** The task stops: a run going on ends after its statement, before the pool closes. */
  private volatile boolean stopping;

  /** The logging context of the task's thread, for runs on another. */
  private final Map<String, String> mdc = MDC.getCopyOfContextMap();

  /**
   * @param ownOwners how this connector's lease owners begin, to count with the backlog the rows
   *     another connector holds (at least once; exactly once each task's recovery counts those of
   *     its buckets): null not to
   */
  Maintenance(
      OutboxStore store,
      OutboxSourceConfig config,
      RelayMetrics metrics,
      Time time,
      boolean enabled,
      String ownOwners) {
    this(store, config, metrics, time, enabled, ownOwners, Runnable::run);
  }

  /** As the other constructor, each run on {@code runs} (a task's: its own thread). */
  Maintenance(
      OutboxStore store,
      OutboxSourceConfig config,
      RelayMetrics metrics,
      Time time,
      boolean enabled,
      String ownOwners,
      Executor runs) {
    this.runs = runs;
    this.store = store;
    this.config = config;
    this.metrics = metrics;
    this.time = time;
    this.enabled = enabled;
    this.ownOwners = ownOwners;
    // The first run within a minute of the start, not a whole interval later: with a long interval
    // (a day), task 0 restarted more often than that (rolling deploys) never ran retention.
    this.nextCleanupMs =
        time.hiResClockMs() + Math.min(config.cleanupInterval().toMillis(), FIRST_CLEANUP_MS);
    this.nextBacklogMs = time.hiResClockMs();
  }

  /** How long after task 0's start retention runs first, at most. */
  static final long FIRST_CLEANUP_MS = 60_000;

  /**
   * Starts a run if one is due and none is running, without waiting for it (unless it runs on the
   * caller's thread).
   *
   * @throws OutboxStoreException the failure of an earlier run that retrying cannot fix
   */
  void runIfDue() {
    if (!enabled) {
      return;
    }
    throwFailure();
    long now = time.hiResClockMs();
    boolean cleanupDue = config.retention().isPresent() && now >= nextCleanupMs;
    if (!(now >= nextBacklogMs || now >= nextLagMs || cleanupDue)
        || !running.compareAndSet(false, true)) {
      return;
    }
    if (failed.get() != null) { // a run that failed after the check above: no other after it
      running.set(false);
      throwFailure();
    }
    try {
      runs.execute(this::run);
    } catch (RejectedExecutionException stopped) {
      running.set(false); // the task stops
      return;
    }
    throwFailure(); // a run on the caller's thread has ended
  }

  private void run() {
    Map<String, String> previous = MDC.getCopyOfContextMap();
    if (mdc != null) {
      MDC.setContextMap(mdc);
    }
    try {
      runDue();
    } catch (RuntimeException | Error e) { // NOPMD: the next poll throws it, failing the task
      failed.set(e);
    } finally {
      running.set(false);
      if (previous != null) {
        MDC.setContextMap(previous);
      } else {
        MDC.clear();
      }
    }
  }

  /** The task stops: no more statements of a run going on (see {@link #stopping}). */
  void stop() {
    stopping = true;
  }

  private void throwFailure() {
    Throwable e = failed.getAndSet(null);
    if (e instanceof RuntimeException r) {
      throw r;
    }
    if (e instanceof Error error) {
      throw error;
    }
  }

  private void runDue() {
    long now = time.hiResClockMs();
    if (now >= nextBacklogMs && !stopping) {
      readBacklog(now);
      nextLagMs = time.hiResClockMs() + config.backlogMetricsInterval().toMillis();
    } else if (now >= nextLagMs && !stopping) {
      readLagBetweenCounts();
    }
    Optional<Duration> retention = config.retention();
    if (retention.isPresent() && now >= nextCleanupMs && !stopping) {
      nextCleanupMs = now + config.cleanupInterval().toMillis();
      long cleanupStartMs = time.hiResClockMs(); // after the backlog read, which is not its time
      if (cleanup(retention.get(), cleanupStartMs)) {
        // A run a second while its batches are quick (ten batches a second keep pace with ten
        // times cleanup.batch.size rows published a second), and at least as long a pause as the
        // run took: catching up never takes over task 0.
        long endMs = time.hiResClockMs();
        long ran = endMs - cleanupStartMs;
        nextCleanupMs = endMs + Math.max(CATCH_UP_PAUSE_MS - ran, ran);
      }
    }
  }

  /**
   * The backlog figures. Counting reads every row awaiting delivery or parked, so on a backlog of
   * millions it takes seconds, on tens of millions up to the statement timeout: the next count
   * waits ten times as long as this one took (when that is longer than the interval, and at most
   * ten intervals), and a count that fails for the database's reasons (a timeout, an outage) is
   * logged, not thrown, so that task 0 claims between counts (it claimed nothing while each poll
   * ran the count again and failed). The lag is then read alone (each key's first row awaiting
   * delivery), so that lag-ms stays current exactly when the backlog is largest, and so are the
   * parked rows (by their own index), which the parked-rows alert reads, and the rows another
   * connector holds; the other backlog figures keep their last values. An error that retrying
   * cannot fix still fails the task.
   */
  private void readBacklog(long startMs) {
    BacklogSnapshot snapshot = null;
    OutboxStoreException failure = null;
    try {
      snapshot = store.inspect(config.instanceKeys(), false);
    } catch (OutboxStoreException e) {
      failure = e;
    }
    if (stopping) {
      // No more statements on a pool about to close, nor figures no scrape will read.
      if (failure != null) {
        log.info(
            "Counting the backlog ended as the task stopped (reason={}, sqlState={})",
            failure.reasonCode(),
            failure.sqlState());
      }
      return;
    }
    if (snapshot != null) {
      lagAloneFailureReported = false; // the lag was read with the count
      readLeasedElsewhere(startMs);
      metrics.recordBacklog(snapshot, overdueAfter(scheduleNextRead(startMs)));
      return;
    }
    long countTook = time.hiResClockMs() - startMs;
    metrics.backlogReadFailed(); // lag-ms ages from the last reading unless read below
    if (!failure.isRetriable()) {
      scheduleNextRead(startMs);
      throw failure; // counted and reported by the poll that ran it, which fails the task
    }
    if (!SqlStates.QUERY_CANCELED.equals(failure.sqlState())) {
      // Seen by the database-errors alert, as retention's failures are; not a count that outgrew
      // the statement timeout on a healthy database (a large backlog), said in its own WARN.
      metrics.databaseErrors.incrementAndGet();
    }
    Duration lag = null;
    Map<MessageStatus, Long> parked = null;
    String notRead = "";
    try {
      lag = store.lag(config.instanceKeys());
      if (stopping) {
        return; // each read may wait out the connection timeout: none after a stop
      }
      parked = store.countParked(config.instanceKeys());
    } catch (OutboxStoreException e) {
      if (stopping) {
        return; // ended by the stop (the pool closing under it): no failure to count or alert on
      }
      if (!e.isRetriable()) {
        scheduleNextRead(startMs);
        throw e; // as a count's: a privilege revoked meanwhile is not the database being away
      }
      // The database is away: lag-ms keeps ageing.
      metrics.databaseErrors.incrementAndGet();
      notRead = " (reason=" + e.reasonCode() + ")";
    }
    if (lag != null && parked != null) {
      // The database answers: the rows another connector holds are counted still, where a failed
      // count froze the figure, and its alert with it. (It reads the same unsettled rows as the
      // count: where the count outgrew the statement timeout it may too, said once.)
      readLeasedElsewhere(startMs);
    }
    long spacing = scheduleNextRead(startMs); // by all three reads: each holds task 0's thread
    if (lag != null) {
      metrics.recordLag(lag, overdueAfter(spacing));
    }
    if (parked != null) {
      metrics.recordParked(parked);
    }
    log.warn(
        "Counting the backlog failed after {} ms (reason={}, sqlState={}); the lag {}; the parked"
            + " rows {}; next count in {} ms",
        countTook,
        failure.reasonCode(),
        failure.sqlState(),
        lag != null ? "read alone" : "not read" + notRead,
        parked != null ? "counted alone" : "not read" + notRead,
        spacing);
  }

  /**
   * Between counts that a large backlog spaced by up to ten intervals, the lag alone (each key's
   * first row awaiting delivery, one index probe) every interval: frozen at the last count's
   * reading, lag-ms lagged the truth by minutes exactly when the backlog was largest, and the lag
   * alert fired that much later. A read that fails for the database's reasons leaves lag-ms ageing
   * from its last reading and counts the error, a timeout included (an index probe should not take
   * long, unlike the count that spaced these reads), said at WARN once until a read succeeds; one
   * that retrying cannot fix fails the task, as the count's does.
   */
  private void readLagBetweenCounts() {
    long interval = config.backlogMetricsInterval().toMillis();
    nextLagMs = time.hiResClockMs() + interval; // a read that fails waits its interval too
    Duration lag;
    try {
      lag = store.lag(config.instanceKeys());
    } catch (OutboxStoreException e) {
      if (stopping) {
        return;
      }
      if (!e.isRetriable()) {
        throw e;
      }
      metrics.databaseErrors.incrementAndGet();
      metrics.backlogReadFailed(); // lag-ms ages from its last reading
      if (lagAloneFailureReported) {
        log.debug(
            "Reading the lag between backlog counts failed again (reason={}, sqlState={})",
            e.reasonCode(),
            e.sqlState());
      } else {
        lagAloneFailureReported = true;
        log.warn(
            "Reading the lag between backlog counts failed (reason={}, sqlState={}); lag-ms ages"
                + " from its last reading, read again every {} ms; not said again until a read"
                + " succeeds",
            e.reasonCode(),
            e.sqlState(),
            interval);
      }
      return;
    }
    lagAloneFailureReported = false;
    if (!stopping) {
      metrics.recordLag(lag, overdueAfter(interval));
    }
    nextLagMs = time.hiResClockMs() + interval;
  }

  /**
   * At least once, with the backlog: rows of the connector's keys in flight under live leases of
   * another connector's tasks. Two connectors on one instance key split its rows between them, each
   * sending its share with its own converters and topics; said once while it lasts, and in {@code
   * foreign-leased-rows}. A read that fails for the database's reasons leaves the figure as it was;
   * one that retrying cannot fix fails the task, as the count's own does.
   */
  private void readLeasedElsewhere(long startMs) {
    if (ownOwners == null || stopping) {
      return;
    }
    long leasedElsewhere;
    try {
      leasedElsewhere = store.countLeasedElsewhere(config.instanceKeys(), ownOwners);
    } catch (OutboxStoreException e) {
      if (!e.isRetriable()) {
        scheduleNextRead(startMs);
        throw e;
      }
      if (!SqlStates.QUERY_CANCELED.equals(e.sqlState())) {
        metrics.databaseErrors.incrementAndGet(); // as the count's: a large backlog is no error
      }
      if (leasedElsewhereFailureReported) {
        log.debug(
            "Counting rows leased by another connector failed again (reason={}, sqlState={})",
            e.reasonCode(),
            e.sqlState());
      } else {
        leasedElsewhereFailureReported = true;
        log.warn(
            "Counting rows leased by another connector failed (reason={}, sqlState={});"
                + " foreign-leased-rows keeps its last value; not said again until a count"
                + " succeeds",
            e.reasonCode(),
            e.sqlState());
      }
      return;
    }
    leasedElsewhereFailureReported = false;
    metrics.foreignLeasedRows.set(leasedElsewhere);
    if (leasedElsewhere == 0) {
      leasedElsewhereReported = false;
    } else if (!leasedElsewhereReported) {
      leasedElsewhereReported = true;
      log.warn(
          "{} rows of this connector's instance keys are in flight under live leases of another"
              + " connector's tasks: two connectors relay the same keys, each sending its share of"
              + " the rows with its own converters and topics; relay each key with one connector"
              + " (reason=LEASED_BY_ANOTHER_CONNECTOR)",
          leasedElsewhere);
    }
  }

  /**
   * When the next backlog read is due: an interval after this one, or ten times as long as this one
   * took where that is longer, at most ten intervals. Returns that spacing.
   */
  private long scheduleNextRead(long startMs) {
    long interval = config.backlogMetricsInterval().toMillis();
    long took = time.hiResClockMs() - startMs;
    long spacing = Math.min(Math.max(interval, 10 * took), 10 * interval);
    nextBacklogMs = time.hiResClockMs() + spacing;
    return spacing;
  }

  /**
   * When lag-ms counts a reading as overdue: an interval after the next was due, or after an idle
   * poll's longest pause (poll.interval.ms) where that is longer: a poll starts the read, and an
   * idle task 0 with a long poll interval is not held up.
   */
  private Duration overdueAfter(long spacing) {
    return Duration.ofMillis(
        Math.max(spacing, config.pollInterval().toMillis())
            + config.backlogMetricsInterval().toMillis());
  }

  /**
   * One run: up to {@link #MAX_BATCHES_PER_RUN} batches; true if rows older remain. A batch that
   * fails for the database's reasons (a timeout, an outage) ends the run, logged as retention's
   * failure with what the run deleted before it (counted, and the error in {@code
   * database-errors-total}), and the next run is an interval later: thrown, it was reported as a
   * failed claim and the rows deleted before it went uncounted. One that retrying cannot fix (a
   * privilege revoked) still fails the task, as a backlog read does.
   */
  private boolean cleanup(Duration retention, long startMs) {
    int total = 0;
    boolean behind = true;
    Instant cutoff;
    try {
      cutoff = store.now().minus(retention); // the database's clock, as published_at is
      for (int i = 0; i < MAX_BATCHES_PER_RUN && behind && !stopping; i++) {
        int deleted =
            store.deletePublished(config.instanceKeys(), cutoff, config.cleanupBatchSize());
        total += deleted;
        behind = deleted >= config.cleanupBatchSize();
      }
    } catch (OutboxStoreException e) {
      metrics.cleanedUp.addAndGet(total);
      if (stopping && e.isRetriable()) {
        // Its pool closing under it, or a timeout that came during the stop: no failure to alert.
        log.info(
            "Retention cleanup ended as the task stopped, after deleting {} rows (reason={},"
                + " sqlState={})",
            total,
            e.reasonCode(),
            e.sqlState());
        return false;
      }
      log.warn(
          "Retention cleanup failed after deleting {} rows (reason={}, sqlState={}){}; {}",
          total,
          e.reasonCode(),
          e.sqlState(),
          e.isLockWait()
              ? ": another session holds a lock on an entry of the published log or on the table"
                  + " (an open transaction), and each run stops at the oldest entries until it ends"
              : "",
          e.isRetriable()
              ? "next run in " + config.cleanupInterval().toMillis() + " ms"
              : "the task fails");
      if (!e.isRetriable()) {
        throw e; // counted and reported by the poll that ran it, which fails the task
      }
      metrics.databaseErrors.incrementAndGet(); // seen by the database-errors alert too
      return false;
    }
    if (total > 0) {
      metrics.cleanedUp.addAndGet(total);
      if (behind) {
        log.debug("Retention cleanup deleted {} rows and is behind; next run soon", total);
      } else {
        log.info("Retention cleanup deleted {} PUBLISHED rows published before {}", total, cutoff);
      }
    }
    if (behind && !stopping) {
      metrics.retentionBehind(startMs);
      warnIfLongBehind();
    } else if (!behind) {
      if (retentionBehindWarnedMs >= 0) {
        log.info(
            "Retention cleanup caught up after {} s behind (reason=RETENTION_BEHIND)",
            metrics.retentionBehindMs() / 1000);
      }
      retentionBehindWarnedMs = -1;
      metrics.retentionCaughtUp();
    }
    return behind;
  }

  /**
   * Retention behind for long (every run ended on full batches: the published log, or the table's
   * rows published before schema version 9, grows faster than it deletes): said at WARN, again
   * every {@link #RETENTION_BEHIND_WARN_MS} while it lasts, and shown by retention-behind-ms. The
   * rows are kept, not lost; the table and its indexes grow.
   */
  private void warnIfLongBehind() {
    long behindMs = metrics.retentionBehindMs();
    long now = time.hiResClockMs();
    if (behindMs < RETENTION_BEHIND_WARN_MS
        || retentionBehindWarnedMs >= 0
            && now - retentionBehindWarnedMs < RETENTION_BEHIND_WARN_MS) {
      return;
    }
    retentionBehindWarnedMs = now;
    log.warn(
        "Retention cleanup has been behind for {} min: every run ended on full batches, and"
            + " published rows are deleted more slowly than they are published, so the published"
            + " log grows (reason=RETENTION_BEHIND, cleaned_up_total={}); raise cleanup.batch.size,"
            + " or look at how long its batches take (pg_stat_statements)",
        behindMs / 60_000,
        metrics.cleanedUp.get());
  }
}
