package dev.outboxrelay.connect;

import dev.outboxrelay.mapping.SourceOffsets;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.SqlStates;
import dev.outboxrelay.writer.Printable;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Claims outbox rows under fenced leases, hands them to Connect as records and records each outcome
 * only while the lease still holds. Connect glue only: {@link ClaimLoop} decides what to claim,
 * {@link RecordHandoff} turns rows into records and acknowledgements into outcomes, and {@link
 * TaskRuntime} owns the store and the background threads.
 *
 * <p>Threads: {@code poll()} claims and maps on the task thread; {@code commitRecord} runs on the
 * producer's I/O thread and only queues; the outcome loop thread writes outcomes in batches and
 * renews leases. Nothing on the producer thread touches the database.
 */
public class OutboxSourceTask extends SourceTask {
  private static final Logger log = LoggerFactory.getLogger(OutboxSourceTask.class);
  static final String TASK_ID = TaskIdentity.TASK_ID;
  static final String TASK_COUNT = TaskIdentity.TASK_COUNT;
  static final String CONNECTOR_NAME = TaskIdentity.CONNECTOR_NAME;

  /** How long a stop waits for a claim made ahead, so that its rows leave the ledger. */
  private static final Duration PREFETCH_STOP_WAIT = Duration.ofSeconds(1);

  /** The operations of claims ({@code claim}, {@code claim-abandoned}, ...) start so. */
  private static final String CLAIM = "claim";

  private final StoreProvider storeProvider;
  private final Time time;

  private TaskConfig config;
  private RelayMetrics metrics;
  private TaskRuntime runtime;
  private IdleBackoff idle;
  private PollPause pause;
  private ClaimPrefetch prefetch;
  private SchemaReadiness schema;
  private FailureRun storeFailures;
  private volatile boolean stopping;
  private boolean stopped;

  /** An interrupt of the task thread has been logged (once per task instance). */
  private boolean interruptReported;

  /** The thread Connect polls on: exactly once, acknowledgements arrive on it too. */
  private volatile Thread taskThread;

  /** Exactly once, an acknowledgement came from the producer's thread: no transactions. */
  private volatile boolean acknowledgedOutsideATransaction;

  /** Exactly once: the message id of a record a transform or predicate dropped, or null. */
  private volatile String droppedUnderExactlyOnce;

  /** The records handed over and not acknowledged yet (Connect's exactly-once task may drop). */
  private UnacknowledgedRecords unacknowledged;

  /** Whether Connect runs this task in its exactly-once task; read at the first commit(). */
  private Boolean connectExactlyOnceTask;

  public OutboxSourceTask() {
    this(new PostgresStoreProvider(), Time.SYSTEM);
  }

  OutboxSourceTask(StoreProvider storeProvider, Time time) {
    this.storeProvider = storeProvider;
    this.time = time;
  }

  @Override
  public String version() {
    return Version.get();
  }

  /** The logging context's key of the task's instance keys (set at start, on the task thread). */
  static final String MDC_INSTANCE_KEYS = "outbox.instance_keys";

  @Override
  public void start(Map<String, String> props) {
    config = TaskConfig.parse(props);
    MDC.put(MDC_INSTANCE_KEYS, printable(config.connector().instanceKeys()));
    try {
      startRuntime();
    } catch (RuntimeException | Error e) {
      MDC.remove(MDC_INSTANCE_KEYS); // Connect may not call stop() for a task that failed to start
      if (e instanceof VirtualMachineError
          || e instanceof ConnectException
          || e instanceof ConfigException
          || e instanceof OutboxStoreException) {
        throw e;
      }
      // Not the relay's words, nor Connect's: may quote driver text. An Error too (a class that
      // failed to initialize, a service not found), whose message and causes are a library's.
      throw unexpected(e);
    }
  }

  private void startRuntime() {
    idle = new IdleBackoff(config.settings().pollInterval());
    storeFailures = new FailureRun(time);
    schema =
        new SchemaReadiness(storeProvider, config.connector(), config.identity().isFirst(), time);
    // Registered last before the runtime, whose failure unregisters them: Connect may not call
    // stop() for a task that failed to start, and its replacement registers the same names.
    metrics = new RelayMetrics(time);
    // Not a lambda: linking one resolves its type, PluginMetrics, which workers before Kafka 4.1
    // lack; the class's method is resolved only when called, and register() catches that (and
    // registers beans of the task's own instead).
    metrics.register(
        new RelayMetrics.PluginMetricsSource() {
          @Override
          public PluginMetrics get() {
            return context.pluginMetrics();
          }
        },
        config.identity().isFirst(), // the task that reads the backlog (Maintenance)
        config.identity().connectorName(),
        config.identity().index());
    try {
      runtime =
          TaskRuntime.start(
              config, storeProvider, metrics, time, () -> context.offsetStorageReader());
    } catch (RuntimeException | Error e) {
      metrics.unregister(); // Connect may not call stop() for a task that failed to start
      throw e;
    }
    try {
      pause = new PollPause(runtime.wake());
      // At least once too: a worker with exactly-once support runs every source task in its
      // exactly-once task, whatever the connector's guarantee.
      unacknowledged = new UnacknowledgedRecords();
      if (runtime.exactlyOnce() != null) {
        takeEpochIfReachable(runtime.exactlyOnce());
        prefetch =
            new ClaimPrefetch(
                this::claimBatch, "outbox-relay-prefetch-" + config.identity().threadSuffix());
      }
    } catch (RuntimeException | Error e) {
      runtime.stop(Duration.ZERO, Duration.ZERO); // nor for these: the pool and threads must go
      metrics.unregister();
      throw e;
    }
    log.info(
        "Started outbox-relay task {} as lease owner {} for instance keys {} ({})",
        config.identity().index(),
        config.settings().owner(),
        printable(config.connector().instanceKeys()),
        config.settings().exactlyOnce() ? "exactly-once" : "at-least-once");
  }

  @Override
  public List<SourceRecord> poll() {
    if (stopping) {
      return null;
    }
    runtime.renewer().taskPolled();
    taskThread = Thread.currentThread();
    clearInterrupt();
    metrics.retryRegistrationIfDue(); // names an earlier instance held at start, freed since
    try {
      acknowledgeDropped();
      failIfBroken();
      return claimAndHandOver();
    } catch (ConnectException e) {
      throw e; // the relay's own words (its failures carry no cause), or Connect's
    } catch (org.apache.kafka.common.errors.RetriableException e) {
      // A Kafka client's, which Connect retries too: retried, as Connect's own are, without text.
      pause.arm(config.settings().pollInterval()); // waited in the next poll
      throw new RetriableException(
          "outbox-relay: " + e.getClass().getName() + " from Kafka; polling again");
    } catch (RuntimeException e) {
      throw unexpected(e);
    } catch (VirtualMachineError e) {
      throw e; // out of memory, a stack overflow: no report of ours may run
    } catch (Error e) {
      throw unexpected(e); // a library's (a class that failed to initialize): its text is not ours
    } finally {
      runtime.renewer().pollReturned();
    }
  }

  /**
   * A failure nothing classified (a bug, a library's exception): the task fails naming its class
   * and where it was thrown, never its message or causes, which may quote row data or the
   * connection and would reach the status trace Connect's REST API shows.
   */
  private static ConnectException unexpected(Throwable e) {
    String missing = missingClass(e);
    StringBuilder causes = new StringBuilder();
    Throwable cause = e.getCause();
    for (int depth = 0; cause != null && depth < 8; depth++, cause = cause.getCause()) {
      StackTraceElement[] frames = cause.getStackTrace();
      causes
          .append("; caused by ")
          .append(cause.getClass().getName())
          .append(frames.length > 0 ? " at " + frames[0] : "");
    }
    log.error(
        "Unexpected failure (reason=INTERNAL_ERROR, error={}{}{}) at {}; the task fails",
        e.getClass().getName(),
        missing,
        causes,
        java.util.Arrays.toString(e.getStackTrace()));
    return new ConnectException(
        "outbox-relay: unexpected "
            + e.getClass().getName()
            + missing
            + " (reason=INTERNAL_ERROR); its message is not shown, as it may quote row data or the"
            + " connection: the task's log says where it was thrown");
  }

  /** A class name only: what the plugin path lacks, the clue to a packaging mistake. */
  private static final java.util.regex.Pattern CLASS_NAME =
      java.util.regex.Pattern.compile("[\\p{Alnum}_$./-]{1,300}");

  /**
   * The class a NoClassDefFoundError names, when its message is a class name alone (it is, from the
   * JVM): " (missing class ...)", else nothing.
   */
  private static String missingClass(Throwable e) {
    return e instanceof NoClassDefFoundError
            && e.getMessage() != null
            && CLASS_NAME.matcher(e.getMessage()).matches()
        ? " (missing class " + e.getMessage() + ")"
        : "";
  }

  /**
   * Clears an interrupt of the task thread, said once. Connect stops a source task by {@code
   * stop()}, never by an interrupt, so one comes from elsewhere (a transform or converter that
   * restored one it caught); left set, every wait of the poll and every wait for a pooled
   * connection would end at once, and the task would claim in a loop, a core busy.
   */
  private void clearInterrupt() {
    if (Thread.interrupted() && !interruptReported) {
      interruptReported = true;
      log.warn(
          "The task thread was interrupted outside a stop (reason=TASK_THREAD_INTERRUPTED); the"
              + " interrupt is cleared: Connect stops a task by stop(). Said once per task");
    }
  }

  /** The end of a run of failed polls, said once. */
  private void claimsSucceed() {
    int failed = storeFailures.end();
    if (failed > 0) {
      log.info("Claims succeed again after {} polls that the database failed", failed);
    }
  }

  private List<SourceRecord> claimAndHandOver() {
    try {
      if (!pause.awaitSlice() || stopping) {
        return null; // the rest of a wait begun by an earlier poll, or woken by stop()
      }
      ExactlyOnceState exactlyOnce = runtime.exactlyOnce();
      if (exactlyOnce != null) {
        // Not taken at start (the database away): now, before any wait for the schema. Taken
        // after a migration's backoff, it could be above a successor's started meanwhile, whose
        // rows in flight this instance's recovery would then release. It needs no outbox table.
        exactlyOnce.takeEpoch();
      }
      if (!schema.ensure()) {
        pause.start(config.settings().pollInterval()); // a migration backing off
        return null;
      }
      if (exactlyOnce != null && !exactlyOnce.recover()) {
        return null; // a page at a time, before the first claim; the next poll reads on
      }
      runtime.maintenance().runIfDue();
      if (prefetch != null) {
        runtime.deadLetterCopies().record();
        return handOverNextBatch();
      }
      if (idle.waitBeforeClaim()) {
        pause.start(idle.nextWait()); // a trickle: claim on its next row, not at once
        return null;
      }
      ClaimResult claimed = runtime.claims().next();
      claimsSucceed();
      metrics.claimed.addAndGet(claimed.claimed().size()); // given back or not, claimed
      if (stopping) {
        runtime.release(claimed.claimed());
        return null;
      }
      // A full batch of what the claim asked for, which the byte budget may have made smaller.
      idle.claimed(claimed.claimed().size(), runtime.claims().fullBatch());
      List<SourceRecord> records;
      try {
        records = runtime.handoff().toRecords(claimed.claimed());
      } catch (MappingFailedException e) {
        runtime.mappingFailed(claimed.claimed(), e.messageId());
        throw e;
      }
      if (records.isEmpty()) {
        if (progressedWithoutRows(claimed)) {
          // Claimed again at once: waiting as after an empty claim, each such claim doubled the
          // wait, up to poll.interval.ms, while due rows waited.
          idle.claimedRows();
          return null;
        }
        pause.start(idle.nextWait());
        return null;
      }
      unacknowledged.handedOver(records);
      return records;
    } catch (OutboxStoreException e) {
      runtime.health().databaseError(e); // counts it, and holds the abandoned-row probe back
      if (!e.isRetriable()) {
        throw TaskFailures.of(e);
      }
      if (StoreProvider.MIGRATE.equals(e.operation())) {
        storeFailures.failed(
            e,
            log,
            "Schema migration failed (reason={}, sqlState={}); will retry {}",
            e.reasonCode(),
            e.sqlState(),
            schema.nextAttempt());
      } else if (StoreProvider.CHECK_SCHEMA.equals(e.operation())
          || StoreProvider.CHECK_PRIVILEGES.equals(e.operation())) {
        storeFailures.failed(
            e,
            log,
            "Database unavailable while checking the schema version and privileges (reason={},"
                + " sqlState={}); will retry",
            e.reasonCode(),
            e.sqlState());
      } else if (!e.operation().startsWith(CLAIM)) {
        // A poll's other statements: an exactly-once park, a recovery page, the epoch.
        storeFailures.failed(
            e,
            log,
            "A poll's {} failed (reason={}, sqlState={}{}); nothing sent meanwhile, will retry",
            e.operation(),
            e.reasonCode(),
            e.sqlState(),
            e.messageId() == null ? "" : ", at message_id=" + Printable.escape(e.messageId()));
      } else if (SqlStates.QUERY_CANCELED.equals(e.sqlState())) {
        storeFailures.failed(
            e,
            log,
            "Claim cancelled by the database (operation={}, reason={}, sqlState={}:"
                + " statement.timeout.ms passed, or an operator cancelled it; a claim this slow at"
                + " every poll points to a bloated table or an index left invalid, see"
                + " INVALID_INDEX); will retry",
            e.operation(),
            e.reasonCode(),
            e.sqlState());
      } else {
        storeFailures.failed(
            e,
            log,
            "Database unavailable while claiming (operation={}, reason={}, sqlState={}); will"
                + " retry",
            e.operation(),
            e.reasonCode(),
            e.sqlState());
      }
      // Waited in the next poll: this one may have waited for a connection or a statement. No
      // records, rather than a RetriableException, which Connect logs with its trace every poll.
      pause.arm(config.settings().pollInterval());
      return null;
    } catch (RetriableException e) {
      // Exactly once, the committed offsets unreadable (Kafka away, the offsets topic refused):
      // Connect polls again at once, and a read that failed fast was tried again in a tight loop:
      // the next poll waits.
      pause.arm(config.settings().pollInterval());
      throw e;
    }
  }

  /**
   * Exactly-once: a claim and its positioned records, on the prefetch thread (or the task thread
   * when nothing was prefetched). Its parks are written when it is handed over.
   */
  private ClaimPrefetch.Batch claimBatch() {
    ClaimResult claimed = runtime.claims().next();
    metrics.claimed.addAndGet(claimed.claimed().size());
    RecordHandoff.Positioned positioned;
    try {
      positioned = runtime.handoff().position(claimed.claimed());
    } catch (MappingFailedException e) {
      runtime.claims().leaveLeasedAtStop(e.messageId()); // the rest is given back at the stop
      // Parked, its claim's batch never leaves; not parked, its lease is the next instance's
      // recovery's to release.
      claimed.claimed().stream()
          .filter(m -> m.messageId().equals(e.messageId()))
          .forEach(runtime::parkUnmappable);
      throw e;
    }
    // The next claim starts ahead after such progress too, not after a wait.
    return new ClaimPrefetch.Batch(
        positioned,
        claimed.claimed().size(),
        runtime.claims().fullBatch(),
        progressedWithoutRows(claimed));
  }

  /**
   * A claim that leased no row but made progress, to be followed by the next at once: it parked
   * rows over their budget (maybe more to park: an abandoned-row probe parks one at a time), or
   * read its share of a lost claim's release, with pages left.
   */
  private boolean progressedWithoutRows(ClaimResult claimed) {
    return !claimed.exhausted().isEmpty() || runtime.claims().readsOnAtOnce();
  }

  /**
   * Exactly-once: the next batch, its parks written first; only then is the next one claimed ahead.
   * A batch held because a park failed is retried first, and nothing is claimed meanwhile. After a
   * trickle's short batch nothing is claimed ahead, and the next poll waits for a wake-up first, as
   * at least once ({@link IdleBackoff}).
   */
  private List<SourceRecord> handOverNextBatch() {
    RecordHandoff handoff = runtime.handoff();
    if (handoff.hasHeld()) {
      List<SourceRecord> records = handoff.releaseHeld();
      claimAheadAfter(ClaimPrefetch.Batch.HAD_ROWS);
      return handOver(records, true);
    }
    if (!prefetch.hasPending() && idle.waitBeforeClaim()) {
      pause.start(idle.nextWait()); // a trickle: claim on its next row, not at once
      return null;
    }
    ClaimPrefetch.Batch batch = prefetch.take();
    claimsSucceed();
    if (stopping) {
      // Never handed over: nothing parked, covered by no offset; the stop gives its rows back.
      handoff.forget(batch.positioned());
      return null;
    }
    List<SourceRecord> records = handoff.handOver(batch.positioned());
    idle.claimed(batch.claimed(), batch.fullBatch());
    if (batch.progressed() || !idle.waitsBeforeClaim()) {
      idle.waitBeforeClaim(); // claimed ahead: the next poll takes it without a wait
      claimAheadAfter(batch);
    }
    return handOver(records, batch.claimed() > 0 || batch.progressed());
  }

  /**
   * The next claim, ahead; none while suspects are claimed alone, whose claims wait for what the
   * task holds to be committed.
   */
  private void claimAheadAfter(ClaimPrefetch.Batch batch) {
    if (!runtime.claims().isolating()) {
      prefetch.startNextAfter(batch);
    }
  }

  private List<SourceRecord> handOver(List<SourceRecord> records, boolean claimedRows) {
    if (stopping) {
      // Covered by no offset, and never Connect's: they leave the ledger, and the stop gives
      // their rows back (rows parked already stay so, reported).
      runtime.handoff().forgetUnsent(records);
      return null;
    }
    if (claimedRows) {
      idle.claimedRows();
    }
    if (records.isEmpty()) {
      if (!prefetch.hasPending()) {
        pause.start(idle.nextWait());
      } // else the next poll takes the batch claimed ahead after this one's progress, at once
      return null;
    }
    runtime.exactlyOnce().handedOver(records);
    unacknowledged.handedOver(records);
    runtime.handoff().handedOver(records);
    return records;
  }

  /** The epoch now, in start(); the first poll takes it if the database is away. */
  private static void takeEpochIfReachable(ExactlyOnceState exactlyOnce) {
    try {
      exactlyOnce.takeEpoch();
    } catch (OutboxStoreException e) {
      log.warn(
          "Exactly-once epoch not taken at start (reason={}, sqlState={}); the first poll takes it",
          e.reasonCode(),
          e.sqlState());
    }
  }

  /**
   * Connect's exactly-once task ended a transaction without acknowledging records it had
   * dispatched, which it does when a transform or predicate dropped all of them ({@link
   * UnacknowledgedRecords}). Acknowledged here as Connect would have, without metadata: each row's
   * outcome is written per null.metadata.policy; exactly once, the task fails, naming the first. At
   * least once on such a worker, they stayed in flight, leases renewed, until the task held its
   * limit and claimed nothing more, still RUNNING.
   */
  private void acknowledgeDropped() {
    if (unacknowledged != null) {
      // Exactly once never tolerated: a record taken for dropped always fails the task in this
      // poll, so that Connect's final commit is skipped and its open transaction aborted;
      // tolerating one would let a mistaken one (a worker without exactly-once support) send its
      // row twice.
      for (SourceRecord record : unacknowledged.dropped()) {
        settle(record, null);
      }
      unacknowledged.pollBegins();
    }
  }

  /**
   * Connect's exactly-once task calls this on the task thread after each transaction it commits,
   * and after each it finds nothing to commit for. Elsewhere (a worker without exactly-once support
   * commits offsets on a thread of its own, and on the task thread once, as it stops, while
   * acknowledgements may still come) it says nothing of the records handed over: an at-least-once
   * task takes it for a transaction's end only from Connect's exactly-once task.
   */
  @Override
  public void commit() {
    if (unacknowledged == null || Thread.currentThread() != taskThread) {
      return;
    }
    if (config.settings().exactlyOnce() || inConnectExactlyOnceTask()) {
      unacknowledged.transactionEnded();
    }
  }

  /** Whether this commit comes from Connect's exactly-once task; the same for the task's life. */
  private boolean inConnectExactlyOnceTask() {
    if (connectExactlyOnceTask == null) {
      connectExactlyOnceTask = ConnectTaskKind.isCommittingATransaction(Thread.currentThread());
    }
    return connectExactlyOnceTask;
  }

  /** A non-retriable store error or a dead background thread fails the task, sanitized. */
  private void failIfBroken() {
    OutboxStoreException fatal = runtime.health().fatalStoreError();
    if (fatal != null) {
      throw TaskFailures.of(fatal);
    }
    StoreHealth.Failure failure = runtime.failure();
    if (failure != null) {
      throw new ConnectException(failure.message());
    }
    String dropped = droppedUnderExactlyOnce;
    if (dropped != null) {
      throw new ConnectException(
          "outbox-relay: delivery.guarantee=exactly-once, but a transform or predicate dropped the"
              + " record of message_id="
              + Printable.escape(dropped)
              + " (reason=DROPPED_UNDER_EXACTLY_ONCE): a later record's committed offset covers a"
              + " dropped record's row, and a recovery after a crash would record it PUBLISHED"
              + " unsent; remove the transform that drops records (filter in the outbox instead)."
              + " The row itself was handled per null.metadata.policy");
    }
    if (acknowledgedOutsideATransaction) {
      throw new ConnectException(
          "outbox-relay: delivery.guarantee=exactly-once, but this worker runs the task without"
              + " exactly-once source support (reason=NO_EXACTLY_ONCE_SUPPORT: records are"
              + " acknowledged as sent, not after a transaction commits): set"
              + " exactly.once.source.support=enabled on every worker (docs/deployment.md); the"
              + " next instance's recovery settles the rows in flight");
    }
  }

  @Override
  public void commitRecord(SourceRecord record, RecordMetadata metadata) {
    if (unacknowledged != null && !unacknowledged.acknowledged(record)) {
      // Settled as dropped at a poll; Connect's exactly-once task acknowledges such a record when
      // a later transaction commits. Written again, fenced, it was reported a lost claim.
      return;
    }
    settle(record, metadata);
  }

  /** Kafka's acknowledgement of {@code record}, or Connect's without metadata, written. */
  private void settle(SourceRecord record, RecordMetadata metadata) {
    // Runs on the producer's I/O thread (exactly-once: on the task thread, after the transaction
    // committed): identify the row, queue the outcome, return.
    runtime.renewer().acknowledged(); // the task's records are moving: it is not hung
    if (prefetch != null
        && !acknowledgedOutsideATransaction
        && taskThread != null
        && Thread.currentThread() != taskThread) {
      // A worker without exactly-once support (it was turned off after the connector was
      // created): offsets are written outside any transaction and earlier instances are not
      // fenced. The record is in Kafka all the same: its outcome is still written.
      acknowledgedOutsideATransaction = true;
      log.error(
          "Exactly-once task acknowledged outside a transaction (reason=NO_EXACTLY_ONCE_SUPPORT);"
              + " the task fails at its next poll");
    }
    if (SourceOffsets.isParked(record)) {
      // Exactly-once dead letter: its row was parked before it was sent. Its position is recorded
      // at the next poll, on this thread (not from a producer's, a worker without support).
      runtime.parkedRecordSettled(record, config.settings());
      if (metadata == null) {
        noteDroppedUnderExactlyOnce(record); // its row stays parked, without its copy
      } else if (metadata.hasOffset()
          && runtime.deadLetterCopies() != null
          && Thread.currentThread() == taskThread) {
        runtime
            .deadLetterCopies()
            .committed(
                SourceOffsets.messageId(record),
                SourceOffsets.seq(record),
                SourceOffsets.leaseToken(record),
                SourceOffsets.epoch(record),
                SourceOffsets.batch(record),
                new KafkaCoordinates(metadata.topic(), metadata.partition(), metadata.offset()));
      }
      return;
    }
    String messageId;
    long seq;
    long token;
    try {
      messageId = SourceOffsets.messageId(record);
      seq = SourceOffsets.seq(record);
      token = SourceOffsets.leaseToken(record);
    } catch (IllegalArgumentException e) {
      log.warn(
          "Acknowledgement for a record without an outbox source offset ignored"
              + " (reason=NO_SOURCE_OFFSET; not a record of this connector's making)");
      return;
    }
    if (metadata == null) {
      // Its outcome is still written, closing the window in which a recovery would take the row
      // for committed.
      noteDroppedUnderExactlyOnce(record);
    }
    if (!runtime.submit(runtime.handoff().outcomeOf(record, messageId, seq, token, metadata))) {
      metrics.lateAcks.incrementAndGet();
      if (metadata != null && !config.settings().exactlyOnce()) {
        // Kafka has the record, and the stop has ended (or will end) the row's lease: a later
        // claim sends it again. Said as the duplicate it is, not as a row merely settled later.
        log.warn(
            "Acknowledgement arrived after the task stopped writing: message_id={}"
                + " (reason=LATE_ACK; Kafka has its record, and a later claim sends the row"
                + " again: a duplicate)",
            Printable.escape(messageId));
        return;
      }
      log.warn(
          "Acknowledgement arrived after the task stopped writing: message_id={}"
              + " (reason=LATE_ACK; a later claim or the next instance's recovery settles the row)",
          Printable.escape(messageId));
    }
  }

  /**
   * Exactly once, errors.tolerance=all is refused, so no metadata means a transform or predicate
   * dropped the record: a later record's committed offset covers its row. The task fails at its
   * next poll, naming the first such row.
   */
  private void noteDroppedUnderExactlyOnce(SourceRecord record) {
    if (!config.settings().exactlyOnce() || droppedUnderExactlyOnce != null) {
      return;
    }
    String messageId;
    try {
      messageId = SourceOffsets.messageId(record);
    } catch (IllegalArgumentException e) {
      messageId = "(unknown)";
    }
    droppedUnderExactlyOnce = messageId;
    log.error(
        "Record dropped by a transform or predicate under exactly once: message_id={}"
            + " (reason=DROPPED_UNDER_EXACTLY_ONCE); the task fails at its next poll",
        Printable.escape(messageId));
  }

  @Override
  public void stop() {
    if (stopped) {
      return;
    }
    stopped = true;
    stopping = true;
    try {
      if (metrics != null) {
        // Now, not after the late-ack grace: a replacement instance of this task may start at
        // once and must be able to register the same metric names.
        metrics.unregister();
      }
      if (prefetch != null && runtime != null) {
        // What Connect never got leaves the ledger, so the outcome writer does not wait for it.
        // The held batch last: a park of it whose reply was lost is looked up in the database,
        // which may wait for a connection, and the listener and renewals must have stopped by then.
        RecordHandoff handoff = runtime.handoff();
        runtime.claims().taskStopping(); // a claim queued on the prefetch thread does not start
        prefetch.close(PREFETCH_STOP_WAIT, untaken -> handoff.forget(untaken.positioned()));
        runtime.stop(Duration.ofSeconds(2), config.settings().lateAckGrace(), handoff::forgetHeld);
      } else if (runtime != null) {
        runtime.stop(Duration.ofSeconds(2), config.settings().lateAckGrace());
      }
    } finally {
      // Last, so that the stop's own lines carry it. Connect calls stop() on the task thread, a
      // pooled one that may run another connector's task next, and its own logging context
      // restores only Connect's keys.
      MDC.remove(MDC_INSTANCE_KEYS);
    }
  }

  /** For tests: the poll's pause, which counts the slices it waited. */
  PollPause pollPause() {
    return pause;
  }

  /** For tests: this task's counters. */
  RelayMetrics metrics() {
    return metrics;
  }

  /** For tests: the hand-off, to stop it as a stop on another thread would. */
  RecordHandoff handoff() {
    return runtime.handoff();
  }

  /** For tests: how long a stop waits for the database to answer its last question. */
  void stopQuestionWait(Duration wait) {
    runtime.stopQuestionWait(wait);
  }

  /** For tests: whether the task's close is due (its outcome loop ended, its stop arrived). */
  boolean closeDue() {
    return runtime.closeDue();
  }

  /** For tests: whether a wake-up of poll() is pending. */
  boolean pollWakePending() {
    return runtime.wake().isSignalled();
  }

  /** For tests: whether the lease renewer was told that the task stops. */
  boolean renewerStopping() {
    return runtime.renewer().isStopping();
  }

  String owner() {
    return config.settings().owner();
  }

  /** Instance keys for a log line: comma-separated, each escaped (bidi and line separators). */
  private static String printable(Collection<String> instanceKeys) {
    return instanceKeys.stream().map(Printable::escape).collect(Collectors.joining(","));
  }
}
