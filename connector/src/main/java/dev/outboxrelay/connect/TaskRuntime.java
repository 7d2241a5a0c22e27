package dev.outboxrelay.connect;

import dev.outboxrelay.mapping.RecordMapper;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.HeldLease;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.ReasonCodes;
import dev.outboxrelay.writer.Printable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Owns the task's store and its background threads: starts them, tells the task thread when one
 * failed, and stops them. The store is closed exactly once, when both the task has asked to stop
 * and the outcome loop has ended (it may still write late acknowledgements after {@code stop()}),
 * in whichever order those two happen.
 */
final class TaskRuntime {
  private static final Logger log = LoggerFactory.getLogger(TaskRuntime.class);

  private final OutboxStore store;
  private final InFlightLedger ledger = new InFlightLedger();
  private final WakeSignal wake;
  private final StoreHealth health;
  private final LeaseRenewer renewer;
  private final OutcomeLoop loop;
  private final OutcomeWriter writer;
  private final RelayMetrics metrics;
  private final AtomicInteger closeParties = new AtomicInteger(2);
  private final AtomicBoolean stopRequested = new AtomicBoolean();
  private final ClaimLoop claims;
  private final RecordHandoff handoff;
  private final ExactlyOnceState exactlyOnce;
  private final DeadLetterCopies deadLetterCopies;
  private volatile NotificationListener listener;
  private Maintenance maintenance;

  /** Task 0's: where its maintenance runs; null on the other tasks. */
  private volatile ExecutorService maintenanceThread;

  /** The longest the close waits for a maintenance run, whatever statement.timeout.ms says. */
  private static final Duration MAINTENANCE_RUN_LIMIT = Duration.ofSeconds(60);

  /**
   * How long the close waits for a maintenance run: its statement, once it has a connection (a run
   * stops after it), at most {@link #MAINTENANCE_RUN_LIMIT}.
   */
  private volatile Duration maintenanceRunLimit = Duration.ZERO;

  private boolean started;
  private final String threadSuffix;

  /** How long a stop waits for its database question's answer ({@link #askAtStop}). */
  private volatile Duration stopQuestionWait = Duration.ofSeconds(1);

  /** The stop's database question, once asked. */
  private volatile Thread stopQuestion;

  /** How long the close waits for the stop's question ({@link #awaitStopQuestion}). */
  private volatile Duration stopQuestionLimit = MAINTENANCE_RUN_LIMIT;

  /**
   * The starting thread's logging context (Connect's connector and task, the instance keys): the
   * closer thread's lines, the stop's summary among them, must say whose they are.
   */
  private final Map<String, String> mdc = MDC.getCopyOfContextMap();

  private TaskSuccession.Instance succession;

  /**
   * Opens the store and starts the task's threads: the outcome loop, and the LISTEN thread when
   * notifications are on. If anything fails half way, what was started is stopped and the store
   * closed before the failure propagates.
   */
  static TaskRuntime start(
      TaskConfig config,
      StoreProvider provider,
      RelayMetrics metrics,
      Time time,
      Supplier<OffsetStorageReader> offsets) {
    // First: the previous instance of this task in this worker settles its unresolved rows now.
    TaskSuccession.Instance succession = TaskSuccession.started(config.identity());
    String suffix = config.identity().threadSuffix();
    OutboxStore store = provider.open(config.connector(), "outbox-relay-" + suffix);
    TaskRuntime runtime;
    try {
      runtime = new TaskRuntime(store, metrics, config, time, suffix, offsets);
    } catch (RuntimeException | Error e) {
      store.close(); // the pool and its connections, opened for a runtime that never was
      throw e;
    }
    runtime.succession = succession;
    try {
      runtime.loop.start();
      runtime.started = true; // from now on the loop's end is the second party to the close
      var notifications = provider.notificationConnections(config.connector());
      if (config.connector().notifyEnabled() && notifications != null) {
        runtime.listener =
            new NotificationListener(
                notifications,
                config.connector().table(),
                config.connector().instanceKeys(),
                runtime.wake,
                () -> !runtime.ledger.isFull(config.settings()),
                "outbox-relay-listener-" + suffix);
        runtime.listener.start();
      }
      TaskSettings settings = config.settings();
      runtime.stopQuestionLimit =
          min(
              config.connector().statementTimeout().plus(config.connector().connectionTimeout()),
              MAINTENANCE_RUN_LIMIT);
      boolean first = config.identity().isFirst();
      // A thread of its own needs a connection of its own beside the claims' and the outcome
      // loop's: a pool of 2 keeps maintenance on the task thread, in poll(), as it was.
      // Exactly once the prefetch thread claims too: a fourth.
      if (first && config.connector().poolSize() >= (settings.exactlyOnce() ? 4 : 3)) {
        runtime.maintenanceRunLimit =
            min(
                config.connector().statementTimeout().plus(config.connector().connectionTimeout()),
                MAINTENANCE_RUN_LIMIT);
        runtime.maintenanceThread =
            Executors.newSingleThreadExecutor(
                r -> {
                  Thread t = new Thread(r, "outbox-relay-maintenance-" + suffix);
                  t.setDaemon(true);
                  return t;
                });
      }
      runtime.maintenance =
          new Maintenance(
              store,
              config.connector(),
              metrics,
              time,
              first,
              // Exactly once, each task's recovery counts them in its own buckets.
              settings.exactlyOnce()
                  ? null
                  : LeaseOwners.connectorOwners(settings.claimRequest().owner()),
              runtime.maintenanceThread != null ? runtime.maintenanceThread : Runnable::run);
      return runtime;
    } catch (RuntimeException | Error e) {
      runtime.stop(Duration.ZERO, Duration.ZERO);
      throw e;
    }
  }

  private TaskRuntime(
      OutboxStore store,
      RelayMetrics metrics,
      TaskConfig config,
      Time time,
      String threadSuffix,
      Supplier<OffsetStorageReader> offsets) {
    TaskSettings settings = config.settings();
    this.exactlyOnce =
        settings.exactlyOnce()
            ? new ExactlyOnceState(store, settings, offsets, metrics, time)
            : null;
    this.store = store;
    this.metrics = metrics;
    metrics.readInFlightFrom(ledger::size, ledger::bytes);
    this.wake = new WakeSignal();
    this.health = new StoreHealth(metrics, time);
    this.deadLetterCopies =
        settings.exactlyOnce()
            ? new DeadLetterCopies(
                store, health, metrics, time, settings.maxInFlight() + settings.batchSize())
            : null;
    this.renewer = new LeaseRenewer(store, ledger, metrics, settings, time, health, wake);
    this.claims =
        new ClaimLoop(store, settings, ledger, renewer, health, metrics, time, exactlyOnce);
    this.writer =
        new OutcomeWriter(store, ledger, metrics, settings, time, wake, claims::giveBackAtStop);
    this.loop =
        new OutcomeLoop(
            writer,
            renewer,
            ledger,
            metrics,
            health,
            time,
            wake,
            this::closeWhenBothDone,
            "outbox-relay-outcomes-" + threadSuffix);
    this.threadSuffix = threadSuffix;
    this.handoff =
        new RecordHandoff(
            new RecordMapper(config.mapping()),
            ledger,
            this::submit,
            metrics,
            settings.owner(),
            exactlyOnce,
            store);
  }

  /** The task's exactly-once state, or null in at-least-once mode. */
  ExactlyOnceState exactlyOnce() {
    return exactlyOnce;
  }

  /** Exactly once, the positions of committed dead-letter records to record; else null. */
  DeadLetterCopies deadLetterCopies() {
    return deadLetterCopies;
  }

  ClaimLoop claims() {
    return claims;
  }

  RecordHandoff handoff() {
    return handoff;
  }

  Maintenance maintenance() {
    return maintenance;
  }

  /**
   * Exactly once: Connect settled a parked row's dead-letter record ({@link
   * RecordHandoff#parkedRecordSettled}). Wakes {@code poll()} where that made room for a claim or
   * emptied the ledger, as the outcome writer does for the rows it resolves: a poll that paused
   * after a claim the full ledger held back waited out its pause (up to poll.interval.ms).
   */
  void parkedRecordSettled(SourceRecord record, TaskSettings settings) {
    boolean fullBefore = ledger.isFull(settings);
    handoff.parkedRecordSettled(record);
    if (InFlightLedger.freesPoll(fullBefore, ledger.isFull(settings), ledger.isEmpty())) {
      wake.wake();
    }
  }

  /** Woken by notifications, resolved outcomes and stop; {@code poll()} waits on it. */
  WakeSignal wake() {
    return wake;
  }

  StoreHealth health() {
    return health;
  }

  LeaseRenewer renewer() {
    return renewer;
  }

  /** Releases claims never handed to Connect (made while the task was stopping). */
  void release(List<ClaimedMessage> claimed) {
    for (ClaimedMessage m : claimed) {
      if (!submit(new PendingOutcome.Released(m.messageId(), m.lease()))) {
        log.info(
            "Claim not given back, the outcome writer has stopped: message_id={}"
                + " (reason=WRITER_CLOSED; a later claim or the next instance's recovery settles"
                + " the row)",
            Printable.escape(m.messageId()));
      }
    }
  }

  /**
   * At least once, a claim whose row {@code failedId} failed its mapping (nothing of it entered the
   * ledger): the other rows are given back, due at once, and the failed row is parked ({@link
   * #parkUnmappable}). Where that cannot be written, its lease ends now, so that it takes a
   * row-that-fails-its-task's route: reclaimed alone as an abandoned row and charged an attempt
   * each time it fails a task, until it is parked EXHAUSTED (ABANDONED_IN_ISOLATION).
   */
  void mappingFailed(List<ClaimedMessage> claimed, String failedId) {
    release(claimed.stream().filter(m -> !m.messageId().equals(failedId)).toList());
    List<HeldLease> failed = new ArrayList<>();
    for (ClaimedMessage m : claimed) {
      if (m.messageId().equals(failedId) && !parkUnmappable(m)) {
        failed.add(m.heldLease());
      }
    }
    if (failed.isEmpty()) {
      return;
    }
    try {
      if (!store.expireLeases(failed).locked().isEmpty()) {
        log.warn(
            "Could not end the lease of message_id={}, whose mapping failed: another session"
                + " holds its row's lock (reason=ROW_LOCKED); it is reclaimed alone once the lease"
                + " runs out",
            Printable.escape(failedId));
      }
    } catch (RuntimeException e) { // NOPMD: failing already, for the mapping
      log.warn(
          "Could not end the lease of message_id={}, whose mapping failed (error={}); it is"
              + " reclaimed alone once the lease runs out",
          Printable.escape(failedId),
          e instanceof OutboxStoreException ose ? ose.reasonCode() : e.getClass().getName());
    }
  }

  /**
   * Parks FAILED ({@code MAPPING_FAILED}, no dead-letter record: the mapping that threw would build
   * it) a claimed row whose mapping threw, before the task fails for it: the mapping is a function
   * of the row and the settings, so the row would fail every task that claimed it again. Reclaimed
   * instead, it failed every task of the connector in turn, up to {@code max.attempts} + 1 of them
   * before a claim parked it EXHAUSTED, and exactly once with {@code transaction.boundary=interval}
   * (no suspect isolated, so never charged) the bucket's task for ever. Requeued once the connector
   * is fixed. Returns whether the row has left this task's hands: parked, or another owner's (a
   * lost claim, reported).
   */
  boolean parkUnmappable(ClaimedMessage row) {
    Outcome outcome;
    try {
      outcome = store.markFailed(row.messageId(), row.lease(), ReasonCodes.MAPPING_FAILED);
    } catch (RuntimeException e) { // NOPMD: failing already, for the mapping
      if (e instanceof OutboxStoreException ose && ose.mayHaveCommitted()) {
        log.warn(
            "A park whose reply was lost may have parked message_id={} instance_key={}, whose"
                + " mapping failed (reason=WRITE_REPLY_LOST, error={}; outbox-relay-cli inspect"
                + " shows it; not parked, it is reclaimed alone)",
            Printable.escape(row.messageId()),
            Printable.escape(row.instanceKey()),
            ose.reasonCode());
      } else {
        log.warn(
            "Could not park message_id={} instance_key={}, whose mapping failed (error={})",
            Printable.escape(row.messageId()),
            Printable.escape(row.instanceKey()),
            e instanceof OutboxStoreException ose ? ose.reasonCode() : e.getClass().getName());
      }
      return false;
    }
    if (outcome.isApplied()) {
      metrics.failed.incrementAndGet();
      log.warn(
          "Parked FAILED, its mapping to a record threw: message_id={} instance_key={}"
              + " (reason=MAPPING_FAILED; a bug of the connector: requeue the row once it is fixed)",
          Printable.escape(row.messageId()),
          Printable.escape(row.instanceKey()));
    } else {
      metrics.claimLost.incrementAndGet();
      log.warn(
          "Claim lost: message_id={} instance_key={}, whose mapping failed, not parked"
              + " (reason=LEASE_TAKEN_OVER; another owner holds or resolved the row)",
          Printable.escape(row.messageId()),
          Printable.escape(row.instanceKey()));
    }
    return true;
  }

  /**
   * A maintenance run still going ends before the pool closes (off the task's thread: the close
   * never runs on the one that stopped the task): cut short by the close, it reported the task's
   * database as failing after the task had stopped.
   */
  private void awaitMaintenance() {
    ExecutorService m = maintenanceThread;
    if (m == null) {
      return;
    }
    try {
      m.awaitTermination(maintenanceRunLimit.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * The stop's question, still asked, is answered before the pool closes (off the task's thread, as
   * the close always is), for as long as its connection wait and statement may take, and a minute
   * at most (a half-open connection's read waits out the socket timeout, up to a day): past it the
   * pool closes under the question, which then says, row by row, that each may have been parked.
   */
  private void awaitStopQuestion() {
    Thread asking = stopQuestion;
    if (asking == null) {
      return;
    }
    try {
      asking.join(Math.max(1, stopQuestionLimit.toMillis()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  /** Queues an outcome; false once outcomes are no longer written (a late acknowledgement). */
  boolean submit(PendingOutcome outcome) {
    return loop.submit(outcome);
  }

  /**
   * Why the task must fail now, or null: a background thread died, or ended without being asked to
   * (which only a failure does).
   */
  StoreHealth.Failure failure() {
    StoreHealth.Failure died = health.threadFailure();
    if (died != null) {
      return died;
    }
    if (!stopRequested.get() && closeParties.get() < 2) {
      return new StoreHealth.Failure(
          "BACKGROUND_THREAD_DIED", "the outcome writer thread ended unexpectedly");
    }
    return null;
  }

  /**
   * Stops the listener, flushes queued outcomes for up to {@code flushTimeout}, and lets the
   * outcome loop accept late acknowledgements for {@code lateAckGrace}; returns without waiting for
   * that. Idempotent.
   */
  void stop(Duration flushTimeout, Duration lateAckGrace) {
    stop(flushTimeout, lateAckGrace, () -> NOTHING_TO_ASK);
  }

  /** A last question of a stop's: none. */
  static final Runnable NOTHING_TO_ASK = () -> {};

  /**
   * As {@link #stop(Duration, Duration)}, running {@code lastTaskStep} once the other threads were
   * told to stop and before the flush, then the database question it returns ({@link #askAtStop}):
   * a question that may wait for the database (a pooled connection during an outage) then holds no
   * renewal or listener running on past the stop.
   */
  void stop(Duration flushTimeout, Duration lateAckGrace, Supplier<Runnable> lastTaskStep) {
    if (!stopRequested.compareAndSet(false, true)) {
      return;
    }
    // Whatever fails on the way, the threads are stopped and the pool closed: a second stop does
    // nothing, so they would stay open for the worker's lifetime.
    try {
      Thread stopper = Thread.currentThread();
      if (exactlyOnce == null && ConnectTaskClose.isClosingATask(stopper)) {
        // Connect's close: once it returns, the producer is closed and no acknowledgement can come.
        loop.endGraceOnceProducerClosed(() -> !ConnectTaskClose.isClosingATask(stopper));
      }
      NotificationListener l = listener;
      if (l != null) {
        l.stop();
      }
      ExecutorService m = maintenanceThread;
      if (m != null) {
        Maintenance mt = maintenance;
        if (mt != null) {
          mt.stop(); // a run going on ends after its statement
        }
        m.shutdown();
      }
      // At once, not at the close, which waits out the late-acknowledgement grace (Connect's
      // producer close, up to 30 s) while the successor opens its own pool; the writes still to
      // come open what they need.
      store.releaseIdleConnections();
      renewer.taskStopping();
      claims.taskStopping();
      if (deadLetterCopies != null) {
        deadLetterCopies.stop();
      }
      wake.wake();
      askAtStop(lastTaskStep.get());
    } finally {
      stopThreads(flushTimeout, lateAckGrace);
    }
  }

  /**
   * Asks {@code question} of the database on a thread of its own, waiting for the answer {@link
   * #stopQuestionWait} at most: its connection wait alone (5 s in an outage) took Connect's whole 5
   * s for a stop, and a half-open connection's read the socket timeout. The pool closes once it is
   * answered or past its bounds ({@link #awaitStopQuestion}), so what it reports comes before the
   * stop's summary, unless it is past them.
   */
  private void askAtStop(Runnable question) {
    if (question == NOTHING_TO_ASK) {
      return;
    }
    Thread asking =
        new Thread(
            () -> {
              if (mdc != null) {
                MDC.setContextMap(mdc);
              }
              question.run();
            },
            "outbox-relay-stop-question-" + threadSuffix);
    asking.setDaemon(true);
    stopQuestion = asking;
    asking.start();
    try {
      long waitMs = stopQuestionWait.toMillis();
      if (waitMs > 0) {
        asking.join(waitMs); // join(0) would wait for ever
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (asking.isAlive()) {
      log.info(
          "Stop not waiting for the database to say whether parks whose reply was lost committed"
              + " (reason=STOP_QUESTION_PENDING; their rows are reported once it answers, or as"
              + " possibly parked, WRITE_REPLY_LOST, where it does not before the task's connections"
              + " close)");
    }
  }

  /** For tests: whether the outcome loop has ended and the stop arrived, so the close is due. */
  boolean closeDue() {
    return closeParties.get() == 0;
  }

  /** For tests: how long a stop waits for its question's answer. */
  void stopQuestionWait(Duration wait) {
    stopQuestionWait = wait;
  }

  private void stopThreads(Duration flushTimeout, Duration lateAckGrace) {
    if (started) {
      if (exactlyOnce == null) {
        // Before the loop may end (at its end it forgets this). Exactly once, no acknowledgement
        // comes after stop() at all: there is no wait for a successor to end.
        succession.whenSucceeded(loop::acknowledgementsEnded);
      }
      loop.stop(flushTimeout, lateAckGrace);
    } else {
      closeWhenBothDone(); // no loop will ever end: arrive in its place
    }
    if (closeParties.decrementAndGet() == 0) {
      // The loop has ended already: close, but not on the caller's thread. Closing a pool during
      // a database outage can wait for a connection attempt, and Connect gives stop() 5 s.
      Thread closer =
          new Thread(
              () -> {
                if (mdc != null) {
                  MDC.setContextMap(mdc);
                }
                close();
              },
              "outbox-relay-close-" + threadSuffix);
      closer.setDaemon(true);
      closer.start();
    }
  }

  /** The outcome loop's last act: closes the store if the task has asked to stop already. */
  private void closeWhenBothDone() {
    succession.ended();
    // Each party arrives once, so the count reaches zero exactly once.
    if (closeParties.decrementAndGet() == 0) {
      close();
    }
  }

  /**
   * The loop died before the stop (a bug, an Error): settle now what its end did not, or the rows
   * would wait out their leases (exactly once, the batches never handed over would be left to the
   * next instance's recovery, counted abandoned). Whatever killed the loop may strike here again:
   * the store is closed all the same.
   */
  private void settleAfterTheLoopDied() {
    try {
      writer.settleUnresolvedAtStop();
    } catch (Throwable t) { // NOPMD: the close must happen; the class only, as the loop's death
      log.warn(
          "Could not settle the unresolved rows at stop after the outcome writer died"
              + " (error={}); their leases run out instead",
          t.getClass().getName());
    }
  }

  private void close() {
    try {
      if (started && !loop.settledAtStop()) {
        settleAfterTheLoopDied();
      }
      // Again: what the grace's writes opened.
      store.releaseIdleConnections();
      awaitMaintenance();
      awaitStopQuestion();
      store.close();
    } finally {
      log.info("outbox-relay task stopped: {}", metrics);
    }
  }
}
