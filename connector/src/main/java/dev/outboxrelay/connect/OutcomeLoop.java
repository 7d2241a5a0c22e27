package dev.outboxrelay.connect;

import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.writer.Printable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * The task's database thread for everything after a claim: it writes queued outcomes in batches (so
 * {@code commitRecord}, on the producer's I/O thread, never waits for the database) and renews
 * leases between them. Outcomes are never dropped: a failed write is retried until it applies, is
 * reported lost, or the task is abandoned; an outcome that can no longer be written is counted as a
 * late acknowledgement. Whatever ends the thread, its exit hook runs exactly once.
 */
final class OutcomeLoop {
  private static final Logger log = LoggerFactory.getLogger(OutcomeLoop.class);
  private static final int MAX_BATCH = 1000;
  private static final Duration ERROR_BACKOFF_MIN = Duration.ofMillis(100);
  private static final Duration ERROR_BACKOFF_MAX = Duration.ofSeconds(5);
  private static final Duration BACKOFF_SLICE = Duration.ofMillis(100);

  /** Bounds of the wait between two tries of the outcomes set aside for a row lock. */
  private static final long SET_ASIDE_RETRY_MIN_MS = 500;

  private static final long SET_ASIDE_RETRY_MAX_MS = 10_000;

  private final long errorBackoffMin;
  private final long errorBackoffMax;
  private final OutcomeWriter writer;
  private final LeaseRenewer renewer;
  private final InFlightLedger ledger;
  private final RelayMetrics metrics;
  private final StoreHealth health;
  private final Time time;
  private final FailureRun writeFailures; // the outcome thread's
  private final WakeSignal pollWake;
  private final Runnable onExit;
  private final BlockingQueue<PendingOutcome> queue = new LinkedBlockingQueue<>();
  private final Object admission = new Object();
  private final Thread thread;
  private final Map<String, String> mdc;
  private volatile boolean settledAtStop;

  private boolean accepting = true; // guarded by admission

  /** Taken from the queue and not yet written: counted late if the thread dies meanwhile. */
  private List<PendingOutcome> inHand = List.of();

  /**
   * Outcomes submitted and not yet written or settled, queued or in hand; stop() waits for them.
   */
  private final AtomicInteger pendingWrites = new AtomicInteger();

  /**
   * Message ids of outcomes in hand whose leases a renewal between their write's retries found
   * gone: taken over, or settled by an earlier attempt whose reply was lost. The retried write
   * decides; one never retried again (abandoned at a stop) is reported as a possible lost claim.
   */
  private final Set<String> goneWhileInHand = new HashSet<>();

  /**
   * Outcomes whose rows another session held locked past the lock wait of their write (an
   * operator's open transaction): neither written nor settled, still pending, tried again alone
   * from time to time while the loop writes the others. Loop thread only.
   */
  private final List<PendingOutcome> setAside = new ArrayList<>();

  /** Message ids of {@link #setAside} already logged: each is logged once while it stays. */
  private final Set<String> setAsideReported = new HashSet<>();

  /** Of the outcomes a write set aside, those whose rows it found locked (the others untried). */
  private final Set<String> foundLocked = new HashSet<>();

  /** After the acknowledgements ended: what was set aside was tried once more. */
  private boolean setAsideTriedAfterAcksEnded;

  private long setAsideRetryAtMs;
  private int setAsideRounds;
  private boolean setAsideTriedAtFlush;

  /**
   * How many outcomes are set aside, once the stop's flush has tried them (0 before): the flush
   * waits no longer for those, whose locks outlast it as far as anyone can tell (it held every stop
   * for its whole timeout). Set after the count of pending writes, so that it never counts one more
   * than are aside.
   */
  private volatile int asideAfterFlushTry;

  private volatile long closeDeadlineMs = Long.MAX_VALUE;

  /** The stop's flush ends then (monotonic clock); MAX_VALUE until stop() is called. */
  private volatile long flushDeadlineMs = Long.MAX_VALUE;

  /**
   * Why no acknowledgement is to be waited for any more, as its reason code ({@link
   * #TASK_SUCCEEDED}, {@link #PRODUCER_CLOSED}); null while one may still come. Set once, for good
   * (the thread that stopped the task may go on to close another task, and its stack would then say
   * "not yet").
   */
  private volatile String acknowledgementsEndedBy;

  /** After stop: true once Connect has closed the task's producer; null when it cannot tell. */
  private volatile BooleanSupplier producerClosed;

  /** Logged as reason=TASK_SUCCEEDED: Connect started a later instance of the task here. */
  static final String TASK_SUCCEEDED = "TASK_SUCCEEDED";

  /** Logged as reason=PRODUCER_CLOSED: Connect's close of the task closed its producer. */
  static final String PRODUCER_CLOSED = "PRODUCER_CLOSED";

  /**
   * Ends the loop's wait for outcomes: a submit, or stop(). The thread is never interrupted: an
   * interrupt that landed in a write (a wait for a pooled connection ends with an exception at
   * once) failed it, a spurious database error and a retried write at every stop under load.
   */
  private final WakeSignal outcomeArrived = new WakeSignal();

  /**
   * Ends a backoff between failed writes early: stop(), whose deadline the loop re-checks, and the
   * end of the acknowledgements.
   */
  private final WakeSignal stopping = new WakeSignal();

  private int consecutiveErrors;

  /** In a write's error backoff ({@link #backoff}); for tests. */
  private volatile boolean inBackoff;

  /**
   * @param onExit runs once on this thread as its last act, however the thread ends
   */
  OutcomeLoop(
      OutcomeWriter writer,
      LeaseRenewer renewer,
      InFlightLedger ledger,
      RelayMetrics metrics,
      StoreHealth health,
      Time time,
      WakeSignal pollWake,
      Runnable onExit,
      String threadName) {
    this(
        writer,
        renewer,
        ledger,
        metrics,
        health,
        time,
        pollWake,
        onExit,
        threadName,
        ERROR_BACKOFF_MIN,
        ERROR_BACKOFF_MAX);
  }

  /** With the bounds of the backoff after a failed write (tests: one longer than any test). */
  OutcomeLoop(
      OutcomeWriter writer,
      LeaseRenewer renewer,
      InFlightLedger ledger,
      RelayMetrics metrics,
      StoreHealth health,
      Time time,
      WakeSignal pollWake,
      Runnable onExit,
      String threadName,
      Duration errorBackoffMin,
      Duration errorBackoffMax) {
    this.errorBackoffMin = errorBackoffMin.toMillis();
    this.errorBackoffMax = errorBackoffMax.toMillis();
    this.writer = writer;
    this.renewer = renewer;
    this.ledger = ledger;
    this.metrics = metrics;
    this.health = health;
    this.time = time;
    this.writeFailures = new FailureRun(time);
    this.pollWake = pollWake;
    this.onExit = onExit;
    this.mdc = MDC.getCopyOfContextMap();
    this.thread = new Thread(this::run, threadName);
    this.thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  boolean isAlive() {
    return thread.isAlive();
  }

  /** For tests: whether the loop waits in a write's error backoff. */
  boolean inBackoff() {
    return inBackoff;
  }

  /**
   * Whether the loop ended as a stop ends it, having settled what Kafka never acknowledged; false
   * while it runs and after it died (the task's stop settles then, {@link TaskRuntime}).
   */
  boolean settledAtStop() {
    return settledAtStop;
  }

  /**
   * Queues an outcome; never blocks. Returns false once the loop no longer writes: the caller
   * reports it as a late acknowledgement (at least once, the stop then ends the row's lease, and it
   * is reclaimed as an abandoned row; exactly once, the next instance's recovery settles it).
   * Admission and the loop's closing are atomic: an outcome is either refused here or written or
   * counted by the loop, never lost in between.
   */
  boolean submit(PendingOutcome outcome) {
    synchronized (admission) {
      if (!accepting) {
        return false;
      }
      pendingWrites.incrementAndGet();
      queue.add(outcome);
    }
    outcomeArrived.wake();
    return true;
  }

  /**
   * Waits up to {@code flushTimeout} for queued outcomes, and those taken from the queue, to be
   * written (those set aside for a row lock: until the flush has tried them once), then keeps
   * accepting late acknowledgements for the grace period (Connect closes the producer after stop,
   * and callbacks may still arrive); the loop ends when every handed record is resolved or grace
   * ends. Waiting for the outcomes in hand too keeps a write that takes its usual milliseconds from
   * landing after stop() returned, when the task's successor may already have settled the rows
   * (exactly once, its recovery records them PUBLISHED, and the late write would report a false
   * lost claim). A write still failing when the flush timeout ends goes on retrying through the
   * grace, where that can still happen. Both deadlines are the monotonic clock's: on the wall
   * clock, one stepped back meanwhile (an NTP correction) stretched them by the step, and the stop
   * outlasted Connect's graceful shutdown timeout.
   */
  void stop(Duration flushTimeout, Duration lateAckGrace) {
    long flushDeadline = time.hiResClockMs() + flushTimeout.toMillis();
    flushDeadlineMs = flushDeadline;
    stopping.wake(); // a write in its error backoff is retried at once, and within the flush
    while (pendingWrites.get() > asideAfterFlushTry
        && time.hiResClockMs() < flushDeadline
        && thread.isAlive()) {
      pollWake.await(Duration.ofMillis(10));
    }
    closeDeadlineMs = time.hiResClockMs() + lateAckGrace.toMillis();
    outcomeArrived.wake(); // the loop re-checks whether to close at once
    stopping.wake();
  }

  /**
   * At least once, after {@link #stop}: no acknowledgement is to be waited for any more (Connect
   * started a later instance of the task in this worker, so this one's producer is closed, or being
   * closed at once: one from its last network round may still come, and is counted late). The grace
   * ends once what is queued is written: the rows still unresolved are settled at once.
   */
  void acknowledgementsEnded() {
    acknowledgementsEndedBy = TASK_SUCCEEDED;
    outcomeArrived.wake();
    stopping.wake(); // a write in its backoff is retried (or, refused for good, abandoned) now
  }

  /**
   * At least once, with {@link #stop}: {@code closed} tells once Connect has closed the task's
   * producer ({@link ConnectTaskClose}); the grace then ends as for {@link #acknowledgementsEnded}.
   */
  void endGraceOnceProducerClosed(BooleanSupplier closed) {
    producerClosed = closed;
  }

  private void run() {
    if (mdc != null) {
      MDC.setContextMap(mdc);
    }
    try {
      loop();
    } catch (Throwable t) { // NOPMD: any death must fail the task, not vanish with the thread
      health.threadDied("outcome writer", t);
      // The class only: a message may carry row data or connection details.
      log.error(
          "Outcome writer thread died (reason=BACKGROUND_THREAD_DIED, error={}); the task fails",
          t.getClass().getName());
    } finally {
      // Each step in a finally of its own: an Error in one (an OutOfMemoryError while logging)
      // must not keep admission open to a queue nobody reads, nor skip onExit, which closes the
      // store's pool when the task has stopped too.
      try {
        try {
          reportUnwritten(inHand);
          inHand.forEach(this::reportIfGone);
          reportUnwritten(setAside);
        } finally {
          closeAdmission();
        }
        if (closeDeadlineMs != Long.MAX_VALUE) {
          writer.settleUnresolvedAtStop(); // a stop, not a death: what Kafka never acknowledged
          settledAtStop = true;
        }
      } finally {
        pollWake.wake();
        onExit.run();
      }
    }
  }

  private void loop() {
    while (true) {
      boolean closing = closeDeadlineMs != Long.MAX_VALUE;
      if (closing && (ledger.isEmpty() && queue.isEmpty() || pastCloseDeadline())) {
        return;
      }
      // Why first, then the queue: the acknowledgements of a producer that closed were all
      // submitted before its close returned.
      String endedBy = closing ? acknowledgementsEndedBy() : null;
      if (endedBy != null
          && queue.isEmpty()
          && !setAside.isEmpty()
          && !setAsideTriedAfterAcksEnded) {
        // Tried once more, not through the grace: waiting for a lock to go, the loop held every
        // other unresolved row's lease for the grace, and its successor waited for them.
        setAsideTriedAfterAcksEnded = true;
        write(takeSetAside(), true);
        continue;
      }
      if (endedBy != null && queue.isEmpty()) {
        log.info(
            "{}: the late-acknowledgement grace for the {} records still unresolved ends now"
                + " (reason={})",
            endedBy.equals(TASK_SUCCEEDED)
                ? "A later instance of this task started in this worker, so its producer is closed"
                : "Connect closed this task's producer",
            ledger.size(),
            endedBy);
        return;
      }
      List<PendingOutcome> batch = nextBatch();
      if (!batch.isEmpty()) {
        write(batch, false);
      }
      if (setAsideDue()) {
        if (!batch.isEmpty() && !pastCloseDeadline()) {
          // Two statements back to back, each up to the statement timeout: the leases due
          // meanwhile are renewed between them, not only after both.
          renewer.renewIfDue();
        }
        write(takeSetAside(), true);
      }
      if (!pastCloseDeadline()) { // past it, abandoned outcomes were reported, and nothing renews
        renewer.renewIfDue();
      }
    }
  }

  /** {@link #acknowledgementsEndedBy}, asking whether Connect has closed the producer yet. */
  private String acknowledgementsEndedBy() {
    BooleanSupplier closed = producerClosed;
    if (acknowledgementsEndedBy == null && closed != null && closed.getAsBoolean()) {
      acknowledgementsEndedBy = PRODUCER_CLOSED;
    }
    return acknowledgementsEndedBy;
  }

  /**
   * Closing, with no acknowledgement left to come (the grace ended early), a write the database
   * refuses for good (a privilege revoked, a column dropped, a value refused: the task fails for
   * it) is not retried for the rest of the grace: retrying renewed the rows' leases, and their
   * aggregates waited, for the whole of it. The stop then ends their leases. Anything a retry may
   * heal (an outage, a password being rotated, a cached plan a migration invalidated, an error of
   * no known class) is still retried until the grace ends: written then, the rows are not sent
   * again.
   */
  private boolean refusedWithNothingLeftToWaitFor(OutboxStoreException e) {
    return REFUSED_FOR_GOOD.contains(e.kind())
        && closeDeadlineMs != Long.MAX_VALUE
        && acknowledgementsEndedBy() != null;
  }

  private static final Set<OutboxStoreException.Kind> REFUSED_FOR_GOOD =
      EnumSet.of(
          OutboxStoreException.Kind.PERMISSION,
          OutboxStoreException.Kind.SCHEMA,
          OutboxStoreException.Kind.INVALID_DATA);

  private boolean pastCloseDeadline() {
    return time.hiResClockMs() >= closeDeadlineMs;
  }

  /** Stops admission; what is still queued can no longer be written and is reported late. */
  private void closeAdmission() {
    List<PendingOutcome> unwritten = new ArrayList<>();
    synchronized (admission) {
      accepting = false;
      queue.drainTo(unwritten);
    }
    reportUnwritten(unwritten);
  }

  private void reportUnwritten(List<PendingOutcome> unwritten) {
    for (PendingOutcome o : unwritten) {
      metrics.lateAcks.incrementAndGet();
      log.warn(
          "Outcome not written before the task stopped: message_id={} (reason=LATE_ACK; {})",
          Printable.escape(o.messageId()),
          whatComesOfTheRow(o));
    }
  }

  /**
   * What comes of the row of an outcome never written. At least once, Kafka has the record of a
   * published row (or the dead-letter copy of a failed one) and the stop ends its lease: a later
   * claim sends it again, the duplicate it is said to be; exactly once the next instance's recovery
   * finds it in the committed offsets.
   */
  private String whatComesOfTheRow(PendingOutcome o) {
    boolean inKafka =
        o instanceof PendingOutcome.Published
            || o instanceof PendingOutcome.Failed failed && failed.deadLettered();
    return inKafka && !writer.exactlyOnce()
        ? "Kafka has its record, and a later claim sends the row again: a duplicate"
        : "a later claim or the next instance's recovery settles the row";
  }

  private List<PendingOutcome> nextBatch() {
    List<PendingOutcome> batch = new ArrayList<>();
    queue.drainTo(batch, MAX_BATCH);
    if (batch.isEmpty()) {
      // Woken by a submit or by stop(); a wake-up left from an outcome already drained ends the
      // wait at once, and the loop comes back here.
      outcomeArrived.await(Duration.ofMillis(Math.max(1, Math.min(renewer.millisUntilDue(), 200))));
      queue.drainTo(batch, MAX_BATCH);
    }
    return batch;
  }

  /**
   * Writes {@code batch} ({@code setAsideBefore}: outcomes set aside before, tried again), and
   * settles the count of pending writes: those set aside (again) stay pending.
   */
  private void write(List<PendingOutcome> batch, boolean setAsideBefore) {
    int setAsideAlready = setAside.size();
    writeUntilDone(batch, setAsideBefore);
    inHand = List.of();
    int newlySetAside = setAside.size() - setAsideAlready;
    pendingWrites.addAndGet(-(batch.size() - newlySetAside));
    asideAfterFlushTry = setAsideTriedAtFlush ? setAside.size() : 0;
    reportFoundLocked();
    setAsideReported.retainAll(messageIdsOf(setAside)); // set aside again later: logged again
    if (setAside.isEmpty()) {
      setAsideRounds = 0;
    } else if (setAsideBefore || setAsideAlready == 0) { // a round ended, or the first began
      long wait =
          Math.min(
              SET_ASIDE_RETRY_MAX_MS, SET_ASIDE_RETRY_MIN_MS << Math.min(setAsideRounds++, 10));
      setAsideRetryAtMs = time.hiResClockMs() + wait;
    }
    if (setAsideBefore && newlySetAside < batch.size()) {
      log.info(
          "Wrote {} outcomes set aside before for their rows' locks; {} still wait"
              + " (reason=ROW_LOCKED)",
          batch.size() - newlySetAside,
          newlySetAside);
    }
  }

  /** Whether to try the outcomes set aside again now: their wait is over, or a stop flushes. */
  private boolean setAsideDue() {
    if (setAside.isEmpty()) {
      return false;
    }
    if (flushDeadlineMs != Long.MAX_VALUE && !setAsideTriedAtFlush) {
      setAsideTriedAtFlush = true; // once at once; then at their own pace, through the grace
      return true;
    }
    return time.hiResClockMs() >= setAsideRetryAtMs && !pastCloseDeadline();
  }

  private List<PendingOutcome> takeSetAside() {
    List<PendingOutcome> batch = new ArrayList<>(setAside);
    inHand = batch; // before they leave setAside: should the thread die, each is reported once
    asideAfterFlushTry = 0; // in hand now: the flush waits for their write
    setAside.clear();
    return batch;
  }

  /**
   * Each outcome the last write set aside because it found its row locked, logged once for as long
   * as it stays aside (those set aside behind it, untried, are not said to be locked).
   */
  private void reportFoundLocked() {
    for (String messageId : foundLocked) {
      if (setAsideReported.add(messageId)) {
        log.warn(
            "Outcome set aside: another session holds its row's lock (reason=ROW_LOCKED):"
                + " message_id={} instance_key={}; the task writes its other outcomes, and tries"
                + " this one again alone until the lock is gone",
            Printable.escape(messageId),
            Printable.escape(
                ledger.get(messageId).map(InFlightLedger.Entry::instanceKey).orElse(null)));
      }
    }
    foundLocked.clear();
  }

  /**
   * Writes the batch, retrying transient failures with backoff; never drops an outcome. Outcomes
   * whose rows another session holds locked are set aside ({@link #setAside}).
   */
  private void writeUntilDone(List<PendingOutcome> batch, boolean skipLocked) {
    List<PendingOutcome> remaining = new ArrayList<>(batch);
    inHand = remaining; // the writer removes each outcome once written
    goneWhileInHand.clear();
    boolean retried = false;
    while (!remaining.isEmpty()) {
      try {
        writer.write(
            remaining,
            retried,
            () -> renewBetweenWrites(remaining),
            skipLocked,
            setAside,
            foundLocked);
        consecutiveErrors = 0;
        int failed = writeFailures.end();
        if (failed > 0) {
          log.info("Outcome writes succeed again after {} failed attempts", failed);
        }
      } catch (OutboxStoreException e) {
        retried = true;
        health.databaseError(e);
        consecutiveErrors++;
        if (refusedWithNothingLeftToWaitFor(e)) {
          log.warn(
              "Writing {} outcomes refused (reason={}, sqlState={}{}), and no acknowledgement can"
                  + " come any more: not retried; the stop ends their rows' leases",
              remaining.size(),
              e.reasonCode(),
              e.sqlState(),
              ofMessage(e));
          abandon(remaining, e);
          return;
        }
        writeFailures.failed(
            e,
            log,
            "Writing {} outcomes failed (reason={}, sqlState={}{}); retrying",
            remaining.size(),
            e.reasonCode(),
            e.sqlState(),
            ofMessage(e));
        if (pastCloseDeadline()) {
          abandon(remaining, e);
          return;
        }
        // A write that keeps failing (behind a lock, say) must not let the held leases expire.
        goneWhileInHand.addAll(renewer.renewIfDue(messageIdsOf(remaining)));
        backoff();
        if (pastCloseDeadline()) { // the backoff ended at it: no write past the grace
          abandon(remaining, e);
          return;
        }
      }
    }
  }

  /**
   * Between two outcome writes of one batch, a renewal come due: the leases of the rows still
   * waiting for Kafka must outlast a batch of hundreds of single-row writes. Those in hand are
   * undecided, as between retries.
   */
  private void renewBetweenWrites(List<PendingOutcome> remaining) {
    if (renewer.millisUntilDue() == 0 && !pastCloseDeadline()) {
      goneWhileInHand.addAll(renewer.renewIfDue(messageIdsOf(remaining)));
    }
  }

  private static Set<String> messageIdsOf(List<PendingOutcome> outcomes) {
    Set<String> ids = new HashSet<>();
    for (PendingOutcome o : outcomes) {
      ids.add(o.messageId());
    }
    return ids;
  }

  /** ", at message_id=..." when the failure was one row's write: the row the database refused. */
  private static String ofMessage(OutboxStoreException e) {
    return e.messageId() == null ? "" : ", at message_id=" + Printable.escape(e.messageId());
  }

  /**
   * The task is gone and the database still fails the writes: the leases expire, the rows come
   * back. {@code failure}, the last write's, tells an unavailable database from one that answered
   * and refused.
   */
  private void abandon(List<PendingOutcome> unwritten, OutboxStoreException failure) {
    String reason =
        REFUSED_FOR_GOOD.contains(failure.kind())
            ? "OUTCOME_REFUSED_AT_STOP"
            : "DATABASE_UNAVAILABLE_AT_STOP"; // unreachable, or no telling it answered
    // A publish whose row a renewal found gone may have been applied by an attempt whose reply was
    // lost (a failover): one read of the published log tells, so that it is no false lost claim.
    Set<String> published =
        writer.publishedByAnEarlierAttempt(
            unwritten.stream().filter(o -> goneWhileInHand.contains(o.messageId())).toList());
    for (PendingOutcome o : unwritten) {
      if (published.contains(o.messageId()) && goneWhileInHand.remove(o.messageId())) {
        ledger.resolve(o.messageId(), o.lease().token()); // settled: no lease for the stop to end
        metrics.published.incrementAndGet();
        log.info(
            "Outcome found published by an earlier attempt of its write, whose reply was lost:"
                + " message_id={} (reason=WRITE_REPLY_LOST)",
            Printable.escape(o.messageId()));
        continue;
      }
      metrics.lateAcks.incrementAndGet();
      log.warn(
          "Outcome abandoned at stop: message_id={} (reason={}, error={}; {})",
          Printable.escape(o.messageId()),
          reason,
          failure.reasonCode(),
          whatComesOfTheRow(o));
      reportIfGone(o);
    }
  }

  /**
   * An outcome in hand, never to be written, whose lease a renewal found gone: a lost claim unless
   * an earlier attempt of the write applied it, which nothing can tell now. Reported as one, the
   * safe side of the zombie signal.
   */
  private void reportIfGone(PendingOutcome o) {
    if (!goneWhileInHand.remove(o.messageId())) {
      return;
    }
    String instanceKey =
        ledger.get(o.messageId()).map(InFlightLedger.Entry::instanceKey).orElse("(unknown)");
    // Settled as lost: the stop must not report its lease not held a second time.
    ledger.resolve(o.messageId(), o.lease().token());
    metrics.claimLost.incrementAndGet();
    log.warn(
        "Claim lost: outcome not written for message_id={} instance_key={} and lease renewal"
            + " matched no row (reason=LEASE_TAKEN_OVER; another owner holds or resolved the row,"
            + " a duplicate in Kafka is possible, unless an earlier attempt of the write applied it"
            + " and its reply was lost)",
        Printable.escape(o.messageId()),
        Printable.escape(instanceKey));
  }

  private void backoff() {
    long delay = Math.min(errorBackoffMax, errorBackoffMin << Math.min(consecutiveErrors, 10));
    delay = (long) (delay * (0.5 + ThreadLocalRandom.current().nextDouble() / 2));
    // Not past the close deadline: stop()'s wake-up is spent by the first backoff after it, and a
    // later one would hold the stop's settlement and the pool's close past the grace.
    if (closeDeadlineMs != Long.MAX_VALUE) { // (a monotonic clock may be negative)
      delay = Math.max(0, Math.min(delay, closeDeadlineMs - time.hiResClockMs()));
    } else if (flushDeadlineMs != Long.MAX_VALUE) {
      // Flushing: retried again by the flush's end at the latest (a backoff of seconds spent the
      // whole flush without a write); not sooner than the shortest backoff once it has passed.
      delay = Math.min(delay, Math.max(errorBackoffMin, flushDeadlineMs - time.hiResClockMs()));
    }
    // stop() and acknowledgementsEnded() end it early, and the caller re-checks. In slices: the
    // close deadline is the task clock's, and a clock moved past it (an injected one) ends the wait
    // as the time passing would; and Connect's close of the producer, which nothing signals, ends
    // the acknowledgements as a successor's start does (a write refused for good is abandoned).
    boolean ackable = closeDeadlineMs == Long.MAX_VALUE || acknowledgementsEndedBy() == null;
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delay);
    inBackoff = true;
    try {
      for (long left = end - System.nanoTime();
          left > 0 && !pastCloseDeadline();
          left = end - System.nanoTime()) {
        if (stopping.await(Duration.ofNanos(Math.min(left, BACKOFF_SLICE.toNanos())))
            || ackable && closeDeadlineMs != Long.MAX_VALUE && acknowledgementsEndedBy() != null) {
          return;
        }
      }
    } finally {
      inBackoff = false;
    }
  }
}
