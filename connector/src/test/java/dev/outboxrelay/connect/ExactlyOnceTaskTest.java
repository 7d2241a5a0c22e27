package dev.outboxrelay.connect;

import static dev.outboxrelay.connect.OutboxSourceTaskTest.assertPollFailed;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.mapping.SourceOffsets;
import dev.outboxrelay.mapping.UnpublishableReasons;
import dev.outboxrelay.store.BucketShare;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.CommittedPosition;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.ManualClock;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.ParkRequest;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.ReasonCodes;
import dev.outboxrelay.store.Recoveries;
import dev.outboxrelay.store.Recovery;
import dev.outboxrelay.store.RecoveryPage;
import dev.outboxrelay.store.RecoveryRequest;
import dev.outboxrelay.store.memory.InMemoryOutboxStore;
import dev.outboxrelay.store.memory.InMemoryOutboxStore.RowState;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.writer.OutboxMessage;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTaskContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The exactly-once task against the in-memory store and a stand-in for Connect's offset reader:
 * recovery before the first claim, records at their bucket's partition and position, and a batch
 * held until its unpublishable rows are parked. The Connect-cluster tests run the same end to end.
 */
class ExactlyOnceTaskTest {
  private static final int BUCKETS = 4;

  /** A previous instance of the task under test: its owner begins as this connector's do. */
  private static final String PREVIOUS = "outbox-relay/task-0/previous";

  private static final BucketShare ALL = new BucketShare(BUCKETS, 0, 1);

  private final ManualClock clock = new ManualClock(Instant.parse("2026-12-01T12:00:00Z"));
  private final ConnectOffsetStore committedOffsets = new ConnectOffsetStore();
  private InMemoryOutboxStore store;

  /** Whether {@code markFailed} fails as in an outage. */
  private volatile boolean markFailedFails;

  private volatile boolean parksFail;

  /** A park statement holding this row is refused for good, as a trigger of an adopted table. */
  private volatile String parkRefusedFor;

  /** The refusal's SQLState: the server's (a trigger's P0001), or none (a pool's, nothing sent). */
  private volatile String parkRefusalState = "P0001";

  /** While set, park statements fail before anything is sent (no connection from the pool). */
  private volatile boolean parksFailBeforeSending;

  /** Park statements the task ran (each parks a batch's unpublishable rows). */
  private final AtomicInteger parkStatements = new AtomicInteger();

  private volatile boolean epochsFail;

  /** The last task's store provider: its schema checks fail on demand. */
  private FixedStoreProvider provider;

  private volatile int claimResultsLost;

  /** While set, a claim of a suspect alone fails as PostgreSQL's NOWAIT on a locked row does. */
  private volatile boolean suspectsLocked;

  /** Every claim the task asked for, in order. */
  private final List<ClaimRequest> claims = new java.util.concurrent.CopyOnWriteArrayList<>();

  /** Sweeps (recoveries of expired leases only) that fail as in an outage. */
  /** The SQLState the next sweep fails with, once; null for none. */
  private volatile String sweepFailure;

  /** How long the failing sweep takes (on the task's MockTime) before it fails: 0 for none. */
  private volatile long sweepFailsAfterMs;

  /** Sweep pages asked for (recoveries of expired leases only), failed ones included. */
  private final AtomicInteger sweepPages = new AtomicInteger();

  /** Rows a recovery page reads at most, when above 0: many pages from a small backlog. */
  private volatile int recoveryPageRows;

  /** Recoveries that commit, then fail as if their reply was lost. */
  private volatile int recoveryRepliesLost;

  /** Recoveries that reply having settled nothing and change nothing: lost by the database. */
  private volatile int recoveriesLost;

  /** While set, PUBLISHED writes reply APPLIED but change nothing: lost by the database. */
  private volatile boolean publishesLost;

  private final AtomicInteger lostPublishes = new AtomicInteger();

  /** Parks that commit, then fail as if their reply was lost. */
  private volatile int parkRepliesLost;

  /** Reads of whether a park committed under its own lease that fail as in an outage. */
  private volatile int ownParkChecksFail;

  /** Per read of whether a park committed under its own lease: whether renewals had stopped. */
  private final List<Boolean> renewerStoppedAtParkChecks = new CopyOnWriteArrayList<>();

  /** When set, {@code park} counts the first down and waits for the second before it runs. */
  private volatile CountDownLatch[] parkPause;

  /** As {@link #parkPause}, for the question whether a park committed. */
  private volatile CountDownLatch[] parkCheckPause;

  /** While set, reading the committed offsets fails at once (the offsets topic refused). */
  private volatile boolean offsetsUnreadable;

  private final AtomicInteger offsetReads = new AtomicInteger();

  private OutboxSourceTask task;
  private Time time = Time.SYSTEM;
  private final AtomicInteger storeCloses = new AtomicInteger();

  /** Releases of every row leased and not held, which read the keys' whole due backlog. */
  private final AtomicInteger unheldReleases = new AtomicInteger();

  @BeforeEach
  void setUp() {
    store = new InMemoryOutboxStore(clock);
  }

  @AfterEach
  void tearDown() {
    if (task != null) {
      task.stop();
    }
  }

  /**
   * Committed offsets that cannot be read are read again after a pause, not at once: Connect polls
   * again right after a retriable failure, and a read that failed fast spun in a tight loop.
   */
  @Test
  void unreadableCommittedOffsetsAreReadAgainAfterAPauseNotAtOnce() throws Exception {
    offsetsUnreadable = true;
    long mark = LogCapture.get().mark();
    start(Map.of("poll.interval.ms", "10000"));
    // The pause's end is judged by the test's clock (a poll still waits one real slice at most).
    AtomicLong pauseClock = new AtomicLong();
    task.pollPause().judgeBy(pauseClock::get);
    assertEquals(1, offsetReads.get(), "read as the epoch was taken, in vain");
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=OFFSETS_UNREADABLE"))
            .size());

    assertThrows(RetriableException.class, task::poll);
    assertEquals(2, offsetReads.get());
    assertNull(task.poll(), "pausing");
    assertEquals(2, offsetReads.get(), "not read again before the pause ends");

    offsetsUnreadable = false;
    pauseClock.addAndGet(Duration.ofMillis(9_999).toNanos());
    assertNull(task.poll(), "pausing still");
    assertEquals(2, offsetReads.get());
    pauseClock.addAndGet(Duration.ofMillis(1).toNanos());
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInSameThread()
        .until(() -> task.poll() == null && offsetReads.get() > 2);
  }

  /**
   * A mapping that throws (a bug) on the prefetch thread fails the task naming the row, parked
   * FAILED; at the stop the rest of its claim is given back, but not the row. Left to recovery, it
   * failed each next instance too, and with transaction.boundary=interval (no suspect isolated, so
   * never charged) for ever.
   */
  @ParameterizedTest(name = "transaction.boundary={0}")
  @ValueSource(strings = {"poll", "interval"})
  void aMappingThatThrowsParksItsRowAndGivesBackTheRest(String boundary) {
    add("a", "agg-1", 10);
    add("b", "agg-2", 10);
    Map<String, String> config = Map.of("transaction.boundary", boundary);
    start(config);
    task.handoff().failMappingOf(row -> row.messageId().equals("a"));

    RuntimeException e = assertThrows(RuntimeException.class, task::poll);
    Throwable failure = e instanceof MappingFailedException ? e : e.getCause();
    assertTrue(failure instanceof MappingFailedException, e::toString);
    assertEquals("a", ((MappingFailedException) failure).messageId());
    task.stop();

    await().until(() -> store.find("b").orElseThrow().status() == MessageStatus.PENDING);
    var failed = store.find("a").orElseThrow();
    assertEquals(MessageStatus.FAILED, failed.status(), "parked: it would fail every instance");
    assertEquals(ReasonCodes.MAPPING_FAILED, failed.lastFailureCode());
    assertNull(failed.leaseOwner());
    assertEquals(List.of("b"), nextRecords(start(config)), "the next instance fails on nothing");
  }

  /** Where the park cannot be written, the row is left leased to the next instance's recovery. */
  @Test
  void aMappingThatThrowsLeavesItsRowToRecoveryWhereItCannotBeParked() {
    add("a", "agg-1", 10);
    add("b", "agg-2", 10);
    start();
    task.handoff().failMappingOf(row -> row.messageId().equals("a"));
    markFailedFails = true;

    RuntimeException e = assertThrows(RuntimeException.class, task::poll);
    assertFalse(e instanceof RetriableException, "the task fails, the outage not retried: " + e);
    Throwable failure = e instanceof MappingFailedException ? e : e.getCause();
    assertTrue(failure instanceof MappingFailedException, e::toString);
    assertEquals("a", ((MappingFailedException) failure).messageId());
    task.stop();

    await().until(() -> store.find("b").orElseThrow().status() == MessageStatus.PENDING);
    var failed = store.find("a").orElseThrow();
    assertEquals(MessageStatus.IN_FLIGHT, failed.status(), "left to the next instance's recovery");
    assertTrue(failed.leaseExpiresAt().isAfter(clock.now()), "its lease as claimed");
  }

  @Test
  void recoversBeforeTheFirstClaimFromTheCommittedOffsets() {
    add("a", "agg-1", 10);
    add("b", "agg-1", 10);
    // A previous instance claimed both; Kafka committed a's record only.
    long old = store.newEpoch();
    List<ClaimedMessage> claimed = store.claim(previousClaim().exactlyOnce(old, 1, ALL)).claimed();
    ClaimedMessage a = claimed.get(0);
    commit(a, old, 1);

    List<SourceRecord> records = start().poll();

    assertEquals(List.of("b"), records.stream().map(SourceOffsets::messageId).toList());
    assertEquals(MessageStatus.PUBLISHED, store.find("a").orElseThrow().status());
    assertEquals(
        ReasonCodes.RECOVERED_FROM_OFFSETS, store.find("a").orElseThrow().lastFailureCode());
    assertEquals(1, task.metrics().recoveredPublished.get());
    assertEquals(1, task.metrics().recoveredReleased.get());
  }

  /**
   * An offset whose epoch is not below the starting instance's cannot come from this database's
   * history (a restored or moved database): it is named at the start, with the remedy.
   */
  @Test
  void anOffsetOfALaterEpochThanTheInstancesIsNamedAtStart() {
    add("a", "agg-1", 10);
    long old = store.newEpoch();
    ClaimedMessage a = store.claim(previousClaim().exactlyOnce(old, 1, ALL)).claimed().get(0);
    commit(a, old + 1_000_000, 7); // as the moved database's predecessor committed it
    long mark = LogCapture.get().mark();

    start().poll();

    List<LogCapture.Event> said =
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=OFFSET_FROM_LATER_EPOCH"));
    assertEquals(1, said.size(), said::toString);
    assertTrue(said.get(0).message().contains("instance_key=eu"), said.get(0).message());
    // Read after the epoch was taken, even at start: a successor may have fenced this instance
    // meanwhile, and a reset would then send its committed rows again.
    assertTrue(
        said.get(0).message().contains("unless another instance of this task runs"),
        said.get(0).message());
  }

  /**
   * After a restored database, another history's offset may carry the very epoch an instance takes
   * (transaction ids climb through it): it would cover that instance's own rows, uncommitted,
   * should it crash before committing their bucket. The start fails (a new epoch taken after the
   * offsets' read could be above a successor's); the restart takes a new one.
   */
  @Test
  void anOffsetAtTheEpochTakenAtStartFailsTheStartAndTheRestartRelays() {
    add("a", "agg-1", 10);
    long old = store.newEpoch();
    ClaimedMessage a = store.claim(previousClaim().exactlyOnce(old, 1, ALL)).claimed().get(0);
    store.release("a", a.lease());
    commit(a, old + 1, 7); // another history's, at the epoch start() takes

    ConnectException failed = assertThrows(ConnectException.class, this::start);
    assertTrue(
        failed.getMessage().contains("(reason=OFFSET_AT_INSTANCE_EPOCH)"), failed.getMessage());
    assertEquals(MessageStatus.PENDING, store.find("a").orElseThrow().status(), "nothing claimed");
    await("the failed start's store closed").until(() -> storeCloses.get() == 1);
    task = null;

    List<SourceRecord> records = start().poll();
    assertEquals(List.of("a"), records.stream().map(SourceOffsets::messageId).toList());
    assertTrue(SourceOffsets.epoch(records.get(0)) > old + 1, "a later epoch than the offset's");
  }

  /**
   * So does one committed by an earlier build under another key order at that epoch: ignored, the
   * instance relayed, and its successor (of a later epoch) read the offset and took the instance's
   * rows up to it for committed, sent or not.
   */
  @Test
  void anOffsetAtTheEpochTakenAtStartUnderAnEarlierKeyOrderFailsTheStart() {
    add("a", "agg-1", 10);
    long old = store.newEpoch();
    ClaimedMessage a = store.claim(previousClaim().exactlyOnce(old, 1, ALL)).claimed().get(0);
    store.release("a", a.lease());
    commit(
        SourceOffsets.bucketPartitionInEveryOrder("eu", ALL.bucketOf(a.aggregateHash()), BUCKETS)
            .get(1),
        a,
        old + 1,
        7); // an earlier build's, another history's, at the epoch start() takes

    ConnectException failed = assertThrows(ConnectException.class, this::start);
    assertTrue(
        failed.getMessage().contains("(reason=OFFSET_AT_INSTANCE_EPOCH)"), failed.getMessage());
    assertTrue(
        failed.getMessage().contains("create the connector anew under another name"),
        "no reset reaches it: " + failed.getMessage());
    assertEquals(MessageStatus.PENDING, store.find("a").orElseThrow().status(), "nothing claimed");
  }

  /**
   * Read at the first poll (Kafka away at start), such an offset fails the task: a new epoch taken
   * then could be below a successor's, whose rows in flight the recovery would release.
   */
  @Test
  void anOffsetAtTheInstancesEpochReadAtTheFirstPollFailsTheTask() {
    add("a", "agg-1", 10);
    long old = store.newEpoch();
    ClaimedMessage a = store.claim(previousClaim().exactlyOnce(old, 1, ALL)).claimed().get(0);
    store.release("a", a.lease());
    offsetsUnreadable = true;
    start();
    offsetsUnreadable = false;
    commit(a, old + 1, 7); // the epoch start() took, from another history

    ConnectException failed = assertThrows(ConnectException.class, task::poll);
    assertFalse(failed instanceof RetriableException, "fails the task");
    assertTrue(
        failed.getMessage().contains("(reason=OFFSET_AT_INSTANCE_EPOCH)"), failed.getMessage());
    assertEquals(MessageStatus.PENDING, store.find("a").orElseThrow().status(), "nothing claimed");
  }

  /**
   * A successor that fenced this instance before its first poll (which came late: a migration
   * backing off, a slow thread) and then committed under its later epoch is no other history of the
   * database: the offsets are read as the epoch is taken, in start(), and nothing tells an operator
   * to reset them (which would send every row in flight twice).
   */
  @Test
  void aSuccessorsOffsetCommittedBeforeTheFirstPollIsNotTakenForAnotherHistory() {
    add("a", "agg-1", 10);
    long mark = LogCapture.get().mark();
    OutboxSourceTask fenced = start();
    long successor = store.newEpoch();
    ClaimedMessage a = store.claim(previousClaim().exactlyOnce(successor, 1, ALL)).claimed().get(0);
    commit(a, successor, 1);

    fenced.poll();

    assertEquals(
        List.of(),
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=OFFSET_FROM_LATER_EPOCH")));
    assertEquals(
        MessageStatus.IN_FLIGHT, store.find("a").orElseThrow().status(), "the successor's");
  }

  /**
   * A start recovery of many pages reads a few per poll, each poll returning no records and soon
   * (Connect stops a task only once its poll returned), and nothing is claimed before its last
   * page: a claim made earlier would take due rows ahead of rows of their aggregates still leased
   * under a lower epoch, and its committed offset could cover them.
   */
  @Test
  void aStartRecoveryOfManyPagesClaimsNothingBeforeItsLastPage() {
    int rows = 2 * ExactlyOnceState.PAGES_PER_CALL + 1;
    for (int i = 0; i < rows; i++) {
      add("m" + (100 + i), "agg-" + i, 10);
    }
    long old = store.newEpoch();
    ClaimRequest previous =
        new ClaimRequest(PREVIOUS, Set.of("eu"), rows, Duration.ofSeconds(30), 5, true);
    assertEquals(rows, store.claim(previous.exactlyOnce(old, 1, ALL)).claimed().size());
    recoveryPageRows = 1;
    OutboxSourceTask t = start();

    assertNull(t.poll(), "a poll's pages read; more follow");
    assertEquals(ExactlyOnceState.PAGES_PER_CALL, count(MessageStatus.PENDING));
    assertEquals(rows - ExactlyOnceState.PAGES_PER_CALL, count(MessageStatus.IN_FLIGHT));
    assertNull(t.poll());
    assertEquals(1, count(MessageStatus.IN_FLIGHT), "the last row, on the last page");

    List<SourceRecord> records = t.poll();
    assertEquals(10, records.size(), "claimed once every page was read");
    assertEquals("m100", SourceOffsets.messageId(records.get(0)));
    assertEquals(rows, t.metrics().recoveredReleased.get());
  }

  /** The rows m100… of a test in {@code status}. */
  private long count(MessageStatus status) {
    return IntStream.range(100, 200)
        .mapToObj(i -> store.find("m" + i))
        .flatMap(Optional::stream)
        .filter(row -> row.status() == status)
        .count();
  }

  /**
   * A row leased under a later epoch than the starting task's (a database restored with rows in
   * flight restarts transaction ids lower): recovery leaves it, and the task counts it, since
   * nothing will ever recover it.
   */
  @Test
  void aRowLeasedUnderALaterEpochIsCountedAndLeftAtStart() {
    add("a", "agg-1", 10);
    store.claim(previousClaim().exactlyOnce(1_000_000_000L, 1, ALL));
    clock.advance(Duration.ofHours(1)); // its lease ran out long ago: nobody renews it

    List<SourceRecord> records = start().poll();

    assertTrue(records == null || records.isEmpty(), "nothing to claim");
    assertEquals(1, task.metrics().laterEpochRows.get());
    assertEquals(MessageStatus.IN_FLIGHT, store.find("a").orElseThrow().status());
  }

  /**
   * Another connector relaying the same instance key: its live claims are left to it at this task's
   * start (released, they were sent twice), counted and said once; once its lease runs out (its
   * task gone), a sweep releases the row like any abandoned one.
   */
  @Test
  void anotherConnectorsLiveClaimIsLeftAloneAtStart() {
    MockTime mockTime = new MockTime();
    time = mockTime;
    add("a", "agg-1", 10);
    long theirs = store.newEpoch();
    store.claim(
        new ClaimRequest("payments/task-0/other", Set.of("eu"), 1, Duration.ofSeconds(30), 5, true)
            .exactlyOnce(theirs, 1, ALL));
    long mark = LogCapture.get().mark();

    List<SourceRecord> records = start().poll();

    assertTrue(records == null || records.isEmpty(), "not claimed, not released");
    assertEquals(1, task.metrics().foreignLeasedRows.get());
    assertEquals("payments/task-0/other", store.find("a").orElseThrow().leaseOwner());
    assertEquals(0, task.metrics().recoveredReleased.get());
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=LEASED_BY_ANOTHER_CONNECTOR"))
            .size());

    clock.advance(Duration.ofMinutes(1)); // the other connector's lease runs out
    mockTime.sleep(Duration.ofMinutes(1).toMillis()); // a sweep is due
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () -> {
              List<SourceRecord> polled = task.poll();
              return polled != null
                  && polled.stream().map(SourceOffsets::messageId).toList().contains("a");
            });
    assertEquals(0, task.metrics().foreignLeasedRows.get());
    // Released, but not as a row Kafka never committed: the other connector may have sent it.
    assertEquals(0, task.metrics().recoveredReleased.get());
    assertEquals(1, task.metrics().abandonedReclaimed.get(), "a duplicate is possible");
    List<LogCapture.Event> released =
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.message().contains("message_id=a ")
                        && (e.message().contains("reason=FOREIGN_LEASE_RELEASED")
                            || e.message().contains("reason=NOT_COMMITTED")));
    assertEquals(1, released.size(), released::toString);
    assertEquals("WARN", released.get(0).level());
    assertTrue(released.get(0).message().contains("reason=FOREIGN_LEASE_RELEASED"));
  }

  /**
   * An instance that took its epoch late (its worker stalled between Connect's fencing and its
   * start) claims after this task started and fails on its first commit: its rows stay leased under
   * the later epoch, which no recovery takes. This task's sweep counts them without waiting for a
   * restart, and leaves them.
   */
  @Test
  void aSweepCountsRowsLeasedUnderALaterEpochAfterTheStart() {
    MockTime mockTime = new MockTime();
    time = mockTime;
    List<SourceRecord> first = start().poll();
    assertTrue(first == null || first.isEmpty(), "nothing to claim");
    assertEquals(0, task.metrics().laterEpochRows.get());
    aRowLeasedByALateInstance();
    mockTime.sleep(Duration.ofMinutes(1).toMillis()); // a sweep is due

    pollUntilASweepCountsLaterEpochRows(1);
    assertEquals(MessageStatus.IN_FLIGHT, store.find("a").orElseThrow().status());
  }

  /** Row "a", leased under a later epoch by a late instance whose lease ran out long ago. */
  private void aRowLeasedByALateInstance() {
    add("a", "agg-1", 10);
    store.claim(previousClaim().exactlyOnce(store.newEpoch(), 1, ALL));
    clock.advance(Duration.ofHours(1)); // nobody renews it
  }

  private void pollUntilASweepCountsLaterEpochRows(long rows) {
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () -> {
              task.poll();
              return task.metrics().laterEpochRows.get() == rows;
            });
  }

  /** The sweeps keep their interval when the worker's wall clock is stepped back (NTP). */
  @Test
  void aWallClockSteppedBackDoesNotStopTheSweeps() {
    long[] steppedBack = {0};
    MockTime mockTime =
        new MockTime() {
          @Override
          public long milliseconds() {
            return super.milliseconds() - steppedBack[0];
          }
        };
    time = mockTime;
    List<SourceRecord> first = start().poll();
    assertTrue(first == null || first.isEmpty(), "nothing to claim");
    aRowLeasedByALateInstance();
    steppedBack[0] = Duration.ofDays(1).toMillis();
    mockTime.sleep(Duration.ofMinutes(1).toMillis()); // a sweep is due, by the monotonic clock

    pollUntilASweepCountsLaterEpochRows(1);
  }

  /**
   * A recovery whose commit the database lost (a failover) leaves a committed row leased under the
   * earlier epoch. Once its lease has run out, the sweep records it PUBLISHED by the positions read
   * at the start; it released it, to be sent again.
   */
  @Test
  void aSweepRecordsPublishedWhatTheLostRecoveryWouldHave() {
    add("a", "agg-1", 10);
    long old = store.newEpoch();
    ClaimedMessage a = store.claim(previousClaim().exactlyOnce(old, 1, ALL)).claimed().get(0);
    commit(a, old, 1);
    recoveriesLost = 1;
    MockTime mockTime = new MockTime();
    time = mockTime;
    List<SourceRecord> first = start().poll();
    assertTrue(first == null || first.isEmpty(), "a is leased under the earlier epoch");
    assertEquals(MessageStatus.IN_FLIGHT, store.find("a").orElseThrow().status());
    clock.advance(Duration.ofHours(1)); // its lease ran out: nobody renews it
    mockTime.sleep(Duration.ofMinutes(1).toMillis()); // a sweep is due

    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () -> {
              List<SourceRecord> records = task.poll();
              assertTrue(records == null || records.isEmpty(), "a sent again");
              return store.find("a").orElseThrow().status() != MessageStatus.IN_FLIGHT;
            });
    assertEquals(MessageStatus.PUBLISHED, store.find("a").orElseThrow().status());
    assertEquals(
        ReasonCodes.RECOVERED_FROM_OFFSETS, store.find("a").orElseThrow().lastFailureCode());
  }

  /**
   * A PUBLISHED write that comes after the task's successor (which fenced it first) recorded the
   * row from the committed offsets is a lost claim, counted and logged, but not a possible
   * duplicate: exactly once, an acknowledgement comes only after the transaction committed.
   */
  @Test
  void aPublishAfterTheSuccessorsRecoveryIsALostClaimWithoutADuplicate() {
    add("a", "agg-1", 10);
    OutboxSourceTask t = start();
    SourceRecord a = t.poll().get(0);
    Map<String, ?> partition = a.sourcePartition();
    CommittedPosition committed =
        SourceOffsets.committedPosition(
                (String) partition.get(SourceOffsets.INSTANCE_KEY),
                (Integer) partition.get(SourceOffsets.BUCKET),
                a.sourceOffset())
            .orElseThrow();
    Recoveries.whole(
        store, new RecoveryRequest(Set.of("eu"), ALL, store.newEpoch(), List.of(committed), false));
    long mark = LogCapture.get().mark();

    t.commitRecord(a, new RecordMetadata(new TopicPartition(a.topic(), 0), 0, 0, 0L, 0, 0));

    await().atMost(Duration.ofSeconds(10)).until(() -> t.metrics().claimLost.get() == 1);
    List<LogCapture.Event> lost =
        LogCapture.get().matching(mark, e -> e.message().startsWith("Claim lost: outcome"));
    assertEquals(1, lost.size());
    assertTrue(lost.get(0).message().contains("no duplicate"), lost.get(0).message());
    assertEquals(
        ReasonCodes.RECOVERED_FROM_OFFSETS, store.find("a").orElseThrow().lastFailureCode());
  }

  /**
   * A sweep that fails (it waits for row locks, and may time out) holds no claim back, and is tried
   * again soon, not a quarter lease later. Its retry says that rows may have gone unreported only
   * when the failed attempt may have committed: not after an error the server answered (57014, a
   * statement timeout), which rolled it back.
   */
  @ParameterizedTest(name = "SQLState {0}")
  @ValueSource(strings = {"08006", "57014"})
  void aFailedSweepHoldsNoClaimBackAndIsRetriedSoon(String sqlState) {
    MockTime mockTime = new MockTime();
    time = mockTime;
    List<SourceRecord> first = start(Map.of("claim.batch.size", "1")).poll();
    assertTrue(first == null || first.isEmpty(), "nothing to claim");
    add("a", "agg-1", 10);
    store.claim(previousClaim().exactlyOnce(0, 1, ALL)); // a zombie of a lower epoch
    add("b", "agg-2", 10);
    clock.advance(Duration.ofHours(1)); // the zombie's lease ran out
    mockTime.sleep(Duration.ofMinutes(1).toMillis()); // a sweep is due
    sweepFailure = sqlState;
    sweepFailsAfterMs = 30_000; // a lock waited for up to statement.timeout.ms, say
    long mark = LogCapture.get().mark();

    assertEquals(List.of("b"), task.poll().stream().map(SourceOffsets::messageId).toList());
    assertEquals(1, task.metrics().databaseErrors.get());
    assertEquals(1, sweepPages.get());
    task.poll(); // a claim made meanwhile, or now
    assertEquals(1, sweepPages.get(), "retried after a pause from the failure, not at once");
    mockTime.sleep(ExactlyOnceState.SWEEP_RETRY.toMillis());
    task.poll();
    assertEquals(1, sweepPages.get(), "a pause as long as the failed call, when longer");
    mockTime.sleep(30_000 - ExactlyOnceState.SWEEP_RETRY.toMillis());

    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () -> {
              List<SourceRecord> next = task.poll();
              return next != null
                  && next.stream().map(SourceOffsets::messageId).toList().equals(List.of("a"));
            });
    assertEquals(
        sqlState.equals("08006") ? 1 : 0,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=WRITE_REPLY_LOST"))
            .size());
  }

  /**
   * A pass whose pages kept failing for an hour (a row locked meanwhile) puts the next sweep off by
   * an interval once it ends, not by the hour: its length is the time since it began less the time
   * it spent failing (the failed calls, 90 s here, and the waits for their retries). By the hour,
   * zombies' rows expired meanwhile stayed in flight as long.
   */
  @Test
  void aSweepThatFailedForAnHourIsSpacedByTheInterval() {
    MockTime mockTime = new MockTime();
    time = mockTime;
    start(Map.of("claim.batch.size", "1")).poll();
    add("a", "agg-1", 10);
    store.claim(previousClaim().exactlyOnce(0, 1, ALL)); // a zombie of a lower epoch
    clock.advance(Duration.ofHours(1)); // the zombie's lease ran out
    mockTime.sleep(Duration.ofMinutes(1).toMillis()); // a sweep is due
    sweepFailsAfterMs = 30_000; // each page waits out a statement timeout, then fails
    for (int failures = 1; failures <= 3; failures++) {
      sweepFailure = "57014";
      int pagesNow = failures;
      await().pollInSameThread().until(() -> task.poll() == null && sweepPages.get() == pagesNow);
      mockTime.sleep(30_000); // retried no sooner than the failed call took
    }
    mockTime.sleep(Duration.ofHours(1).toMillis()); // the lock held; then the pass goes on
    await()
        .pollInSameThread()
        .until(
            () -> {
              List<SourceRecord> next = task.poll();
              return next != null
                  && next.stream().map(SourceOffsets::messageId).toList().equals(List.of("a"));
            });
    int pages = sweepPages.get();
    add("b", "agg-2", 10);
    store.claim(previousClaim().exactlyOnce(0, 2, ALL)); // another zombie's row
    clock.advance(Duration.ofHours(1));

    mockTime.sleep(Duration.ofMinutes(1).toMillis()); // an interval: a quarter lease

    await().pollInSameThread().until(() -> task.poll() != null && sweepPages.get() > pages);
  }

  /**
   * A sweep that keeps failing (a row an operator's transaction holds for hours; each sweep waits a
   * second for it, then fails, and is tried again 5 s later) is said once a minute, not at every
   * try; once a sweep went through, a failure is said at once again.
   */
  @Test
  void aSweepThatKeepsFailingIsSaidOnceAMinute() {
    MockTime mockTime = new MockTime();
    time = mockTime;
    start(Map.of("claim.batch.size", "1")).poll();
    add("a", "agg-1", 10);
    store.claim(previousClaim().exactlyOnce(0, 1, ALL)); // a zombie of a lower epoch
    clock.advance(Duration.ofHours(1)); // the zombie's lease ran out
    long mark = LogCapture.get().mark();
    long[] waits = {
      Duration.ofMinutes(1).toMillis(), // a sweep is due
      ExactlyOnceState.SWEEP_RETRY.toMillis(),
      Duration.ofMinutes(1).toMillis(),
      ExactlyOnceState.SWEEP_RETRY.toMillis()
    };
    String[] failures = {"55P03", "55P03", "55P03", "57014"};
    int[] saidAfter = {1, 1, 2, 3}; // the same failure within the minute not said; another is
    for (int i = 0; i < waits.length; i++) {
      mockTime.sleep(waits[i]);
      sweepFailure = failures[i];
      int pages = i + 1;
      await().pollInSameThread().until(() -> task.poll() == null && sweepPages.get() >= pages);
      assertEquals(
          saidAfter[i],
          LogCapture.get()
              .matching(mark, e -> e.message().startsWith("Exactly-once sweep failed"))
              .size(),
          "after failure " + pages);
    }
    // A sweep that goes through ends the failure: the same failure after it is said at once,
    // though within the minute.
    mockTime.sleep(ExactlyOnceState.SWEEP_RETRY.toMillis());
    await().pollInSameThread().until(() -> task.poll() != null && sweepPages.get() >= 5);
    mockTime.sleep(Duration.ofSeconds(15).toMillis()); // the interval: a quarter lease
    sweepFailure = "57014";
    await().pollInSameThread().until(() -> task.poll() == null && sweepPages.get() >= 6);
    assertEquals(
        4,
        LogCapture.get()
            .matching(mark, e -> e.message().startsWith("Exactly-once sweep failed"))
            .size(),
        "after the sweep that went through");
  }

  /**
   * A recovery that committed though its reply was lost settled rows the retry no longer finds:
   * what they were is not known, and the retry says so instead of staying silent.
   */
  @Test
  void aRecoveryRetriedAfterAFailedAttemptSaysWhatMayHaveGoneUnreported() {
    add("a", "agg-1", 10);
    long old = store.newEpoch();
    store.claim(previousClaim().exactlyOnce(old, 1, ALL)); // never committed: released
    recoveryRepliesLost = 1;
    OutboxSourceTask t = start();
    long mark = LogCapture.get().mark();
    assertPollFailed(t, "the database failed the poll");

    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () -> {
              t.poll();
              return !LogCapture.get()
                  .matching(mark, e -> e.message().contains("reason=WRITE_REPLY_LOST"))
                  .isEmpty();
            });
    assertEquals(0, t.metrics().recoveredReleased.get(), "the retry found nothing to release");
  }

  /**
   * A task that moved to another worker finds its predecessor's committed offsets: Connect looks
   * them up by the serialized partition's bytes, which follow the map's key order. Builds before
   * the fixed order committed under their JVM's own, so every order is read.
   */
  @ParameterizedTest(name = "committed under key order {0}")
  @ValueSource(ints = {0, 1, 2, 3, 4, 5})
  void recoversFromOffsetsCommittedUnderAnyKeyOrder(int order) {
    add("a", "agg-1", 10);
    add("b", "agg-1", 10);
    long old = store.newEpoch();
    ClaimedMessage a = store.claim(previousClaim().exactlyOnce(old, 1, ALL)).claimed().get(0);
    int bucket = ALL.bucketOf(a.aggregateHash());
    commit(SourceOffsets.bucketPartitionInEveryOrder("eu", bucket, BUCKETS).get(order), a, old, 1);
    long mark = LogCapture.get().mark();

    List<SourceRecord> records = start().poll();

    assertEquals(List.of("b"), records.stream().map(SourceOffsets::messageId).toList());
    assertEquals(MessageStatus.PUBLISHED, store.find("a").orElseThrow().status());
    // Connect's offsets endpoints cannot reach an offset under another order: said once, by bucket
    List<LogCapture.Event> warnings =
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=OFFSET_UNDER_EARLIER_KEY_ORDER"));
    assertEquals(order == 0 ? 0 : 1, warnings.size());
    warnings.forEach(w -> assertTrue(w.message().contains("bucket=" + bucket), w.message()));
  }

  /**
   * An earlier build's offset under another key order, of an epoch not below the instance's, is
   * from another history of the database (restored or moved), and no reset can clear it: ignored,
   * with a warning, so that it never outranks what this history commits (its rows are sent again,
   * not taken for committed).
   */
  @ParameterizedTest(name = "committed under key order {0}")
  @ValueSource(ints = {1, 5})
  void anEarlierBuildsOffsetFromAnotherHistoryIsIgnored(int order) {
    add("a", "agg-1", 10);
    long old = store.newEpoch();
    ClaimedMessage a = store.claim(previousClaim().exactlyOnce(old, 1, ALL)).claimed().get(0);
    int bucket = ALL.bucketOf(a.aggregateHash());
    commit(
        SourceOffsets.bucketPartitionInEveryOrder("eu", bucket, BUCKETS).get(order),
        a,
        old + 1_000_000,
        7);
    long mark = LogCapture.get().mark();

    List<SourceRecord> records = start().poll();

    assertEquals(List.of("a"), records.stream().map(SourceOffsets::messageId).toList());
    List<LogCapture.Event> said =
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.message().contains("reason=OFFSET_FROM_LATER_EPOCH")
                        && e.message().contains("ignored"));
    assertEquals(1, said.size(), said::toString);
  }

  /**
   * An instance takes its epoch when Connect starts it, not at its first poll: a successor started
   * (and fencing it) in between takes a higher one, so the late instance's recovery can never
   * release the successor's rows in flight.
   */
  @Test
  void theEpochIsTakenAtStartNotAtTheFirstPoll() {
    add("a", "agg-1", 10);
    OutboxSourceTask late = start();
    long successor = store.newEpoch();

    List<SourceRecord> records = late.poll();

    assertTrue((Long) records.get(0).sourceOffset().get(SourceOffsets.EPOCH) < successor);
  }

  /** With the database away at start, the task still starts, and its first poll takes the epoch. */
  @Test
  void anEpochNotTakenAtStartIsTakenByTheFirstPoll() {
    add("a", "agg-1", 10);
    epochsFail = true;
    OutboxSourceTask t = start();
    epochsFail = false;

    List<SourceRecord> records = t.poll();

    assertEquals(List.of("a"), records.stream().map(SourceOffsets::messageId).toList());
    assertTrue((Long) records.get(0).sourceOffset().get(SourceOffsets.EPOCH) > 0);
  }

  /**
   * ... before it waits for the schema: taken after another session's migration, it could be above
   * that of a successor started meanwhile, whose rows in flight the late instance's recovery would
   * release.
   */
  @Test
  void anEpochNotTakenAtStartIsTakenBeforeAWaitForAMigration() {
    MockTime mockTime = new MockTime();
    time = mockTime;
    add("a", "agg-1", 10);
    epochsFail = true;
    OutboxSourceTask late = start();
    epochsFail = false;
    provider.schemaFailure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT,
            StoreProvider.MIGRATION_IN_PROGRESS,
            null,
            StoreProvider.CHECK_SCHEMA);

    assertNull(late.poll()); // waiting for the migration
    long successor = store.newEpoch();
    provider.schemaFailure = null;
    mockTime.sleep(60_000); // past the migration's backoff
    List<SourceRecord> records = late.poll();

    assertEquals(List.of("a"), records.stream().map(SourceOffsets::messageId).toList());
    assertTrue((Long) records.get(0).sourceOffset().get(SourceOffsets.EPOCH) < successor);
  }

  /**
   * The bytes Connect keeps a bucket's offset under are the same in every JVM: the partition's keys
   * iterate in one fixed order (Map.of's order is seeded per JVM).
   */
  @Test
  void aBucketPartitionSerializesToTheSameBytesInEveryJvm() {
    assertEquals(
        "[\"outbox-relay-test\",{\"bucket\":3,\"buckets\":16,\"instance_key\":\"eu\"}]",
        new String(
            committedOffsets.serialized(SourceOffsets.bucketPartition("eu", 3, 16)),
            java.nio.charset.StandardCharsets.UTF_8));
  }

  /**
   * ... and the same bytes once read back and serialized again, as Connect's offsets REST endpoints
   * do: otherwise they list every bucket's offset as null, and a reset misses them.
   */
  @Test
  void aBucketPartitionSurvivesTheOffsetsEndpointsRoundTrip() {
    for (String key : List.of("eu", "orders", "a-much-longer-instance-key")) {
      Map<String, Object> partition = SourceOffsets.bucketPartition(key, 3, 16);
      assertEquals(
          new String(committedOffsets.serialized(partition), StandardCharsets.UTF_8),
          new String(
              committedOffsets.readBackAndSerializedAgain(partition), StandardCharsets.UTF_8));
    }
  }

  /**
   * Offsets of one bucket under two key orders (two builds, or two JVMs of an older build): the
   * later owner's, of the higher epoch, is the bucket's committed position.
   */
  @ParameterizedTest(name = "the later owner's under key order {0}")
  @ValueSource(ints = {0, 3})
  void theHigherEpochsOffsetWinsAcrossKeyOrders(int laterOrder) {
    add("a", "agg-1", 10);
    add("b", "agg-1", 10);
    add("c", "agg-1", 10);
    ClaimRequest one = new ClaimRequest(PREVIOUS, Set.of("eu"), 1, Duration.ofSeconds(30), 5, true);
    long first = store.newEpoch();
    ClaimedMessage a = store.claim(one.exactlyOnce(first, 1, ALL)).claimed().get(0);
    store.markPublished(new PublishedAck("a", a.seq(), a.lease(), new KafkaCoordinates("t", 0, 0)));
    long second = store.newEpoch();
    ClaimedMessage b = store.claim(one.exactlyOnce(second, 1, ALL)).claimed().get(0);
    List<Map<String, Object>> orders =
        SourceOffsets.bucketPartitionInEveryOrder("eu", ALL.bucketOf(a.aggregateHash()), BUCKETS);
    commit(orders.get(3 - laterOrder), a, first, 1); // the earlier owner's offset
    commit(orders.get(laterOrder), b, second, 1); // the later owner's, under another key order
    long mark = LogCapture.get().mark();

    List<SourceRecord> records = start().poll();

    assertEquals(List.of("c"), records.stream().map(SourceOffsets::messageId).toList());
    assertEquals(MessageStatus.PUBLISHED, store.find("b").orElseThrow().status());
    // only the offset recovery used is reported, and only when an earlier build's order holds it
    assertEquals(
        laterOrder == 0 ? 0 : 1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=OFFSET_UNDER_EARLIER_KEY_ORDER"))
            .size());
  }

  @Test
  void recordsCarryTheirBucketPartitionAndAPositionThatGrowsWithEachClaim() {
    add("a", "agg-1", 10);
    add("b", "agg-1", 10);
    List<SourceRecord> first = start(Map.of("claim.batch.size", "1")).poll();
    List<SourceRecord> second = task.poll();

    SourceRecord r1 = first.get(0);
    SourceRecord r2 = second.get(0);
    int bucket = (Integer) r1.sourcePartition().get(SourceOffsets.BUCKET);
    assertEquals(
        SourceOffsets.bucketPartition("eu", bucket, BUCKETS), r1.sourcePartition(), "partition");
    assertEquals(r1.sourcePartition(), r2.sourcePartition(), "one aggregate, one bucket");
    assertEquals(r1.sourceOffset().get(SourceOffsets.EPOCH), r2.sourceOffset().get("epoch"));
    assertTrue(
        (Long) r2.sourceOffset().get(SourceOffsets.BATCH)
            > (Long) r1.sourceOffset().get(SourceOffsets.BATCH));
  }

  /**
   * A batch's parks refused for good by one row's value (a trigger or a check of an adopted table):
   * none is parked (parked one by one, those before the refused row would end FAILED without their
   * dead-letter records when the stop gives the batch back), and the task fails naming the rows
   * parked together, where it named none. One row alone is named as the row.
   */
  @Test
  void aParkRefusedForARowFailsTheTaskNamingTheRowsParkedTogether() {
    add("good-1", "agg-1", 10);
    add("too-large-1", "agg-2", 100);
    add("too-large-2", "agg-3", 100);
    parkRefusedFor = "too-large-2";
    start(Map.of("payload.max.bytes", "50"));

    ConnectException failed = assertThrows(ConnectException.class, task::poll);

    assertFalse(failed instanceof RetriableException, failed::getMessage);
    assertTrue(
        failed
            .getMessage()
            .contains(
                "(SQLState P0001) for one of the 2 rows parked together, none of which was parked:"
                    + " message_ids=too-large-1, too-large-2;"),
        failed::getMessage);
    for (String id : List.of("good-1", "too-large-1", "too-large-2")) {
      assertEquals(MessageStatus.IN_FLIGHT, store.find(id).orElseThrow().status(), id);
    }
    assertEquals(1, task.metrics().databaseErrors.get(), "seen by the database-errors alert");
  }

  /** A failure without the server's SQLState (a pool's, nothing sent) is no row's refusal. */
  @Test
  void aParkFailureTheServerDidNotSayIsNotPutOnTheRows() {
    add("good-1", "agg-1", 10);
    add("too-large-1", "agg-2", 100);
    add("too-large-2", "agg-3", 100);
    parkRefusedFor = "too-large-2";
    parkRefusalState = null;
    start(Map.of("payload.max.bytes", "50"));

    ConnectException failed = assertThrows(ConnectException.class, task::poll);

    assertFalse(failed.getMessage().contains("message_id"), failed::getMessage);
    assertTrue(failed.getMessage().contains("park failed: DB_ERROR"), failed::getMessage);
  }

  @Test
  void aParkRefusedForTheOnlyRowParkedFailsTheTaskNamingIt() {
    add("good-1", "agg-1", 10);
    add("too-large-1", "agg-2", 100);
    parkRefusedFor = "too-large-1";
    start(Map.of("payload.max.bytes", "50"));

    ConnectException failed = assertThrows(ConnectException.class, task::poll);

    assertFalse(failed instanceof RetriableException, failed::getMessage);
    assertTrue(failed.getMessage().contains("of message_id=too-large-1"), failed::getMessage);
  }

  @Test
  void anUnpublishableRowIsParkedBeforeItsBatchLeavesAndAFailedParkHoldsTheBatch() {
    add("good-1", "agg-1", 10);
    add("too-large", "agg-2", 100);
    add("good-2", "agg-3", 10);
    parksFail = true;
    start(Map.of("payload.max.bytes", "50"));
    long mark = LogCapture.get().mark();

    assertPollFailed(task, "the park failed: nothing leaves");
    add("later", "agg-4", 10);
    assertPollFailed(task, "still held: nothing new is claimed");
    // Said as the park's failure, once: not as a claim's.
    assertEquals(
        List.of("WARN", "DEBUG"),
        LogCapture.get()
            .matching(mark, e -> e.message().startsWith("A poll's park failed"))
            .stream()
            .map(LogCapture.Event::level)
            .toList());
    assertEquals(
        List.of(), LogCapture.get().matching(mark, e -> e.message().contains("while claiming")));
    assertEquals(MessageStatus.PENDING, store.find("later").orElseThrow().status());
    assertEquals(MessageStatus.IN_FLIGHT, store.find("too-large").orElseThrow().status());

    parksFail = false;
    List<SourceRecord> records = task.poll();

    assertEquals(
        List.of("good-1", "good-2"), records.stream().map(SourceOffsets::messageId).toList());
    assertEquals(MessageStatus.FAILED, store.find("too-large").orElseThrow().status());
    assertEquals(
        UnpublishableReasons.PAYLOAD_TOO_LARGE,
        store.find("too-large").orElseThrow().lastFailureCode());
    assertEquals(List.of("later"), task.poll().stream().map(SourceOffsets::messageId).toList());
  }

  /**
   * A dead-lettered row is parked before its batch leaves; once Connect acknowledges its
   * dead-letter record (after the transaction committed, on the task thread), the next poll records
   * where that copy is. A record Connect acknowledged without metadata gives no position.
   */
  @Test
  void aCommittedDeadLetterRecordsPositionIsRecordedAtTheNextPoll() {
    add("big", "agg-1", 100);
    add("bigger", "agg-2", 100);
    start(Map.of("payload.max.bytes", "50", "dead.letter.topic", "dlq"));
    List<SourceRecord> records = task.poll();
    assertEquals(List.of("big", "bigger"), records.stream().map(SourceOffsets::messageId).toList());
    assertEquals(MessageStatus.FAILED, store.find("big").orElseThrow().status());

    task.commitRecord(
        records.get(0), new RecordMetadata(new TopicPartition("dlq", 0), 41, 0, 0L, 0, 0));
    assertNull(store.find("big").orElseThrow().kafka(), "not before the next poll");
    task.poll();

    assertEquals(new KafkaCoordinates("dlq", 0, 41), store.find("big").orElseThrow().kafka());
    assertNull(store.find("bigger").orElseThrow().kafka(), "not acknowledged");
    assertEquals(MessageStatus.FAILED, store.find("big").orElseThrow().status());
  }

  /**
   * Dead-letter records count against the task's in-flight limit as other records do, until Kafka
   * commits them: a run of unpublishable rows claimed a full batch at every poll, and with
   * transaction.boundary=interval (here: nothing acknowledged for a while) one transaction grew
   * without bound, records and payloads held in Connect and the task. Committed, they free room,
   * and wake the poll that paused meanwhile.
   */
  @Test
  void deadLetterRecordsCountAgainstTheInFlightLimitUntilCommitted() {
    for (int i = 0; i < 100; i++) {
      add("big-" + i, "agg-" + i, 100);
    }
    start(Map.of("payload.max.bytes", "50", "dead.letter.topic", "dlq"));

    List<SourceRecord> handed = new ArrayList<>();
    for (int poll = 0; poll < 12; poll++) {
      List<SourceRecord> records = task.poll();
      if (records != null) {
        handed.addAll(records);
      }
    }
    assertTrue(handed.size() >= 40, "four batches of 10 at least: " + handed.size());
    assertTrue(handed.size() < 50, "the limit, 4 batches and a claim below it: " + handed.size());
    assertEquals(handed.size(), task.metrics().inFlight(), "each awaited");
    assertNull(task.poll(), "held back by the full ledger: a pause begins");
    assertFalse(task.pollWakePending());

    commitTransaction(task, handed);
    // The room is news to the paused poll, which otherwise waited out its pause.
    assertTrue(task.pollWakePending(), "poll woken by the room the commit made");
    List<SourceRecord> more = nextRecordsOnThisThread();
    assertEquals("dlq", more.get(0).topic(), "room again once committed");
  }

  /**
   * A dead-letter record a transform drops gives no position, and the task fails as for any record
   * dropped in this mode; its row stays parked, without its copy.
   */
  @Test
  void aDeadLetterRecordDroppedByATransformFailsTheTask() {
    add("big", "agg-1", 100);
    start(Map.of("payload.max.bytes", "50", "dead.letter.topic", "dlq"));
    List<SourceRecord> records = task.poll();

    task.commitRecord(records.get(0), null);
    ConnectException failed = assertThrows(ConnectException.class, task::poll);
    assertFalse(failed instanceof RetriableException, "fails the task");
    assertTrue(
        failed.getMessage().contains("message_id=big (reason=DROPPED_UNDER_EXACTLY_ONCE)"),
        failed.getMessage());
    assertEquals(MessageStatus.FAILED, store.find("big").orElseThrow().status());
    assertNull(store.find("big").orElseThrow().kafka());
  }

  /**
   * Exactly once, no metadata means a transform or predicate dropped the record
   * (errors.tolerance=all is refused): a later record's committed offset would cover its row. The
   * row's outcome is still written, and the task fails at its next poll, naming the row.
   */
  @Test
  void aRecordDroppedByATransformFailsTheTaskNamingItsRow() {
    add("dropped", "agg-1", 10);
    List<SourceRecord> records = start(Map.of()).poll();
    assertEquals(List.of("dropped"), records.stream().map(SourceOffsets::messageId).toList());

    task.commitRecord(records.get(0), null);
    ConnectException failed = assertThrows(ConnectException.class, task::poll);
    assertFalse(failed instanceof RetriableException, "fails the task");
    assertTrue(
        failed.getMessage().contains("message_id=dropped (reason=DROPPED_UNDER_EXACTLY_ONCE)"),
        failed.getMessage());
    await().until(() -> store.find("dropped").orElseThrow().status() == MessageStatus.AMBIGUOUS);
  }

  /**
   * Connect acknowledges nothing of a poll whose records a transform all dropped (it has no
   * transaction to commit, and keeps them for the next that commits), but still calls commit() on
   * the task thread after each poll's records are dispatched. Such a task learnt of no drop: its
   * rows stayed in flight, renewed, until it held its limit of batches and claimed nothing,
   * RUNNING. Records handed over before a poll began are dispatched; unacknowledged at a commit()
   * after it, they were dropped: each row's outcome is written per null.metadata.policy, and the
   * task fails at the next poll, naming the first.
   */
  @Test
  void recordsUnacknowledgedWhenTheirTransactionEndedWereDroppedAndFailTheTask() {
    add("first", "agg-1", 10);
    add("second", "agg-2", 10);
    List<SourceRecord> records = start(Map.of()).poll();
    assertEquals(List.of("first", "second"), ids(records));
    task.commit(); // Connect's, after finding no transaction to commit

    assertEquals(List.of(), ids(task.poll()), "not yet: the commit may have come mid-dispatch");
    task.commit();
    ConnectException failed = assertThrows(ConnectException.class, task::poll);
    assertFalse(failed instanceof RetriableException, "fails the task");
    assertTrue(
        failed.getMessage().contains("message_id=first (reason=DROPPED_UNDER_EXACTLY_ONCE)"),
        failed.getMessage());
    await()
        .until(
            () ->
                Stream.of("first", "second")
                    .allMatch(
                        id -> store.find(id).orElseThrow().status() == MessageStatus.AMBIGUOUS));
  }

  /** Records acknowledged when their transaction committed are not taken for dropped. */
  @Test
  void recordsAcknowledgedWhenTheirTransactionEndedAreNotTakenForDropped() {
    add("a", "agg-1", 10);
    start(Map.of());
    List<SourceRecord> records = task.poll();
    commitTransaction(task, records);
    task.commit();
    add("b", "agg-2", 10);
    List<SourceRecord> next = nextRecordsOnThisThread();
    assertEquals(List.of("b"), ids(next));
    commitTransaction(task, next);
    task.commit();
    assertEquals(List.of(), ids(task.poll()));
    task.commit();
    assertEquals(List.of(), ids(task.poll()), "nothing more, and no failure");
    await().until(() -> store.find("b").orElseThrow().status() == MessageStatus.PUBLISHED);
  }

  /**
   * With transaction.boundary=interval too, where Connect commits a transaction only once the
   * interval has passed: a record dropped alone on a quiet key is found at the second poll after
   * it, as with a transaction per poll.
   */
  @Test
  void underIntervalTransactionsARecordDroppedAloneIsFoundAsWell() {
    add("a", "agg-1", 10);
    start(Map.of("transaction.boundary", "interval"));
    assertEquals(List.of("a"), ids(task.poll()));
    task.commit();
    assertEquals(List.of(), ids(task.poll()));
    task.commit(); // nothing to commit: "a" opened no transaction
    ConnectException failed = assertThrows(ConnectException.class, task::poll);
    assertTrue(
        failed.getMessage().contains("message_id=a (reason=DROPPED_UNDER_EXACTLY_ONCE)"),
        failed.getMessage());
  }

  /**
   * A worker without exactly-once support commits offsets, and calls commit(), on a thread of its
   * own, while the records are still on their way to Kafka: that says nothing of them (taken for
   * dropped, their rows would be sent again).
   */
  @Test
  void aCommitFromAnotherThreadSaysNothingOfTheRecords() throws Exception {
    add("a", "agg-1", 10);
    start(Map.of());
    List<SourceRecord> records = task.poll();
    assertEquals(List.of("a"), ids(records));
    for (int i = 0; i < 2; i++) {
      Thread committer = new Thread(task::commit);
      committer.start();
      committer.join();
      assertEquals(List.of(), ids(task.poll()), "no failure");
    }
    commitTransaction(task, records);
    await().until(() -> store.find("a").orElseThrow().status() == MessageStatus.PUBLISHED);
  }

  /**
   * A batch's parks are written in one statement, whatever their number (one each held a poll for
   * seconds on a batch of thousands, past Connect's 5 s stop); when it fails none is written, and a
   * stop then leaves no row FAILED without its dead-letter record: the rows stay leased, for the
   * stop's give-back or the next instance's recovery, and nothing is reported or counted.
   */
  @Test
  void aBatchsParksAreOneStatementAndAFailedOneParksNone() {
    for (int i = 0; i < 5; i++) {
      add("big-" + i, "agg-" + i, 100);
    }
    add("good", "agg-9", 10);
    parksFail = true;
    OutboxSourceTask first = start(Map.of("payload.max.bytes", "50", "dead.letter.topic", "dlq"));

    assertPollFailed(first, "the parks failed: nothing leaves");
    assertEquals(1, parkStatements.get(), "one statement for the five");
    for (int i = 0; i < 5; i++) {
      assertEquals(MessageStatus.IN_FLIGHT, store.find("big-" + i).orElseThrow().status());
    }
    long mark = LogCapture.get().mark();
    first.stop();

    assertEquals(List.of(), unsentDeadLetterWarnings(mark));
    assertEquals(0, first.metrics().deadLettered.get());
    assertEquals(0, first.metrics().failed.get());
  }

  /**
   * A park that failed before anything was sent (the pool had no connection) cannot have parked a
   * row: a stop while the database is still away says nothing of the rows (it warned, row by row,
   * that each may have been parked), and does not ask the database.
   */
  @Test
  void aStopAfterAParkThatSentNothingSaysNothingOfItsRows() {
    for (int i = 0; i < 3; i++) {
      add("big-" + i, "agg-" + i, 100);
    }
    parksFailBeforeSending = true;
    ownParkChecksFail = 1;
    start(Map.of("payload.max.bytes", "50", "dead.letter.topic", "dlq"));
    assertPollFailed(task, "the parks failed: nothing leaves");
    long mark = LogCapture.get().mark();

    task.stop();

    assertEquals(
        List.of(),
        LogCapture.get().matching(mark, e -> e.message().contains("may have parked its row")));
    assertEquals(List.of(), renewerStoppedAtParkChecks, "nothing asked");
    assertEquals(0, task.metrics().failed.get());
  }

  /**
   * A park whose commit reply was lost (the connection dropped at COMMIT, as in a failover) finds
   * its row gone when retried. Parked under its own token and reason, the row was parked by that
   * attempt: no lost claim, and its dead-letter record, which leaves with the batch, is counted.
   */
  @Test
  void aParkRetriedAfterItsReplyWasLostIsNoLostClaimAndItsDeadLetterIsCounted() {
    startWithAParkWhoseReplyIsLost();
    assertEquals(MessageStatus.FAILED, store.find("big").orElseThrow().status(), "it committed");
    List<SourceRecord> records = task.poll();

    assertEquals(List.of("big", "good"), records.stream().map(SourceOffsets::messageId).toList());
    assertEquals("dlq", records.get(0).topic());
    assertEquals(0, task.metrics().claimLost.get());
    assertEquals(1, task.metrics().deadLettered.get());
  }

  /**
   * ... and a stop before the retry: the row is FAILED without its dead-letter record, which never
   * leaves, and is reported and counted as such (it was only given back as "not found", at INFO).
   */
  @Test
  void aParkWhoseReplyWasLostIsReportedWhenTheTaskStopsBeforeItsRetry() {
    startWithAParkWhoseReplyIsLost();
    long mark = LogCapture.get().mark();

    task.stop();

    List<LogCapture.Event> said = unsentDeadLetterWarnings(mark);
    assertEquals(1, said.size(), said::toString);
    assertTrue(said.get(0).message().contains("message_id=big"), said.get(0).message());
    assertEquals(1, task.metrics().failed.get());
    assertEquals(0, task.metrics().deadLettered.get());
    assertEquals(MessageStatus.FAILED, store.find("big").orElseThrow().status());
  }

  /**
   * ... and the stop asks the database only once the renewals and the listener were told to stop:
   * the question may wait for a pooled connection (up to {@code connection.timeout.ms} in an
   * outage), and meanwhile renewals must not run on past the stop.
   */
  @Test
  void aStopAsksWhetherAParkCommittedOnlyOnceRenewalsStopped() {
    startWithAParkWhoseReplyIsLost();

    task.stop();

    assertEquals(List.of(true), renewerStoppedAtParkChecks);
  }

  /**
   * ... and the stop does not wait long for the answer: the question's wait for a pooled connection
   * alone (5 s in an outage) took Connect's whole 5 s for a stop. The row is reported once the
   * answer comes, and the task's pool closes only then.
   */
  @Test
  void aStopDoesNotWaitForTheDatabaseToSayWhetherAParkCommitted() throws Exception {
    startWithAParkWhoseReplyIsLost();
    task.stopQuestionWait(Duration.ZERO);
    CountDownLatch asked = new CountDownLatch(1);
    CountDownLatch answer = new CountDownLatch(1);
    parkCheckPause = new CountDownLatch[] {asked, answer};
    long mark = LogCapture.get().mark();

    task.stop(); // returns, the question unanswered

    try {
      assertTrue(asked.await(30, TimeUnit.SECONDS), "asked");
      assertEquals(
          1,
          LogCapture.get()
              .matching(mark, e -> e.message().contains("reason=STOP_QUESTION_PENDING"))
              .size());
      await("the outcome loop ended, the close due").until(task::closeDue);
      assertEquals(List.of(), unsentDeadLetterWarnings(mark), "not answered yet");
      assertEquals(0, storeCloses.get(), "the pool waits for the answer");
      assertEquals(List.of(), ownStoppedSummaries(mark), "and so does the stop's summary");
    } finally {
      answer.countDown();
    }
    await().until(() -> storeCloses.get() == 1 && !ownStoppedSummaries(mark).isEmpty());
    List<LogCapture.Event> said = unsentDeadLetterWarnings(mark);
    assertEquals(1, said.size(), said::toString);
    assertTrue(said.get(0).message().contains("message_id=big"), said.get(0).message());
    List<LogCapture.Event> since = LogCapture.get().matching(mark, e -> true);
    assertTrue(
        since.indexOf(said.get(0)) < since.indexOf(ownStoppedSummaries(mark).get(0)),
        "reported before the summary, which counts it");
    assertEquals(1, task.metrics().failed.get());
  }

  /**
   * ... nor does the pool wait past the question's own bounds (its connection wait and statement: a
   * half-open connection's read waits out the socket timeout, up to a day): it closes under an
   * unanswered question.
   */
  @Test
  void thePoolClosesUnderAStopQuestionPastItsBounds() throws Exception {
    add("big", "agg-1", 100);
    add("good", "agg-2", 10);
    parkRepliesLost = 1;
    start(
        Map.of(
            "payload.max.bytes", "50",
            "dead.letter.topic", "dlq",
            "statement.timeout.ms", "100",
            "connection.timeout.ms", "250"));
    assertPollFailed(task, "the park's reply was lost");
    task.stopQuestionWait(Duration.ZERO);
    CountDownLatch asked = new CountDownLatch(1);
    CountDownLatch answer = new CountDownLatch(1);
    parkCheckPause = new CountDownLatch[] {asked, answer};
    try {
      task.stop();

      assertTrue(asked.await(30, TimeUnit.SECONDS), "asked");
      await("the pool closed, the question unanswered").until(() -> storeCloses.get() == 1);
    } finally {
      answer.countDown();
    }
  }

  /** The "task stopped" summary lines since {@code mark}. */
  /** The stop summaries since {@code mark} of the task startWithAParkWhoseReplyIsLost started. */
  private List<LogCapture.Event> ownStoppedSummaries(long mark) {
    return LogCapture.get()
        .matching(
            mark,
            e ->
                e.message().startsWith("outbox-relay task stopped")
                    && e.thread().contains(lostParkConnector + "-"));
  }

  private static List<LogCapture.Event> stoppedSummaries(long mark) {
    return LogCapture.get()
        .matching(mark, e -> e.message().startsWith("outbox-relay task stopped"));
  }

  /**
   * ... also when the retry found the row parked and the database went away again before it could
   * tell whose park that was: the stop asks again.
   */
  @Test
  void aParkWhoseRetryCouldNotTellWhoParkedItIsReportedAtTheStop() {
    startWithAParkWhoseReplyIsLost();
    ownParkChecksFail = 1;
    assertPollFailed(task, "its retry could not tell");
    long mark = LogCapture.get().mark();

    task.stop();

    List<LogCapture.Event> said = unsentDeadLetterWarnings(mark);
    assertEquals(1, said.size(), said::toString);
    assertEquals(1, task.metrics().failed.get());
    assertEquals(0, task.metrics().claimLost.get());
  }

  /**
   * ... and a stop on another thread while the retry runs: whichever of the two ends the park
   * reports it, once.
   */
  @Test
  void aStopOnAnotherThreadDuringAParksRetryReportsItOnce() throws Exception {
    startWithAParkWhoseReplyIsLost();
    CountDownLatch inRetry = new CountDownLatch(1);
    CountDownLatch resume = new CountDownLatch(1);
    parkPause = new CountDownLatch[] {inRetry, resume};
    CompletableFuture<List<SourceRecord>> retry = CompletableFuture.supplyAsync(task::poll);
    assertTrue(inRetry.await(30, TimeUnit.SECONDS), "the retry is writing the park");
    long mark = LogCapture.get().mark();

    task.stop();
    resume.countDown();
    List<SourceRecord> handed = retry.get(30, TimeUnit.SECONDS);

    assertTrue(handed == null || handed.isEmpty(), "a forgotten batch hands nothing over");
    List<LogCapture.Event> said = unsentDeadLetterWarnings(mark);
    assertEquals(1, said.size(), said::toString);
    assertEquals(1, task.metrics().failed.get());
  }

  /**
   * A dead-lettered row "big" and a row "good"; the first poll's park of "big" commits, but its
   * reply is lost, so that nothing leaves.
   */
  /** The connector name of the last task startWithAParkWhoseReplyIsLost started: its own. */
  private String lostParkConnector;

  private static final AtomicInteger LOST_PARK_STARTS = new AtomicInteger();

  private void startWithAParkWhoseReplyIsLost() {
    add("big", "agg-1", 100);
    add("good", "agg-2", 10);
    parkRepliesLost = 1;
    // A name of its own: its stop's summary, said late from its close thread, is told apart from
    // an earlier test's task's.
    lostParkConnector = "eos-lost-park-" + LOST_PARK_STARTS.incrementAndGet();
    start(
        Map.of(
            "payload.max.bytes",
            "50",
            "dead.letter.topic",
            "dlq",
            "connector.name",
            lostParkConnector));
    assertPollFailed(task, "the park's reply was lost: nothing leaves");
  }

  /** The warnings since {@code mark} of rows parked without their dead-letter records. */
  private static List<LogCapture.Event> unsentDeadLetterWarnings(long mark) {
    return LogCapture.get()
        .matching(mark, e -> e.message().startsWith("Parked FAILED without its dead-letter"));
  }

  /**
   * A stop on another thread that came before a poll handed its batch over found nothing held: the
   * batch, handed over after it, is forgotten with its parks unwritten (its rows stay leased, for
   * the stop's give-back or the next instance's recovery), not parked after the stop. The hand-over
   * checks for a stop once, after it holds the batch, so this is also the check that catches a stop
   * coming between the two (which then found nothing held either).
   */
  @Test
  void aBatchHandedOverAfterAStopOnAnotherThreadIsNotParked() {
    add("big", "agg-1", 100);
    add("good", "agg-2", 10);
    start(Map.of("payload.max.bytes", "50", "dead.letter.topic", "dlq"));
    task.handoff().forgetHeld(); // as stop() on another thread, between the poll's two steps

    List<SourceRecord> records = task.poll();

    assertTrue(records == null || records.isEmpty(), "nothing handed over");
    assertEquals(MessageStatus.IN_FLIGHT, store.find("big").orElseThrow().status(), "not parked");
    assertEquals(0, task.metrics().deadLettered.get());
  }

  /**
   * ... but a row another owner took over and parked under its own claim is a lost claim, and its
   * dead-letter record is not sent (it went out uncounted, and its position matched no row).
   */
  @Test
  void aRetriedParkWhoseRowAnotherOwnerParkedIsALostClaim() {
    add("big", "agg-1", 100);
    parksFail = true;
    start(Map.of("payload.max.bytes", "50", "dead.letter.topic", "dlq"));
    assertPollFailed(task, "the park failed: nothing leaves");
    clock.advance(Duration.ofHours(1)); // the task's lease ran out: another owner takes the row
    ClaimedMessage taken = store.claimAbandoned(previousClaim()).claimed().get(0);
    store.markFailed("big", taken.lease(), UnpublishableReasons.PAYLOAD_TOO_LARGE);
    parksFail = false;

    List<SourceRecord> records = task.poll();

    assertEquals(1, task.metrics().claimLost.get());
    assertEquals(0, task.metrics().deadLettered.get());
    assertTrue(
        records == null || records.isEmpty(),
        () -> "nor its dead-letter copy, the row another owner's: " + records);
    assertEquals(0, task.metrics().inFlight(), "its dead-letter record awaited by nobody");
  }

  /** The same parks written in one go leave with their batch: counted dead-lettered then. */
  @Test
  void deadLetteredParksAreCountedWhenTheirBatchLeaves() {
    add("big-1", "agg-1", 100);
    add("big-2", "agg-2", 100);
    add("good", "agg-3", 10);
    start(Map.of("payload.max.bytes", "50", "dead.letter.topic", "dlq"));

    List<SourceRecord> records = task.poll();

    assertEquals(
        List.of("big-1", "big-2", "good"), records.stream().map(SourceOffsets::messageId).toList());
    assertEquals(List.of("dlq", "dlq"), List.of(records.get(0).topic(), records.get(1).topic()));
    assertEquals(2, task.metrics().deadLettered.get());
    assertEquals(0, task.metrics().failed.get());
  }

  /**
   * A batch claimed ahead that Connect never got, because the task stopped, parks nothing: parked
   * then, its row would be FAILED without its dead-letter record ever sent. Its rows leave the
   * ledger at the stop (the outcome writer does not wait for them) and are given back, due at once
   * and not suspects (nothing of them was sent): the next instance claims them as a batch, and the
   * row is dead-lettered then. Given back by their seqs and leases: releasing every row leased and
   * not held read the keys' whole due backlog at every stop.
   */
  @Test
  void aBatchClaimedAheadAndNeverHandedOverParksNothingAndIsGivenBackAtTheStop() {
    add("a", "agg-1", 10);
    add("b", "agg-2", 10);
    add("big", "agg-3", 100);
    add("c", "agg-4", 10);
    Map<String, String> config =
        Map.of("claim.batch.size", "2", "payload.max.bytes", "50", "dead.letter.topic", "dlq");
    OutboxSourceTask first = start(config);
    List<SourceRecord> handed = first.poll();
    assertEquals(List.of("a", "b"), handed.stream().map(SourceOffsets::messageId).toList());
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> store.find("c").orElseThrow().status() == MessageStatus.IN_FLIGHT);
    // Kafka commits the first batch; then Connect stops the task before the next poll.
    for (SourceRecord record : handed) {
      committedOffsets.commit(record.sourcePartition(), new HashMap<>(record.sourceOffset()));
    }
    first.stop();

    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () ->
                store.find("big").orElseThrow().status() == MessageStatus.PENDING
                    && store.find("c").orElseThrow().status() == MessageStatus.PENDING);
    assertEquals(0, store.find("big").orElseThrow().abandonedClaims(), "given back, not abandoned");
    assertEquals(0, unheldReleases.get(), "by their leases, not by reading the backlog");
    assertEquals(0, first.metrics().deadLettered.get());
    assertEquals(2, first.metrics().inFlight(), "a and b only: c was never handed over");

    List<SourceRecord> next = start(config).poll();

    assertEquals(List.of("big", "c"), next.stream().map(SourceOffsets::messageId).toList());
    assertEquals("dlq", next.get(0).topic());
    assertEquals(MessageStatus.FAILED, store.find("big").orElseThrow().status());
    assertEquals(1, task.metrics().deadLettered.get());
  }

  /**
   * A stopped exactly-once task keeps no 30 s late-acknowledgement grace: Connect acknowledges a
   * transaction's records on the task thread after it commits and stops the task on that thread
   * after the last, so nothing can come after stop(). Its store (the pool) closes after the 2 s
   * left to retry writing outcomes in hand, not after the at-least-once 30 s (the task's clock
   * moves 2 s here); the records Kafka never committed stay leased for the next instance's
   * recovery, and an acknowledgement that came after all would be counted late, not written.
   */
  @Test
  void aStoppedTaskClosesItsStoreWithoutWaitingForAcknowledgementsThatCannotCome() {
    add("a", "agg-1", 10);
    add("b", "agg-2", 10);
    MockTime mockTime = new MockTime();
    time = mockTime;
    OutboxSourceTask first = start();
    List<SourceRecord> records = first.poll();
    assertEquals(2, records.size());

    first.stop();
    mockTime.sleep(1_999);
    // Not before the 2 s: the loop is still there to retry a write in hand.
    await()
        .during(Duration.ofMillis(300))
        .atMost(Duration.ofSeconds(10))
        .until(() -> storeCloses.get() == 0);
    mockTime.sleep(1);

    await().atMost(Duration.ofSeconds(10)).until(() -> storeCloses.get() == 1);
    first.commitRecord(
        records.get(0),
        new RecordMetadata(new TopicPartition(records.get(0).topic(), 0), 0, 0, 0L, 0, 0));
    assertEquals(1, first.metrics().lateAcks.get());
    assertEquals(MessageStatus.IN_FLIGHT, store.find("a").orElseThrow().status());
    assertEquals(MessageStatus.IN_FLIGHT, store.find("b").orElseThrow().status());
  }

  /**
   * A claim that committed although its result never arrived (the connection lost at COMMIT) holds
   * rows that were never handed over. They are released before the next claim, and sent first, in
   * their order: left leased, a later row of their aggregate would have gone first, and the later
   * batch's committed offset would have covered them, so that a recovery recorded them PUBLISHED
   * unsent.
   */
  @Test
  void aClaimWhoseResultNeverArrivedIsReleasedBeforeTheNextClaim() {
    add("a", "agg-1", 10);
    add("b", "agg-1", 10);
    claimResultsLost = 1;
    OutboxSourceTask first = start(Map.of("claim.batch.size", "1"));
    assertPollFailed(first, "the database failed the poll");
    assertEquals(MessageStatus.IN_FLIGHT, store.find("a").orElseThrow().status(), "it committed");

    List<SourceRecord> records = first.poll();

    assertEquals(List.of("a"), records.stream().map(SourceOffsets::messageId).toList());
    assertEquals(1, first.metrics().unconfirmedReleased.get());
    // Kafka commits that batch; the instance dies before writing its outcome.
    committedOffsets.commit(
        records.get(0).sourcePartition(), new HashMap<>(records.get(0).sourceOffset()));
    first.stop();

    List<SourceRecord> next = start(Map.of("claim.batch.size", "1")).poll();

    assertEquals(List.of("b"), next.stream().map(SourceOffsets::messageId).toList());
    assertEquals(MessageStatus.PUBLISHED, store.find("a").orElseThrow().status(), "it was sent");
  }

  /**
   * A trickle's short batch is not followed by a claim ahead, as at least once: claimed ahead,
   * every such batch cost a claim that found nothing (two claims per row at a few hundred rows per
   * second). The next poll waits for a wake-up first; the row after is claimed by one claim.
   */
  @Test
  void aTrickleIsClaimedWithoutAClaimAheadAfterEachShortBatch() {
    OutboxSourceTask t = start();
    await().atMost(Duration.ofSeconds(10)).until(() -> t.poll() == null && !claims.isEmpty());
    add("a", "agg-1", 10);
    List<SourceRecord> first =
        await().atMost(Duration.ofSeconds(10)).until(t::poll, r -> r != null && !r.isEmpty());
    assertEquals(List.of("a"), first.stream().map(SourceOffsets::messageId).toList());
    int claimed = claims.size();

    assertNull(t.poll(), "after a short batch while caught up: a wait first");
    assertEquals(claimed, claims.size(), "nothing claimed ahead after the batch that took a");

    add("b", "agg-2", 10);
    List<SourceRecord> second =
        await().atMost(Duration.ofSeconds(10)).until(t::poll, r -> r != null && !r.isEmpty());
    assertEquals(List.of("b"), second.stream().map(SourceOffsets::messageId).toList());
    assertEquals(claimed + 1, claims.size(), "one claim for b");
  }

  /**
   * A PUBLISHED write the database lost after Kafka committed the record (a failover, or the
   * server's synchronous_commit=off) leaves its row leased to the task and not held. A later claim
   * whose result never arrived releases what the task does not hold, but not that row: it was
   * handed to Connect, and only recovery, by the committed offset, may settle it. Released, it was
   * sent a second time, after the later rows of its aggregate.
   */
  @Test
  void aRowOfABatchHandedToConnectIsNotReleasedWithALaterLostClaim() {
    add("a", "agg-1", 10);
    add("b", "agg-2", 10);
    publishesLost = true;
    OutboxSourceTask t = start(Map.of("claim.batch.size", "1"));
    List<SourceRecord> first = t.poll();
    assertEquals(List.of("a"), first.stream().map(SourceOffsets::messageId).toList());
    t.commitRecord(
        first.get(0),
        new RecordMetadata(new TopicPartition(first.get(0).topic(), 0), 0, 0, 0L, 0, 0));
    await().atMost(Duration.ofSeconds(10)).until(() -> lostPublishes.get() == 1);
    await() // b claimed ahead
        .atMost(Duration.ofSeconds(10))
        .until(() -> store.find("b").orElseThrow().status() == MessageStatus.IN_FLIGHT);
    claimResultsLost = 1; // the next claim ahead commits (finding nothing) and its reply is lost
    assertEquals(List.of("b"), t.poll().stream().map(SourceOffsets::messageId).toList());
    await().atMost(Duration.ofSeconds(10)).until(() -> claimResultsLost == 0);
    assertPollFailed(t, "the database failed the poll");

    List<SourceRecord> next = t.poll();

    assertTrue(next == null || next.isEmpty(), "nothing sent again: " + next);
    assertEquals(MessageStatus.IN_FLIGHT, store.find("a").orElseThrow().status());
    assertEquals(0, t.metrics().unconfirmedReleased.get());
  }

  /**
   * A worker without exactly-once support (turned off after the connector was created) runs the
   * task as a plain source task: its acknowledgements come from the producer's thread, not the
   * task's after a commit. The outcome is still written (the record is in Kafka), and the next poll
   * fails the task, saying what to fix.
   */
  @Test
  void anAcknowledgementOutsideATransactionFailsTheTaskAtItsNextPoll() throws Exception {
    add("a", "agg-1", 10);
    add("b", "agg-2", 10);
    OutboxSourceTask t = start(Map.of("claim.batch.size", "1"));
    List<SourceRecord> first = t.poll();
    SourceRecord a = first.get(0);
    Thread producerIo =
        new Thread(
            () ->
                t.commitRecord(
                    a, new RecordMetadata(new TopicPartition(a.topic(), 0), 0, 0, 0L, 0, 0)));
    producerIo.start();
    producerIo.join();

    ConnectException e = assertThrows(ConnectException.class, t::poll);

    assertTrue(e.getMessage().contains("exactly.once.source.support=enabled"), e.getMessage());
    assertTrue(e.getMessage().contains("reason=NO_EXACTLY_ONCE_SUPPORT"), e.getMessage());
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> store.find("a").orElseThrow().status() == MessageStatus.PUBLISHED);
  }

  @Test
  void theNextBatchIsClaimedWhileConnectCommitsTheCurrentOne() {
    add("a", "agg-1", 10);
    add("b", "agg-2", 10);
    List<SourceRecord> first = start(Map.of("claim.batch.size", "1")).poll();
    assertEquals(List.of("a"), first.stream().map(SourceOffsets::messageId).toList());
    // No second poll yet: the prefetch claims b meanwhile, under the next claim number.
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> store.find("b").orElseThrow().status() == MessageStatus.IN_FLIGHT);
    List<SourceRecord> second = task.poll();
    assertEquals(List.of("b"), second.stream().map(SourceOffsets::messageId).toList());
    assertEquals(
        (Long) first.get(0).sourceOffset().get(SourceOffsets.BATCH) + 1,
        second.get(0).sourceOffset().get(SourceOffsets.BATCH));
  }

  /**
   * A claim that only parked a row over its budget made progress: the next poll takes the batch
   * claimed ahead after it at once, as at least once. It waited the idle wait's first step first.
   */
  @Test
  void aClaimThatOnlyParkedRowsIsFollowedByTheNextBatchWithoutAWait() {
    add("a1", "agg-1", 10);
    ClaimRequest earlier =
        new ClaimRequest("earlier", Set.of("eu"), 1, Duration.ofMinutes(1), 10, true);
    for (int i = 0; i < 2; i++) {
      var m = store.claim(earlier).claimed().get(0);
      store.retryLater("a1", m.lease(), "DELIVERY_UNCONFIRMED", Duration.ZERO, 10);
    }
    add("b1", "agg-2", 10);
    OutboxSourceTask task =
        start(Map.of("max.attempts", "2", "claim.batch.size", "1", "poll.interval.ms", "600000"));

    List<String> sent = new ArrayList<>();
    for (int i = 0; i < 5 && sent.isEmpty(); i++) {
      List<SourceRecord> records = task.poll();
      sent.addAll(records == null ? List.of() : ids(records));
    }

    assertEquals(List.of("b1"), sent);
    assertEquals(MessageStatus.EXHAUSTED, store.find("a1").orElseThrow().status());
    assertEquals(0, task.pollPause().slicesWaited(), "no poll waited");
  }

  /**
   * A record that fails its task (a converter's or transform's exception, a broker's refusal)
   * aborts its whole batch's transaction, and each restarted task claimed it again with its batch:
   * a crash loop that also held back its bucket. Once a batch has failed twice, the next instance
   * sends its rows alone, one transaction each; the culprit fails alone, is charged by the recovery
   * after that, and ends EXHAUSTED after max.attempts; the rows beside it are sent uncharged.
   */
  @Test
  void aRecordThatFailsItsTaskIsSentAloneThenExhaustedInsteadOfFailingEveryRestart() {
    add("a", "agg-1", 10);
    add("poison", "agg-2", 10);
    add("b", "agg-3", 10);
    Map<String, String> config = Map.of("max.attempts", "2");
    OutboxSourceTask first = start(config);
    assertEquals(List.of("a", "poison", "b"), ids(first.poll()));
    first.stop(); // the transaction aborted on the poison record, and the task failed
    OutboxSourceTask second = start(config);
    assertEquals(List.of("a", "poison", "b"), ids(second.poll()), "once may be a crash");
    second.stop(); // and again

    OutboxSourceTask third = start(config);
    List<SourceRecord> aloneA = third.poll();
    assertEquals(List.of("a"), ids(aloneA), "twice: each row alone");
    // A poll before Kafka committed it (transaction.boundary=interval polls on) claims nothing.
    assertEquals(List.of(), ids(third.poll()), "alone in its transaction");
    commitTransaction(third, aloneA);
    assertEquals(
        List.of("poison"), nextRecords(third), "then the next, alone, once a was recorded");
    assertEquals(MessageStatus.PUBLISHED, store.find("a").orElseThrow().status());
    third.stop(); // it fails its task again, alone this time
    assertEquals(0, store.find("poison").orElseThrow().attempts());

    OutboxSourceTask fourth = start(config);
    assertEquals(List.of("poison"), ids(fourth.poll()), "charged, and alone again");
    assertEquals(1, store.find("poison").orElseThrow().attempts());
    assertEquals(1, fourth.metrics().abandonedReclaimed.get());
    fourth.stop();

    OutboxSourceTask fifth = start(config);
    List<SourceRecord> afterPoison = fifth.poll();
    assertEquals(List.of("b"), ids(afterPoison), "b goes on once the culprit is parked");
    RowState poison = store.find("poison").orElseThrow();
    assertEquals(MessageStatus.EXHAUSTED, poison.status());
    assertEquals(ReasonCodes.ABANDONED_IN_ISOLATION, poison.lastFailureCode());
    assertEquals(1, fifth.metrics().exhausted.get());
    assertEquals(0, store.find("b").orElseThrow().attempts());
    commitTransaction(fifth, afterPoison);
    // No suspect left: due rows go in batches again (b's hand-over may have claimed c ahead).
    add("c", "agg-4", 10);
    add("d", "agg-5", 10);
    List<String> after = new ArrayList<>(nextRecords(fifth));
    if (after.size() == 1) {
      after.addAll(nextRecords(fifth));
    }
    assertEquals(List.of("c", "d"), after);
  }

  /**
   * A suspect another session holds locked (its claim fails at once, NOWAIT) is not taken for
   * settled: nothing is claimed until the lock is gone (due rows meanwhile would send the other
   * suspects in one batch), said once naming the row, and then the suspect goes alone.
   */
  @Test
  void aLockedSuspectIsWaitedForAndThenSentAlone() {
    add("a", "agg-1", 10);
    add("b", "agg-2", 10);
    start().poll();
    task.stop(); // the transaction aborted, and the task failed
    start().poll();
    task.stop(); // and again: a and b are suspects for the next instance
    suspectsLocked = true;
    long mark = LogCapture.get().mark();
    OutboxSourceTask third = start();
    claims.clear();

    List<SourceRecord> locked = third.poll();
    List<SourceRecord> stillLocked = third.poll();

    assertTrue(locked == null || locked.isEmpty(), "nothing claimed while it is locked");
    assertTrue(stillLocked == null || stillLocked.isEmpty());
    assertTrue(claims.stream().allMatch(c -> c.exactlyOnce().isolates()), claims::toString);
    assertEquals(
        1,
        LogCapture.get().matching(mark, e -> e.message().contains("SUSPECT_LOCKED")).size(),
        "said once while it lasts");

    suspectsLocked = false;
    assertEquals(List.of("a"), nextRecords(third), "then the suspect, alone");
  }

  /**
   * With transaction.boundary=interval a transaction commits only at the end of its interval, so a
   * suspect alone would hold the task a whole interval: suspects go with due rows, as before.
   */
  @Test
  void suspectsAreNotIsolatedWithAnIntervalTransactionBoundary() {
    add("a", "agg-1", 10);
    add("b", "agg-2", 10);
    Map<String, String> config = Map.of("transaction.boundary", "interval");
    for (int instance = 0; instance < 3; instance++) {
      OutboxSourceTask next = start(config);
      assertEquals(List.of("a", "b"), ids(next.poll()), "instance " + instance);
      next.stop();
    }
    assertEquals(2, store.find("a").orElseThrow().abandonedClaims(), "released twice, not alone");
  }

  /** The ids of the next records {@code instance} hands over, polling until there are some. */
  private static List<String> nextRecords(OutboxSourceTask instance) {
    List<List<String>> handed = new ArrayList<>();
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () -> {
              List<String> ids = ids(instance.poll());
              return !ids.isEmpty() && handed.add(ids);
            });
    return handed.get(0);
  }

  /**
   * The next records the task hands over, polled on this thread: Connect calls poll() and commit()
   * on the task's one thread, and commit() from another says nothing.
   */
  private List<SourceRecord> nextRecordsOnThisThread() {
    for (int polls = 0; polls < 10_000; polls++) {
      List<SourceRecord> records = task.poll();
      if (records != null && !records.isEmpty()) {
        return records;
      }
      task.commit(); // as Connect's exactly-once task does after a poll with nothing to send
    }
    throw new AssertionError("no records handed over");
  }

  private static List<String> ids(List<SourceRecord> records) {
    return records == null ? List.of() : records.stream().map(SourceOffsets::messageId).toList();
  }

  /** What Connect does once a poll's transaction commits: its offsets, then each record's ack. */
  private void commitTransaction(OutboxSourceTask instance, List<SourceRecord> records) {
    long offset = 0;
    for (SourceRecord record : records) {
      committedOffsets.commit(record.sourcePartition(), new HashMap<>(record.sourceOffset()));
      instance.commitRecord(
          record, new RecordMetadata(new TopicPartition(record.topic(), 0), offset++, 0, 0L, 0, 0));
    }
  }

  private static ClaimRequest previousClaim() {
    return new ClaimRequest(PREVIOUS, Set.of("eu"), 10, Duration.ofSeconds(30), 5, true);
  }

  private void commit(ClaimedMessage row, long epoch, long batch) {
    int bucket = ALL.bucketOf(row.aggregateHash());
    commit(SourceOffsets.bucketPartition(row.instanceKey(), bucket, BUCKETS), row, epoch, batch);
  }

  private void commit(Map<String, Object> partition, ClaimedMessage row, long epoch, long batch) {
    committedOffsets.commit(
        partition,
        Map.of(
            SourceOffsets.EPOCH, epoch, SourceOffsets.BATCH, batch, SourceOffsets.SEQ, row.seq()));
  }

  private void add(String id, String aggregate, int payloadBytes) {
    store.enqueue(
        "eu",
        OutboxMessage.builder()
            .messageId(id)
            .aggregateType("order")
            .aggregateId(aggregate)
            .eventType("OrderPlaced")
            .payload(new byte[payloadBytes])
            .build());
  }

  private OutboxSourceTask start() {
    return start(Map.of());
  }

  private OutboxSourceTask start(Map<String, String> overrides) {
    Map<String, String> props = new HashMap<>();
    props.put("connection.url", "jdbc:postgresql://localhost:1/unused");
    props.put("instance.keys", "eu");
    props.put("poll.interval.ms", "10");
    props.put("claim.batch.size", "10");
    props.put("notify.enabled", "false");
    props.put("delivery.guarantee", "exactly-once");
    props.put("exactly.once.support", "required");
    props.put("exactly.once.buckets", Integer.toString(BUCKETS));
    props.putAll(overrides);
    OutboxStore parksMayFail = parksMayFail(store);
    provider = new FixedStoreProvider(parksMayFail, () -> clock);
    task = new OutboxSourceTask(provider, time);
    task.initialize(new Context());
    task.start(props);
    // A stop waits for its question's answer as long as a loaded machine may take to give it;
    // the test of a stop that does not wait for it sets none.
    task.stopQuestionWait(Duration.ofSeconds(30));
    return task;
  }

  /** What the driver reports when the database goes away mid-statement. */
  private static OutboxStoreException outage(String operation) {
    return new OutboxStoreException(
        OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", operation);
  }

  /** The store, but {@code park} fails as in an outage while {@link #parksFail}. */
  private OutboxStore parksMayFail(OutboxStore delegate) {
    return (OutboxStore)
        Proxy.newProxyInstance(
            OutboxStore.class.getClassLoader(),
            new Class<?>[] {OutboxStore.class},
            (proxy, method, args) -> {
              if (method.getName().equals("close")) {
                storeCloses.incrementAndGet();
              }
              if (method.getName().equals("releaseUnheld")) {
                unheldReleases.incrementAndGet();
              }
              if (method.getName().equals("park")) {
                parkStatements.incrementAndGet();
              }
              if (method.getName().equals("park") && parksFail) {
                throw outage("park");
              }
              if (method.getName().equals("park")
                  && ((List<?>) args[0])
                      .stream()
                          .anyMatch(r -> ((ParkRequest) r).messageId().equals(parkRefusedFor))) {
                if (parkRefusalState == null) { // a pool that could not give a connection
                  throw new OutboxStoreException(
                          OutboxStoreException.Kind.INTERNAL, "DB_ERROR", null, "park")
                      .beforeSending();
                }
                throw new OutboxStoreException(
                    OutboxStoreException.Kind.INVALID_DATA,
                    "DB_INVALID_DATA",
                    parkRefusalState,
                    "park");
              }
              if (method.getName().equals("markFailed") && markFailedFails) {
                throw outage("mark failed");
              }
              if (method.getName().equals("park") && parksFailBeforeSending) {
                throw outage("park").beforeSending();
              }
              CountDownLatch[] pause = parkPause;
              if (pause != null && method.getName().equals("park")) {
                pause[0].countDown();
                assertTrue(pause[1].await(30, TimeUnit.SECONDS), "resumed");
              }
              if (method.getName().equals("parkedUnderOwnLease") && task != null) {
                renewerStoppedAtParkChecks.add(task.renewerStopping());
              }
              CountDownLatch[] checkPause = parkCheckPause;
              if (checkPause != null && method.getName().equals("parkedUnderOwnLease")) {
                checkPause[0].countDown();
                assertTrue(checkPause[1].await(30, TimeUnit.SECONDS), "resumed");
              }
              if (ownParkChecksFail > 0 && method.getName().equals("parkedUnderOwnLease")) {
                ownParkChecksFail--;
                throw outage("park check");
              }
              if (parkRepliesLost > 0 && method.getName().equals("park")) {
                parkRepliesLost--;
                method.invoke(delegate, args); // committed, but the reply is lost
                throw outage("park");
              }
              if (method.getName().equals("claim")) {
                ClaimRequest request = (ClaimRequest) args[0];
                claims.add(request);
                if (suspectsLocked && request.exactlyOnce().isolates()) {
                  throw new OutboxStoreException(
                      OutboxStoreException.Kind.TRANSIENT,
                      "DB_LOCK_NOT_AVAILABLE",
                      "55P03",
                      "claim");
                }
              }
              if (claimResultsLost > 0 && method.getName().equals("claim")) {
                claimResultsLost--;
                method.invoke(delegate, args); // committed, but the result is lost
                throw outage("claim");
              }
              if (recoveryPageRows > 0 && method.getName().equals("recover")) {
                args[3] = Math.min((Integer) args[3], recoveryPageRows);
              }
              if (method.getName().equals("recover") && ((RecoveryRequest) args[0]).expiredOnly()) {
                sweepPages.incrementAndGet();
              }
              String sweepFails = sweepFailure;
              if (sweepFails != null
                  && method.getName().equals("recover")
                  && ((RecoveryRequest) args[0]).expiredOnly()) {
                sweepFailure = null;
                if (sweepFailsAfterMs > 0) {
                  time.sleep(sweepFailsAfterMs); // waited out the statement timeout
                }
                throw new OutboxStoreException(
                    OutboxStoreException.Kind.TRANSIENT, "DB_ERROR", sweepFails, "recover");
              }
              if (recoveryRepliesLost > 0 && method.getName().equals("recover")) {
                recoveryRepliesLost--;
                method.invoke(delegate, args); // committed, but the reply is lost
                throw outage("recover");
              }
              if (recoveriesLost > 0 && method.getName().equals("recover")) {
                recoveriesLost--;
                return new RecoveryPage(Recovery.NONE, (Long) args[2], false);
              }
              if (publishesLost
                  && method.getName().equals("markPublished")
                  && args[0] instanceof List<?> acks) {
                lostPublishes.incrementAndGet();
                return acks.stream().map(ack -> Outcome.APPLIED).toList();
              }
              if (epochsFail && method.getName().equals("newEpoch")) {
                throw outage("new-epoch");
              }
              try {
                return method.invoke(delegate, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  private final class Context implements SourceTaskContext {
    @Override
    public Map<String, String> configs() {
      return Map.of();
    }

    @Override
    public OffsetStorageReader offsetStorageReader() {
      OffsetStorageReader reader = committedOffsets.reader();
      return new OffsetStorageReader() {
        @Override
        public <T> Map<String, Object> offset(Map<String, T> partition) {
          return offsets(List.of(partition)).get(partition);
        }

        @Override
        public <T> Map<Map<String, T>, Map<String, Object>> offsets(
            java.util.Collection<Map<String, T>> partitions) {
          offsetReads.incrementAndGet();
          if (offsetsUnreadable) {
            throw new org.apache.kafka.connect.errors.ConnectException("offsets topic refused");
          }
          return reader.offsets(partitions);
        }
      };
    }

    @Override
    public PluginMetrics pluginMetrics() {
      return null;
    }
  }
}
