package dev.outboxrelay.connect;

import dev.outboxrelay.mapping.MappingResult;
import dev.outboxrelay.mapping.OutboxHeaders;
import dev.outboxrelay.mapping.RecordMapper;
import dev.outboxrelay.mapping.SourceOffsets;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.ParkRequest;
import dev.outboxrelay.writer.Printable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Predicate;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Both ends of a record's trip through Connect: claimed rows become records entered in the ledger
 * (an unpublishable row goes to the dead-letter topic, or straight to FAILED), and Kafka's
 * acknowledgement of a record becomes the outcome its row should record.
 *
 * <p>Exactly-once: each record moves to its bucket's source partition with the row's position in
 * its offset, and an unpublishable row is parked FAILED <em>before</em> its batch is handed over
 * (its dead-letter record, when configured, still goes in the batch's transaction). A claim is
 * {@linkplain #position positioned} on whichever thread claimed it, and its parks are written on
 * the task thread when it is {@linkplain #handOver handed over}, not before: a batch that never
 * leaves (the task stopped first) parks nothing, so no row ends FAILED without its dead-letter
 * record; the next instance's recovery releases its rows. A batch's parks are one statement, all or
 * none; until it is written the batch is held and nothing claimed after it is handed over: a later
 * record of the bucket would otherwise cover the position of a row that was never sent
 * (docs/design.md). A held batch that a stop forgets after its parks were written (their reply
 * lost, or a stop on another thread as they ran) leaves those rows FAILED without their dead-letter
 * records: each is reported and counted as failed (a row is counted dead-lettered when its record
 * leaves with its batch).
 */
final class RecordHandoff {
  private static final Logger log = LoggerFactory.getLogger(RecordHandoff.class);

  private final RecordMapper mapper;
  private final InFlightLedger ledger;
  private final Predicate<PendingOutcome> submit;
  private final RelayMetrics metrics;
  private final String owner;
  private final ExactlyOnceState exactlyOnce;
  private final OutboxStore store;

  /**
   * Exactly-once: the batch being handed over whose parks are not all written yet, or null. Set and
   * cleared by the task thread; {@link #forgetHeld} (a stop) may take it from any thread.
   */
  private final AtomicReference<Positioned> held = new AtomicReference<>();

  /** Set by {@link #forgetHeld}: a batch handed over after it is forgotten, not parked. */
  private volatile boolean stopped;

  /** {@link RecordMapper#map}, or a test's stand-in for a mapping that throws. */
  private volatile Function<ClaimedMessage, MappingResult> map;

  RecordHandoff(
      RecordMapper mapper,
      InFlightLedger ledger,
      Predicate<PendingOutcome> submit,
      RelayMetrics metrics,
      String owner) {
    this(mapper, ledger, submit, metrics, owner, null, null);
  }

  /**
   * @param exactlyOnce the task's exactly-once state, or null in at-least-once mode
   * @param store where an exactly-once batch parks its unpublishable rows, on the task thread
   */
  RecordHandoff(
      RecordMapper mapper,
      InFlightLedger ledger,
      Predicate<PendingOutcome> submit,
      RelayMetrics metrics,
      String owner,
      ExactlyOnceState exactlyOnce,
      OutboxStore store) {
    this.exactlyOnce = exactlyOnce;
    this.store = store;
    this.mapper = mapper;
    this.map = mapper::map;
    this.ledger = ledger;
    this.submit = submit;
    this.metrics = metrics;
    this.owner = owner;
  }

  /**
   * The records to hand to Connect for these claimed rows; every row enters the ledger. Exactly
   * once, on the task thread: {@link #position}, then {@link #handOver}.
   */
  List<SourceRecord> toRecords(List<ClaimedMessage> claimed) {
    if (exactlyOnce != null) {
      List<SourceRecord> records = handOver(position(claimed));
      handedOver(records);
      return records;
    }
    List<SourceRecord> records = new ArrayList<>(claimed.size());
    for (Mapping m : mapAll(claimed)) {
      ClaimedMessage row = m.row();
      ledger.add(row); // an unpublishable row's outcome is awaited too, its copy's or its park's
      if (m.result() instanceof MappingResult.Mapped mapped) {
        records.add(mapped.record());
      } else if (m.result() instanceof MappingResult.Unpublishable bad) {
        logUnpublishable(row, bad.reasonCode());
        if (m.deadLetter() != null) {
          records.add(m.deadLetter());
        } else if (!submit.test(
            new PendingOutcome.Failed(row.messageId(), row.lease(), bad.reasonCode(), null))) {
          metrics.lateAcks.incrementAndGet();
          log.warn(
              "Outcome not queued, the outcome writer has stopped: message_id={} (reason=LATE_ACK;"
                  + " a later claim or the next instance's recovery settles the row)",
              Printable.escape(row.messageId()));
        }
      }
    }
    return records;
  }

  /** Exactly-once: whether a batch waits for its parks (then {@link #releaseHeld} first). */
  boolean hasHeld() {
    return held.get() != null;
  }

  /**
   * Exactly-once, on the task thread: writes the batch's parks, then returns its records to hand
   * over.
   *
   * @throws dev.outboxrelay.store.OutboxStoreException if a park cannot be written; the batch stays
   *     held, and {@link #releaseHeld} goes on with it (a ConnectException naming the rows when the
   *     database refused them for good)
   */
  List<SourceRecord> handOver(Positioned batch) {
    if (batch.parks.isEmpty()) {
      return batch.records;
    }
    if (!held.compareAndSet(null, batch)) {
      throw new IllegalStateException("a held batch leaves before any later one");
    }
    if (stopped) {
      // Its parks unwritten, the stop gives its rows back. Checked once it is held: a stop on
      // another thread before that found nothing held, and one after it forgets it itself.
      forgetHeld().run(); // nothing to ask: no park of it was tried
      return List.of();
    }
    return releaseHeld();
  }

  /**
   * Exactly-once: writes the held batch's parks, all in one statement, then hands its records over
   * (none when a stop {@linkplain #forgetHeld forgot} the batch meanwhile).
   *
   * @throws dev.outboxrelay.store.OutboxStoreException if the parks cannot be written; the batch
   *     stays held (a ConnectException naming the rows when the database refused them for good)
   */
  List<SourceRecord> releaseHeld() {
    Positioned batch = held.get();
    if (batch == null) {
      return List.of();
    }
    if (!batch.parks.isEmpty()) {
      if (!batch.beginAttempt()) {
        return List.of(); // forgotten: the stop reported what an earlier attempt left uncertain
      }
      boolean retried = batch.mayHaveParked;
      List<Outcome> outcomes;
      try {
        outcomes = store.park(requests(batch.parks));
        if (retried) {
          outcomes = withOwnLostReply(batch.parks, outcomes);
        }
      } catch (RuntimeException e) {
        // One that may have committed (its reply lost), or an earlier one, leaves the batch's rows
        // uncertain: whoever ends the batch asks, once. One the database refused parked none.
        batch.mayHaveParked |= mayHaveCommitted(e);
        if (batch.mayHaveParked && !batch.awaitUncertain(batch.parks)) {
          reportIfParked(batch.parks); // a stop forgot the batch while the parks ran
        }
        if (!batch.mayHaveParked && e instanceof OutboxStoreException failure) {
          throw refusedFor(batch.parks, failure);
        }
        throw e;
      }
      List<Park> written = List.copyOf(batch.parks);
      batch.parks.clear();
      for (int i = 0; i < written.size(); i++) {
        parked(batch, written.get(i), outcomes.get(i));
      }
    }
    if (!held.compareAndSet(batch, null)) {
      return List.of(); // forgotten meanwhile: forgetHeld reported its parks
    }
    return batch.toSend(); // its dead letters are counted when Connect takes them (handedOver)
  }

  /** How many of a refused batch's rows its failure names. */
  static final int NAMED_PARKS = 10;

  /**
   * A refusal of the parks that changed nothing names their rows: refused for good by a row's value
   * (a constraint or a trigger of an adopted table), it failed the task naming none, and every
   * restart claimed the same rows and failed alike. Not parked one at a time to find the row: those
   * parked before it would end FAILED without their dead-letter records when the stop gives the
   * batch back.
   */
  private RuntimeException refusedFor(List<Park> parks, OutboxStoreException failure) {
    boolean byARow =
        failure.sqlState() != null // the server's refusal, not the driver's or the pool's
            && (failure.kind() == OutboxStoreException.Kind.INVALID_DATA
                || failure.kind() == OutboxStoreException.Kind.INTERNAL);
    if (!byARow) {
      return failure; // the statement's, not a row's: a privilege, the schema, an outage
    }
    if (parks.size() == 1) {
      return failure.ofMessage(parks.get(0).row.messageId()); // counted by the poll, as any
    }
    metrics.databaseErrors.incrementAndGet(); // not a store failure to the poll: counted here
    List<String> ids =
        parks.stream().limit(NAMED_PARKS).map(p -> Printable.escape(p.row.messageId())).toList();
    return new ConnectException(
        "outbox-relay: "
            + failure.getMessage()
            + " for one of the "
            + parks.size()
            + " rows parked together, none of which was parked: message_ids="
            + String.join(", ", ids)
            + (parks.size() > NAMED_PARKS ? ", ..." : "")
            + "; a check or trigger of the table that refuses status FAILED? The rows are given"
            + " back at the stop (reason=PARK_REFUSED)");
  }

  /** What a written park of {@code batch} came to. */
  private void parked(Positioned batch, Park park, Outcome outcome) {
    if (outcome == Outcome.CLAIM_LOST) {
      metrics.claimLost.incrementAndGet();
      // Nor its dead-letter copy: the row is another owner's (or an operator's) now.
      boolean unsent = park.deadLettered && batch.dropDeadLetter(park.row.messageId());
      if (unsent) { // never Connect's: no acknowledgement will settle it
        ledger.resolveParked(park.row.messageId(), park.row.lease().token());
      }
      log.warn(
          "Claim lost before parking: message_id={} instance_key={} (reason=LEASE_TAKEN_OVER{})",
          Printable.escape(park.row.messageId()),
          Printable.escape(park.row.instanceKey()),
          unsent ? "; its dead-letter record is not sent" : "");
    } else if (park.deadLettered) {
      // Counted once its dead-letter record leaves with the batch; reported if it never does.
      if (!batch.awaitRelease(park)) {
        reportUnsent(park);
      }
    } else {
      metrics.failed.incrementAndGet();
    }
  }

  /** Whether a failed write may have committed: any failure but the store's own saying not. */
  private static boolean mayHaveCommitted(RuntimeException e) {
    return !(e instanceof OutboxStoreException failure) || failure.mayHaveCommitted();
  }

  private static List<ParkRequest> requests(List<Park> parks) {
    return parks.stream().map(Park::request).toList();
  }

  /** Exactly-once: these records went to Connect; counts the dead letters among them. */
  void handedOver(List<SourceRecord> records) {
    metrics.deadLettered.addAndGet(records.stream().filter(SourceOffsets::isParked).count());
  }

  /**
   * Exactly-once: these records will never go to Connect (a stop came after their parks were
   * written): they leave the ledger, and each dead letter among them is reported as a park whose
   * batch never left.
   */
  void forgetUnsent(List<SourceRecord> records) {
    forget(records);
    for (SourceRecord record : records) {
      if (SourceOffsets.isParked(record)) {
        metrics.failed.incrementAndGet();
        log.warn( // as reportUnsent says it
            "Parked FAILED without its dead-letter record, the task stopped before its batch left:"
                + " message_id={} instance_key={} reason={} (requeue it to send it again)",
            Printable.escape(SourceOffsets.messageId(record)),
            Printable.escape(
                String.valueOf(record.sourcePartition().get(SourceOffsets.INSTANCE_KEY))),
            failureReasonOf(record));
      }
    }
  }

  /** The reason code a dead-letter record carries (its header: it never reached a transform). */
  private static String failureReasonOf(SourceRecord record) {
    Header reason = record.headers().lastWithName(OutboxHeaders.FAILURE_REASON);
    return reason != null && reason.value() instanceof String code ? code : "UNKNOWN";
  }

  /**
   * Retried parks that found their rows gone: whether the failed attempt committed all the same
   * (the connection lost at COMMIT, as in a failover). A row FAILED with its park's reason, under
   * its token and its claim's position (this instance's epoch), was parked by it: applied. Without
   * this it was reported a lost claim, and its dead-letter record, which leaves with the batch,
   * went uncounted.
   */
  private List<Outcome> withOwnLostReply(List<Park> parks, List<Outcome> outcomes) {
    List<Park> lost = new ArrayList<>();
    for (int i = 0; i < parks.size(); i++) {
      if (outcomes.get(i) == Outcome.CLAIM_LOST) {
        lost.add(parks.get(i));
      }
    }
    if (lost.isEmpty()) {
      return outcomes;
    }
    Set<String> own = store.parkedUnderOwnLease(requests(lost));
    List<Outcome> judged = new ArrayList<>(outcomes);
    for (int i = 0; i < parks.size(); i++) {
      ClaimedMessage row = parks.get(i).row;
      if (judged.get(i) == Outcome.CLAIM_LOST && own.contains(row.messageId())) {
        judged.set(i, Outcome.APPLIED);
        log.info(
            "A retried park found its row parked by its own earlier attempt, whose reply was lost:"
                + " message_id={} instance_key={} (reason=WRITE_REPLY_LOST)",
            Printable.escape(row.messageId()),
            Printable.escape(row.instanceKey()));
      }
    }
    return judged;
  }

  /**
   * A row parked FAILED whose dead-letter record will never be sent: the task stopped before its
   * batch left (its parks' reply was lost, or a stop on another thread came as they were written).
   * The row stays FAILED with its reason (a requeue sends it again); counted as failed, not
   * dead-lettered.
   */
  private void reportUnsent(Park park) {
    metrics.failed.incrementAndGet();
    log.warn(
        "Parked FAILED without its dead-letter record, the task stopped before its batch left:"
            + " message_id={} instance_key={} reason={} (requeue it to send it again)",
        Printable.escape(park.row.messageId()),
        Printable.escape(park.row.instanceKey()),
        park.reasonCode);
  }

  /**
   * Exactly-once, at a stop: a batch that was never handed over leaves the ledger (Kafka will never
   * acknowledge it; its rows stay leased under positions no committed offset covers, and the stop
   * gives them back, or else the next instance's recovery releases them). Without this the outcome
   * writer would wait for them until the end of the late-acknowledgement grace.
   */
  void forget(Positioned batch) {
    forget(batch.records);
  }

  /**
   * Exactly-once: Connect settled the dead-letter record of a parked row (acknowledged it after its
   * transaction committed, or found it dropped): no longer counted against the task's limits. On
   * the task thread, between polls, so the next poll sees the room.
   */
  void parkedRecordSettled(SourceRecord record) {
    ledger.resolveParked(SourceOffsets.messageId(record), SourceOffsets.leaseToken(record));
  }

  /** Exactly-once: {@link #forget} these records, which are not handed over. */
  void forget(List<SourceRecord> records) {
    for (SourceRecord record : records) {
      if (SourceOffsets.isParked(record)) {
        ledger.resolveParked(SourceOffsets.messageId(record), SourceOffsets.leaseToken(record));
      } else {
        ledger.resolve(SourceOffsets.messageId(record), SourceOffsets.leaseToken(record));
      }
    }
  }

  /**
   * Exactly-once, at a stop: {@link #forget} the held batch, if any; it is not handed over. Returns
   * what is left to ask the database, which may wait (for a pooled connection during an outage):
   * whether parks whose reply was lost committed ({@link TaskRuntime#NOTHING_TO_ASK} if none).
   */
  Runnable forgetHeld() {
    stopped = true;
    Positioned batch = held.getAndSet(null);
    if (batch == null) {
      return TaskRuntime.NOTHING_TO_ASK;
    }
    forget(batch);
    batch.forgetParked().forEach(this::reportUnsent);
    List<Park> uncertain = batch.forgetUncertain();
    return uncertain.isEmpty() ? TaskRuntime.NOTHING_TO_ASK : () -> reportIfParked(uncertain);
  }

  /**
   * Parks whose write threw, in a batch that will never leave: the write may have committed all the
   * same (the reply lost at COMMIT). Each row parked is reported as any park of such a batch (a
   * dead-lettered one as parked without its dead-letter record); whether they were cannot always be
   * asked (the database away), and then that is said, row by row.
   */
  private void reportIfParked(List<Park> parks) {
    Set<String> parked;
    try {
      parked = store.parkedUnderOwnLease(requests(parks));
    } catch (RuntimeException e) {
      for (Park park : parks) {
        log.warn(
            "A park whose reply was lost may have parked its row FAILED without its dead-letter"
                + " record, if one was due, the task stopped before its batch left: message_id={}"
                + " instance_key={} reason={} (reason=WRITE_REPLY_LOST; requeue it if it is FAILED"
                + " and should be sent)",
            Printable.escape(park.row.messageId()),
            Printable.escape(park.row.instanceKey()),
            park.reasonCode);
      }
      return;
    }
    for (Park park : parks) {
      if (!parked.contains(park.row.messageId())) {
        continue;
      }
      if (park.deadLettered) {
        reportUnsent(park);
      } else {
        metrics.failed.incrementAndGet(); // parked as meant: no dead-letter record was due
      }
    }
  }

  /**
   * Exactly-once, on any thread: maps a claim's rows to records at their positions, entering the
   * publishable ones in the ledger; the parks of the unpublishable ones are written at {@link
   * #handOver}.
   */
  Positioned position(List<ClaimedMessage> claimed) {
    List<SourceRecord> records = new ArrayList<>(claimed.size());
    List<Park> parks = new ArrayList<>();
    for (Mapping m : mapAll(claimed)) {
      ClaimedMessage row = m.row();
      if (m.result() instanceof MappingResult.Mapped mapped) {
        ledger.add(row);
        records.add(exactlyOnce.atPosition(mapped.record(), row, false));
      } else if (m.result() instanceof MappingResult.Unpublishable bad) {
        logUnpublishable(row, bad.reasonCode());
        boolean deadLetter = m.deadLetter() != null;
        parks.add(
            new Park(row, bad.reasonCode(), deadLetter, exactlyOnce.epoch(), exactlyOnce.batch()));
        if (deadLetter) {
          ledger.addParked(row); // awaited as any record: counted against the task's limits
          records.add(exactlyOnce.atPosition(m.deadLetter(), row, true));
        }
      }
    }
    return new Positioned(records, parks);
  }

  /** For tests: mapping the rows {@code which} picks throws (a mapping with a bug) from now on. */
  void failMappingOf(Predicate<ClaimedMessage> which) {
    Function<ClaimedMessage, MappingResult> mapping = map;
    map =
        row -> {
          if (which.test(row)) {
            throw new IllegalStateException("a bug");
          }
          return mapping.apply(row);
        };
  }

  /** For tests: rows are mapped by {@code standIn} (a mapping with a bug) from now on. */
  void mapWith(Function<ClaimedMessage, MappingResult> standIn) {
    map = standIn;
  }

  /** A claimed row, what mapping made of it, and its dead-letter record when one is due. */
  private record Mapping(ClaimedMessage row, MappingResult result, SourceRecord deadLetter) {}

  /**
   * Every row of a claim mapped before any enters the ledger: a mapping that throws (a bug) leaves
   * nothing behind to be waited for, renewed or settled at a stop, and the claim can be given back
   * whole.
   *
   * @throws MappingFailedException naming the row and the error's class (its message may quote the
   *     row's data)
   */
  private List<Mapping> mapAll(List<ClaimedMessage> claimed) {
    List<Mapping> all = new ArrayList<>(claimed.size());
    Function<ClaimedMessage, MappingResult> mapping =
        map; // once a claim, not a volatile read a row
    for (ClaimedMessage row : claimed) {
      try {
        MappingResult result = mapping.apply(row);
        SourceRecord deadLetter =
            result instanceof MappingResult.Unpublishable bad
                    && mapper.settings().hasDeadLetterTopic()
                ? mapper.deadLetter(row, bad.reasonCode())
                : null;
        all.add(new Mapping(row, result, deadLetter));
      } catch (RuntimeException | StackOverflowError e) { // NOPMD: a bug, reported by its class
        // A stack overflow too: the mapping recurses into the payload as deep as the nesting the
        // mappers accept (900 levels), which a thread stack of well under the JVM's default 1 MB
        // cannot hold. Unwound by now, it fails this row's mapping, parked and named, not the task
        // with a trace that names no row.
        logWhereMappingThrew(row, e);
        throw new MappingFailedException(row, e);
      }
    }
    return all;
  }

  /** Frames shown of a mapping that threw: enough to find the bug, not a recursion's thousand. */
  private static final int MAPPING_FRAMES = 30;

  /**
   * Where the mapping threw, for the report the failure asks for: its class and frames, never its
   * message (it may quote the row's data), which the task's status and Connect's trace leave out.
   */
  private static void logWhereMappingThrew(ClaimedMessage row, Throwable e) {
    StackTraceElement[] frames = e.getStackTrace();
    log.error(
        "Mapping message_id={} instance_key={} to a record threw {} (reason=MAPPING_FAILED) at {}",
        Printable.escape(row.messageId()),
        Printable.escape(row.instanceKey()),
        e.getClass().getName(),
        Arrays.toString(Arrays.copyOf(frames, Math.min(frames.length, MAPPING_FRAMES))));
  }

  private static void logUnpublishable(ClaimedMessage row, String reasonCode) {
    log.warn(
        "Message cannot be published: message_id={} instance_key={} reason={}",
        Printable.escape(row.messageId()),
        Printable.escape(row.instanceKey()),
        reasonCode);
  }

  /** A row to park, with the position ({@code epoch}, {@code batch}) of the claim that took it. */
  private record Park(
      ClaimedMessage row, String reasonCode, boolean deadLettered, long epoch, long batch) {
    ParkRequest request() {
      return new ParkRequest(row.messageId(), row.seq(), row.lease(), reasonCode, epoch, batch);
    }
  }

  /** Exactly-once: a claim's records, and the parks to write before they may leave. */
  static final class Positioned {
    static final Positioned EMPTY = new Positioned(List.of(), new ArrayList<>());

    private final List<SourceRecord> records;

    /** The parks to write before the batch leaves; emptied once they are (task thread only). */
    private final List<Park> parks;

    /** Dead-lettered parks written while the batch is held; guarded by this. */
    private final List<Park> parked = new ArrayList<>();

    /**
     * Message ids whose dead-letter records are not to be sent (their claims were lost); guarded by
     * this.
     */
    private final Set<String> droppedDeadLetters = new HashSet<>();

    private boolean forgotten;

    /**
     * Whether an attempt of the parks threw after it may have committed (its reply lost), so that
     * rows may be parked already (task thread only).
     */
    private boolean mayHaveParked;

    private Positioned(List<SourceRecord> records, List<Park> parks) {
      this.records = records;
      this.parks = parks;
    }

    /**
     * The parks whose last write threw, which may have committed; guarded by this. Kept until their
     * next attempt begins (the task thread then answers for them) or the batch is forgotten ({@link
     * #forgetUncertain}): one of the two reports them, never both.
     */
    private List<Park> uncertain = List.of();

    /** Keeps parks whose write threw; false once the batch was forgotten. */
    private synchronized boolean awaitUncertain(List<Park> parks) {
      if (forgotten) {
        return false;
      }
      uncertain = List.copyOf(parks);
      return true;
    }

    /**
     * The parks' attempt begins: false once the batch was forgotten (park none of it); otherwise
     * the attempt answers for an earlier one's uncertain parks.
     */
    private synchronized boolean beginAttempt() {
      if (forgotten) {
        return false;
      }
      uncertain = List.of();
      return true;
    }

    /** The batch will never leave: the parks whose write threw, if any (forgotten already). */
    private synchronized List<Park> forgetUncertain() {
      List<Park> parks = uncertain;
      uncertain = List.of();
      return parks;
    }

    /** Keeps a written dead-lettered park until the batch leaves; false once it was forgotten. */
    private synchronized boolean awaitRelease(Park park) {
      if (forgotten) {
        return false;
      }
      parked.add(park);
      return true;
    }

    /**
     * Leaves the dead-letter record of {@code messageId} out of what the batch sends; false if it
     * has none. The records themselves stay as they are: a stop may read them from another thread
     * ({@link #forgetHeld}).
     */
    private synchronized boolean dropDeadLetter(String messageId) {
      boolean present = records.stream().anyMatch(r -> isDeadLetterOf(r, messageId));
      if (present) {
        droppedDeadLetters.add(messageId);
      }
      return present;
    }

    /** The records to hand over: all but the dropped dead letters. */
    private synchronized List<SourceRecord> toSend() {
      if (droppedDeadLetters.isEmpty()) {
        return records;
      }
      return records.stream()
          .filter(r -> droppedDeadLetters.stream().noneMatch(id -> isDeadLetterOf(r, id)))
          .toList();
    }

    private static boolean isDeadLetterOf(SourceRecord record, String messageId) {
      return SourceOffsets.isParked(record) && messageId.equals(SourceOffsets.messageId(record));
    }

    /** The batch will never leave: the dead-lettered parks already written. */
    private synchronized List<Park> forgetParked() {
      forgotten = true;
      List<Park> unsent = List.copyOf(parked);
      parked.clear();
      return unsent;
    }

    /** Records without parks (tests). */
    static Positioned of(List<SourceRecord> records) {
      return new Positioned(records, new ArrayList<>());
    }

    List<SourceRecord> records() {
      return records;
    }

    boolean isEmpty() {
      return records.isEmpty() && parks.isEmpty();
    }
  }

  /**
   * What an acknowledgement of {@code record} records. Only metadata with an offset proves a write:
   * none means a drop or a tolerated failure, and an offset of -1 a producer with acks=0. A
   * dead-letter copy is told by the record itself ({@link RecordMapper#deadLetterReasonOf}), not by
   * the ledger's entry of its row: the same owner's second claim of a row under the same token (the
   * first lost in a database crash) replaces the entry and may map otherwise, and a dead-letter
   * copy's acknowledgement was then recorded PUBLISHED, at the dead-letter topic's coordinates.
   */
  PendingOutcome outcomeOf(
      SourceRecord record, String messageId, long seq, long token, RecordMetadata metadata) {
    Lease lease = new Lease(owner, token);
    String deadLetterReason = mapper.deadLetterReasonOf(record);
    if ((metadata == null || !metadata.hasOffset()) && deadLetterReason != null) {
      // The row is unpublishable whatever became of its dead-letter record: parked FAILED with its
      // own reason, not retried into EXHAUSTED under DELIVERY_UNCONFIRMED, which hid that reason.
      log.warn(
          "Dead-letter record not confirmed by Kafka: message_id={} instance_key={} reason={};"
              + " the row is parked FAILED with that reason",
          Printable.escape(messageId),
          Printable.escape(
              String.valueOf(record.sourcePartition().get(SourceOffsets.INSTANCE_KEY))),
          Printable.escape(deadLetterReason));
      return new PendingOutcome.Failed(messageId, lease, deadLetterReason, null);
    }
    if (metadata == null) {
      return new PendingOutcome.Unconfirmed(
          messageId, lease, PendingOutcome.Unconfirmed.NO_METADATA);
    }
    if (!metadata.hasOffset()) {
      return new PendingOutcome.Unconfirmed(messageId, lease, PendingOutcome.Unconfirmed.NO_OFFSET);
    }
    if (deadLetterReason != null) {
      return new PendingOutcome.Failed(
          messageId,
          lease,
          deadLetterReason,
          new KafkaCoordinates(metadata.topic(), metadata.partition(), metadata.offset()));
    }
    return new PendingOutcome.Published(
        messageId,
        seq,
        lease,
        new KafkaCoordinates(metadata.topic(), metadata.partition(), metadata.offset()));
  }
}
