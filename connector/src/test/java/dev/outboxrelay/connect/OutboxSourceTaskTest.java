package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.mapping.SourceOffsets;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ManualClock;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.ReasonCodes;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.memory.InMemoryOutboxStore;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.SteppableTime;
import dev.outboxrelay.writer.OutboxMessage;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
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
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.MDC;

/**
 * The task's own logic against the in-memory store (held to the PostgreSQL store's behaviour by the
 * shared contract). The Connect-cluster tests cover the same paths end to end.
 */
class OutboxSourceTaskTest {
  private static final Duration LEASE = Duration.ofSeconds(30);
  private final ManualClock clock = new ManualClock(Instant.parse("2026-11-29T12:00:00Z"));
  private InMemoryOutboxStore store;
  private FailingStore failing;
  private FixedStoreProvider provider;
  private OutboxSourceTask task;
  private Time time = Time.SYSTEM;
  private RelayClock taskClock = clock;

  private String testName;

  @BeforeEach
  void setUp(org.junit.jupiter.api.TestInfo info) {
    testName = info.getTestMethod().map(java.lang.reflect.Method::getName).orElse("test");
    store = new InMemoryOutboxStore(clock);
    failing = new FailingStore(store);
  }

  @AfterEach
  void tearDown() {
    if (task != null) {
      stopMovingTheClock(task);
    }
  }

  /**
   * Stops the task. Its stop waits up to a flush timeout for outcomes not yet written, on the
   * task's clock: a MockTime is moved until the stop returns.
   */
  private void stopMovingTheClock(OutboxSourceTask t) {
    if (!(time instanceof MockTime mockTime)) {
      t.stop();
      return;
    }
    Thread stopper = new Thread(t::stop);
    stopper.start();
    await()
        .until(
            () -> {
              mockTime.sleep(100);
              return !stopper.isAlive();
            });
  }

  /**
   * A failure the relay did not classify (a bug; a library's exception) fails the task naming only
   * its class: its message and causes, which may quote row data or the connection, never reach the
   * status trace Connect's REST API shows.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("unclassifiedFailures")
  void anUnclassifiedFailureFailsTheTaskWithoutItsText(Throwable bug) {
    OutboxSourceTask task = startTask(Map.of());
    failing.claimBug = bug;
    long mark = LogCapture.get().mark();

    ConnectException e = assertThrows(ConnectException.class, task::poll);

    assertFalse(e instanceof RetriableException, "fails the task");
    assertNull(e.getCause());
    assertTrue(e.getMessage().contains(bug.getClass().getName()), e.getMessage());
    assertTrue(e.getMessage().contains("reason=INTERNAL_ERROR"), e.getMessage());
    assertFalse(e.getMessage().contains("SENTINEL"), e.getMessage());
    assertTrue(
        LogCapture.get().matching(mark, l -> l.message().contains("SENTINEL")).isEmpty(),
        "nor in the log");
  }

  /** A Kafka client's retriable failure is retried, as Connect's own are, without its text. */
  @Test
  void aKafkaClientsRetriableFailureIsRetried() {
    OutboxSourceTask task = startTask(Map.of());
    failing.claimBug = new org.apache.kafka.common.errors.TimeoutException("SENTINEL");

    RetriableException e = assertThrows(RetriableException.class, task::poll);

    assertFalse(e.getMessage().contains("SENTINEL"), e.getMessage());
    assertNull(e.getCause());
  }

  /**
   * A class the plugin path lacks is named (the clue to a packaging mistake), where the JVM's
   * message is a class name alone; any other text is not.
   */
  @Test
  void aMissingClassIsNamedAndNothingElseOfItsMessage() {
    OutboxSourceTask task = startTask(Map.of());
    failing.claimBug = new NoClassDefFoundError("com/example/Missing$Inner");
    ConnectException e = assertThrows(ConnectException.class, task::poll);
    assertTrue(
        e.getMessage().contains("(missing class com/example/Missing$Inner)"), e.getMessage());

    task.stop();
    OutboxSourceTask other = startTask(Map.of());
    failing.claimBug = new NoClassDefFoundError("SENTINEL password=s3cret");
    ConnectException hidden = assertThrows(ConnectException.class, other::poll);
    assertFalse(hidden.getMessage().contains("SENTINEL"), hidden.getMessage());
  }

  /** A bug's exception, and a library's Error (a class that failed to initialize). */
  static List<Throwable> unclassifiedFailures() {
    return List.of(
        new IllegalStateException(
            "SENTINEL password=s3cret", new java.sql.SQLException("SENTINEL2 row payload")),
        new ExceptionInInitializerError(new IllegalStateException("SENTINEL password=s3cret")));
  }

  /** So is a start that fails unclassified: its class named, its text and causes not. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("unclassifiedFailures")
  void anUnclassifiedFailureAtStartFailsItWithoutItsText(Throwable bug) {
    Map<String, String> props = new HashMap<>();
    props.put("connection.url", "jdbc:postgresql://localhost:1/unused");
    props.put("instance.keys", "eu");
    props.put("connector.name", "task-test-" + testName);
    FixedStoreProvider refusing = new FixedStoreProvider(failing, () -> taskClock);
    refusing.openFailure = bug;
    OutboxSourceTask failed = new OutboxSourceTask(refusing, time);
    failed.initialize(new NoMetricsContext());

    ConnectException e = assertThrows(ConnectException.class, () -> failed.start(props));

    assertNull(e.getCause());
    assertTrue(e.getMessage().contains("reason=INTERNAL_ERROR"), e.getMessage());
    assertFalse(e.getMessage().contains("SENTINEL"), e.getMessage());
  }

  private OutboxSourceTask startTask(Map<String, String> overrides) {
    Map<String, String> props = new HashMap<>();
    props.put("connection.url", "jdbc:postgresql://localhost:1/unused");
    props.put("instance.keys", "eu");
    props.put("poll.interval.ms", "10");
    props.put("claim.batch.size", "10");
    props.put("notify.enabled", "false");
    // A connector of the test's own: a task stopped by an earlier test, still in its grace, is
    // then no earlier instance of this one (TaskSuccession), whose end would log meanwhile.
    props.put("connector.name", "task-test-" + testName);
    props.putAll(overrides);
    provider = new FixedStoreProvider(failing, () -> taskClock);
    OutboxSourceTask t = new OutboxSourceTask(provider, time);
    t.initialize(new NoMetricsContext());
    t.start(props);
    task = t;
    return t;
  }

  /** Leases short enough for renewals to come due within a test. */
  private static final Map<String, String> SHORT_LEASES =
      Map.of(
          "lease.duration.ms", "2000",
          "lease.renewal.interval.ms", "200",
          "poll.interval.ms", "100");

  /** The lease of {@code m1} runs out by the store's clock, and another owner reclaims the row. */
  private void takenOverByAnotherOwner() {
    clock.advance(Duration.ofSeconds(5));
    assertEquals(
        1,
        store
            .claimAbandoned(
                new ClaimRequest("other", Set.of("eu"), 10, Duration.ofSeconds(30), 10, true))
            .claimed()
            .size());
  }

  /**
   * A renewal comes due between the retries of the outcome write in hand, and runs to its end: the
   * store counts a renewal as it starts, and the write retried after it shows that the renewer has
   * done with its result (a lost claim it would report is counted by then).
   */
  private void renewalBetweenRetries(MockTime mockTime) {
    int renewals = failing.renewCalls.get();
    mockTime.sleep(300);
    await().until(() -> failing.renewCalls.get() > renewals);
    int publishes = failing.publishCalls.get();
    await().until(() -> failing.publishCalls.get() > publishes);
  }

  /**
   * A claim that committed but whose reply never arrived, followed by a stop before the next claim
   * (which would have released it): its rows are given back at the stop, due at once, not left to
   * wait out their leases and come back as abandoned rows, reclaimed alone and counted as possible
   * duplicates though no record of them was sent.
   */
  @Test
  void aClaimWhoseReplyWasLostIsGivenBackAtStop() {
    MockTime mockTime = new MockTime();
    time = mockTime;
    add("eu", "held", "a", "{}".getBytes());
    startTask(Map.of("claim.batch.size", "1"));
    List<SourceRecord> first = task.poll();
    assertEquals(List.of("held"), messageIds(first));
    add("eu", "m1", "b", "{}".getBytes());
    failing.nextClaimLosesItsReply = true;
    assertPollFailed(task, "the database failed the poll");
    assertEquals(MessageStatus.IN_FLIGHT, status("m1"));

    stopPastTheGrace(mockTime); // "held" never acknowledged: its lease ends, an abandoned row

    var m1 = store.find("m1").orElseThrow();
    assertEquals(MessageStatus.PENDING, m1.status());
    assertNull(m1.leaseOwner());
    assertEquals(1, task.metrics().unconfirmedReleased.get());
    assertEquals(MessageStatus.IN_FLIGHT, status("held"));
  }

  /**
   * A stopped task waits out its grace for acknowledgements of the records Kafka has not
   * acknowledged, but not once Connect starts the task's next instance in this worker: the stopped
   * instance's producer is closed by then, so its leases end at once (its rows abandoned rows, for
   * the next instance to reclaim) instead of 30 s later, while its aggregates' next rows wait.
   */
  @Test
  void aStoppedTaskEndsItsUnacknowledgedLeasesOnceItsNextInstanceStarts() {
    MockTime mockTime = new MockTime();
    time = mockTime;
    add("eu", "m1", "a", "{}".getBytes());
    Map<String, String> named = aConnectorOfItsOwn();
    OutboxSourceTask first = startTask(named);
    assertEquals(List.of("m1"), messageIds(first.poll())); // never acknowledged
    stopMovingTheClock(first);
    assertEquals(0, failing.closes.get(), "the stopped instance waits for late acknowledgements");
    long mark = LogCapture.get().mark();

    startTask(named); // the same connector's task 0 again

    await().until(() -> failing.closes.get() == 1);
    assertEquals(1, leasesEndedAtStop(mark, named, "m1"));
  }

  /**
   * ... but what Kafka acknowledged before it is still written: an acknowledgement queued behind a
   * write that keeps failing when the next instance starts ends PUBLISHED, not late.
   */
  @Test
  void anAcknowledgementQueuedWhenTheNextInstanceStartsIsStillWritten() {
    add("eu", "m1", "a", "{}".getBytes());
    add("eu", "m2", "b", "{}".getBytes());
    Map<String, String> named = aConnectorOfItsOwn();
    OutboxSourceTask first = startTask(named);
    List<SourceRecord> records = first.poll();
    assertEquals(List.of("m1", "m2"), messageIds(records));
    failing.publishesFail = true;
    first.commitRecord(records.get(0), metadata(records.get(0), 1));
    await().until(() -> failing.publishCalls.get() >= 1); // in hand, failing
    first.commitRecord(records.get(1), metadata(records.get(1), 2)); // queued behind it
    first.stop();

    startTask(named);
    failing.publishesFail = false;

    await().until(() -> failing.closes.get() == 1);
    assertEquals(MessageStatus.PUBLISHED, status("m1"));
    assertEquals(MessageStatus.PUBLISHED, status("m2"));
    assertEquals(0, first.metrics().lateAcks.get());
  }

  /**
   * A stopped task waits for acknowledgements only while Connect closes its producer (which waits
   * for what it still sends): one that comes meanwhile is written; once the close has returned, no
   * other can come, and the leases of the rows still unresolved end at once, not after the 30 s
   * grace (a task that failed has no successor to cut the grace short).
   */
  @Test
  void aStoppedTaskEndsItsUnacknowledgedLeasesOnceConnectHasClosedItsProducer() throws Exception {
    MockTime mockTime = new MockTime();
    time = mockTime;
    add("eu", "m1", "a", "{}".getBytes());
    add("eu", "m2", "b", "{}".getBytes());
    Map<String, String> named = aConnectorOfItsOwn();
    OutboxSourceTask t = startTask(named);
    List<SourceRecord> records = t.poll();
    assertEquals(List.of("m1", "m2"), messageIds(records));
    CountDownLatch producerClosed = new CountDownLatch(1);
    CountDownLatch stopped = new CountDownLatch(1);
    Thread connect =
        new Thread(
            () -> {
              try {
                org.apache.kafka.connect.runtime.StandInWorkerSourceTask.close(
                    () -> {
                      t.stop();
                      stopped.countDown();
                    },
                    producerClosed);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    connect.start();
    assertTrue(stopped.await(30, TimeUnit.SECONDS));

    t.commitRecord(records.get(0), metadata(records.get(0), 1)); // while the producer closes
    await().until(() -> status("m1") == MessageStatus.PUBLISHED);
    assertEquals(0, failing.closes.get(), "the producer is still closing: m2 may yet come");
    long mark = LogCapture.get().mark();
    producerClosed.countDown();

    await().until(() -> failing.closes.get() == 1);
    assertEquals(1, leasesEndedAtStop(mark, named, "m2"));
    connect.join();
  }

  /** Lines since {@code mark} of task 0 of that connector ending the lease of {@code id}. */
  private static long leasesEndedAtStop(long mark, Map<String, String> connector, String id) {
    String thread = "outbox-relay-outcomes-" + connector.get("connector.name") + "-0";
    return LogCapture.get()
        .matching(
            mark,
            e ->
                e.thread().equals(thread)
                    && e.message().startsWith("Lease ended at stop without a written outcome")
                    && e.message().contains("message_id=" + id))
        .size();
  }

  /** The task config of a connector no other test's tasks share: successors are per task. */
  private static Map<String, String> aConnectorOfItsOwn() {
    return Map.of("connector.name", "successor-" + java.util.UUID.randomUUID());
  }

  /** Stops the task and lets the stop's grace end: an outcome still unwritten is abandoned. */
  private void stopPastTheGrace(MockTime mockTime) {
    stopMovingTheClock(task);
    mockTime.sleep(30_000);
    await().until(() -> failing.closes.get() == 1);
  }

  private void add(String key, String id, String aggregate, byte[] payload) {
    store.enqueue(
        key,
        OutboxMessage.builder()
            .messageId(id)
            .aggregateType("order")
            .aggregateId(aggregate)
            .eventType("OrderPlaced")
            .payload(payload)
            .build());
  }

  private static RecordMetadata metadata(SourceRecord r, long offset) {
    return new RecordMetadata(new TopicPartition(r.topic(), 0), offset, 0, 0L, 0, 0);
  }

  private MessageStatus status(String id) {
    return store.find(id).orElseThrow().status();
  }

  private static List<String> messageIds(List<SourceRecord> records) {
    return records == null ? List.of() : records.stream().map(SourceOffsets::messageId).toList();
  }

  @Test
  void aTrickleIsClaimedRowByRowWithoutAnEmptyClaimAfterEachRow() {
    startTask(Map.of());
    assertNull(task.poll(), "idle: the first claim finds nothing");
    assertEquals(1, failing.claimCalls.get());

    add("eu", "m1", "a", "{}".getBytes());
    assertEquals(List.of("m1"), messageIds(task.poll()));
    add("eu", "m2", "b", "{}".getBytes());
    assertNull(task.poll(), "after a short batch while caught up: wait for a wake-up first");
    assertEquals(2, failing.claimCalls.get(), "no claim right after the one that took m1");
    assertEquals(List.of("m2"), messageIds(task.poll()));
    assertEquals(3, failing.claimCalls.get());
  }

  @Test
  void aBacklogIsClaimedBackToBackThroughItsLastShortBatch() {
    for (int i = 0; i < 25; i++) {
      add("eu", "m" + i, "a" + i, "{}".getBytes());
    }
    startTask(Map.of());
    assertEquals(10, messageIds(task.poll()).size());
    assertEquals(10, messageIds(task.poll()).size());
    assertEquals(5, messageIds(task.poll()).size());
    assertNull(task.poll(), "the claim after the last short batch ran and found nothing");
    assertEquals(4, failing.claimCalls.get());
  }

  @Test
  void orderedTasksPreferTheirOwnShareOfAggregatesSoNeitherStarves() {
    // 40 aggregates, two rows each: a batch of 50 taken by one task without affinity would cover
    // every aggregate and leave the other task nothing.
    for (int round = 0; round < 2; round++) {
      for (int a = 0; a < 40; a++) {
        add("eu", "m" + round + "-" + a, "agg-" + a, "{}".getBytes());
      }
    }
    // Small rows: a task's first claim assumes rows of payload.max.bytes and would take fewer.
    Map<String, String> props =
        Map.of(
            "claim.batch.size",
            "50",
            "payload.max.bytes",
            "1000",
            OutboxSourceTask.TASK_COUNT,
            "2");
    Map<String, String> first = new HashMap<>(props);
    first.put(OutboxSourceTask.TASK_ID, "0");
    OutboxSourceTask task0 = startTask(first);
    Map<String, String> second = new HashMap<>(props);
    second.put(OutboxSourceTask.TASK_ID, "1");
    try {
      List<String> claimed0 = messageIds(task0.poll());
      OutboxSourceTask task1 = startTask(second);
      List<String> claimed1 = messageIds(task1.poll());
      assertFalse(claimed0.isEmpty());
      assertFalse(claimed1.isEmpty(), "the second task starved");
      assertEquals(80, claimed0.size() + claimed1.size(), "each took its whole share");
      assertTrue(java.util.Collections.disjoint(claimed0, claimed1));
    } finally {
      task0.stop();
    }
  }

  @Test
  void anOrderedTaskWhoseShareIsDryHelpsWithTheOthers() {
    // Only aggregates of share 1 (the in-memory store's rule): task 0 of 2 still claims them.
    int added = 0;
    for (int a = 0; added < 5; a++) {
      if (Math.floorMod(("agg-" + a).hashCode(), 2) == 1) {
        add("eu", "m" + a, "agg-" + a, "{}".getBytes());
        added++;
      }
    }
    MockTime mockTime = new MockTime();
    time = mockTime;
    OutboxSourceTask t =
        startTask(
            Map.of(
                OutboxSourceTask.TASK_ID,
                "0",
                OutboxSourceTask.TASK_COUNT,
                "2",
                "lease.duration.ms",
                "8000",
                "lease.renewal.interval.ms",
                "2000"));
    // It leaves them to their own task for a quarter of a lease: taking them at once would block
    // the aggregates that task is working through.
    assertNull(t.poll());
    mockTime.sleep(1999);
    assertNull(t.poll());
    mockTime.sleep(1);
    assertEquals(5, messageIds(t.poll()).size());
  }

  /**
   * A migration that timed out on a lock is tried again after a delay, not on every poll: each
   * attempt queues the application's inserts behind its wait. Nothing is claimed before it applied.
   */
  @Test
  void aMigrationThatTimedOutOnALockBacksOffInsteadOfRetryingEveryPoll() {
    add("eu", "m1", "a", "{}".getBytes());
    MockTime mockTime = new MockTime();
    time = mockTime;
    OutboxSourceTask t = startTask(Map.of("schema.migrate.on.start", "true"));
    provider.migrationFailure = transientMigrationFailure("DB_LOCK_NOT_AVAILABLE", "55P03");

    assertPollFailed(t, "the database failed the poll");
    assertNull(t.poll());
    mockTime.sleep(7_999); // the first delay: 10 s less up to a fifth of jitter
    assertNull(t.poll());
    assertEquals(1, provider.migrations.get(), "tried again before its delay");
    assertEquals(MessageStatus.PENDING, status("m1"));

    provider.migrationFailure = null;
    mockTime.sleep(2_001);
    assertEquals(List.of("m1"), messageIds(t.poll()));
    assertEquals(2, provider.migrations.get());
  }

  /** A wall clock stepped back (an NTP correction) does not hold the migration's retry back. */
  @Test
  void aWallClockSteppedBackDoesNotHoldTheMigrationsRetryBack() {
    add("eu", "m1", "a", "{}".getBytes());
    SteppableTime steppable = new SteppableTime();
    time = steppable;
    OutboxSourceTask t = startTask(Map.of("schema.migrate.on.start", "true"));
    provider.migrationFailure = transientMigrationFailure("DB_LOCK_NOT_AVAILABLE", "55P03");
    assertPollFailed(t, "the database failed the poll");
    provider.migrationFailure = null;

    steppable.stepWallClock(Duration.ofHours(-1));
    steppable.sleep(10_000); // the first delay: 10 s less up to a fifth of jitter
    assertEquals(List.of("m1"), messageIds(t.poll()));
    assertEquals(2, provider.migrations.get());
  }

  /**
   * Another session migrating the table (another task, or the CLI) is waited for, not reported as a
   * failure: poll returns nothing, without an exception, and checks again after a short growing
   * delay. Nothing is claimed before the migration has been found applied.
   */
  @Test
  void aMigrationRunningInAnotherSessionIsWaitedForWithoutAFailure() {
    add("eu", "m1", "a", "{}".getBytes());
    MockTime mockTime = new MockTime();
    time = mockTime;
    OutboxSourceTask t = startTask(Map.of("schema.migrate.on.start", "true"));
    provider.migrationFailure =
        transientMigrationFailure(StoreProvider.MIGRATION_IN_PROGRESS, null);

    assertNull(t.poll());
    mockTime.sleep(799); // the first delay: 1 s less up to a fifth of jitter
    assertNull(t.poll());
    assertEquals(1, provider.migrations.get(), "checked again before its delay");
    mockTime.sleep(201);
    assertNull(t.poll());
    assertEquals(2, provider.migrations.get());
    mockTime.sleep(1_599); // then 2 s
    assertNull(t.poll());
    assertEquals(2, provider.migrations.get());
    assertEquals(MessageStatus.PENDING, status("m1"));

    provider.migrationFailure = null;
    mockTime.sleep(401);
    assertEquals(List.of("m1"), messageIds(t.poll()));
    assertEquals(3, provider.migrations.get());
    assertEquals(0, t.metrics().databaseErrors.get(), "not a database error");
  }

  /**
   * A task checks the table's schema before its first claim, whether or not it migrates: on a table
   * left at an older version (a worker restarted with a new plugin; Connect validates only a new or
   * changed configuration) it claims nothing, instead of failing its first publish after the
   * records went out, says so (at once, then every five minutes), checks again at most 30 s apart,
   * and goes on by itself once the table is migrated.
   */
  @Test
  void aSchemaTooOldIsWaitedForClaimingNothing() {
    MockTime mockTime = new MockTime();
    time = mockTime;
    store.enqueue("eu", message("m1"));
    OutboxSourceTask t = startTask(Map.of());
    provider.schemaFailure =
        new OutboxStoreException(
            OutboxStoreException.Kind.SCHEMA,
            StoreProvider.SCHEMA_TOO_OLD,
            null,
            StoreProvider.CHECK_SCHEMA,
            "schema version 8, this build's 15");
    long mark = LogCapture.get().mark();

    for (int i = 0; i < 12; i++) { // 6 min
      assertNull(t.poll());
      mockTime.sleep(30_000);
    }

    assertEquals(MessageStatus.PENDING, store.find("m1").orElseThrow().status(), "not claimed");
    assertEquals(0, provider.migrations.get(), "schema.migrate.on.start is off");
    assertTrue(provider.schemaChecks.get() >= 12, "checked at most 30 s apart");
    List<LogCapture.Event> said =
        LogCapture.get().matching(mark, e -> e.message().contains("reason=SCHEMA_TOO_OLD"));
    assertEquals(2, said.size(), "at once and after five minutes: " + said);
    assertTrue(said.get(0).message().contains("outbox-relay-cli migrate"), said.get(0)::message);

    provider.schemaFailure = null; // migrated meanwhile
    int checks = provider.schemaChecks.get();
    List<SourceRecord> records = new ArrayList<>();
    await()
        .until(
            () -> {
              mockTime.sleep(1_000);
              List<SourceRecord> polled = t.poll();
              if (polled != null) {
                records.addAll(polled);
              }
              return !records.isEmpty();
            });
    assertEquals("m1", SourceOffsets.messageId(records.get(0)));
    assertNull(t.poll());
    assertEquals(checks + 1, provider.schemaChecks.get(), "then not checked again");
  }

  /**
   * With {@code schema.migrate.on.start}, only the connector's first task migrates: a later task
   * waits for the schema (said at INFO, at WARN only if it lasts five minutes), as it would for the
   * CLI's migration. When every task migrated in its turn, behind a long transaction their lock
   * waits followed one another, and the application's inserts queued behind them most of the time.
   */
  @Test
  void onlyTheFirstTaskMigratesTheOthersWaitForItsSchema() {
    MockTime mockTime = new MockTime();
    time = mockTime;
    store.enqueue("eu", message("m1"));
    OutboxSourceTask t =
        startTask(Map.of("schema.migrate.on.start", "true", "task.id", "1", "task.count", "2"));
    provider.schemaFailure =
        new OutboxStoreException(
            OutboxStoreException.Kind.SCHEMA,
            StoreProvider.SCHEMA_TOO_OLD,
            null,
            StoreProvider.CHECK_SCHEMA,
            "schema version 8, this build's 15");
    long mark = LogCapture.get().mark();

    for (int i = 0; i < 14; i++) { // 7 min
      if (i == 2) { // the first task applies a migration: the version read changes
        provider.schemaFailure =
            new OutboxStoreException(
                OutboxStoreException.Kind.SCHEMA,
                StoreProvider.SCHEMA_TOO_OLD,
                null,
                StoreProvider.CHECK_SCHEMA,
                "schema version 10, this build's 15");
      }
      assertNull(t.poll());
      mockTime.sleep(30_000);
    }

    assertEquals(0, provider.migrations.get(), "the first task migrates, not this one");
    assertEquals(MessageStatus.PENDING, store.find("m1").orElseThrow().status(), "not claimed");
    List<LogCapture.Event> said =
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.message().contains("reason=SCHEMA_MIGRATION_IN_PROGRESS")
                        || e.message().contains("reason=SCHEMA_TOO_OLD"));
    assertEquals(3, said.size(), "at once, at the change, five minutes on: " + said);
    assertEquals("INFO", said.get(0).level(), said.get(0)::message);
    assertTrue(said.get(0).message().contains("first task migrates"), said.get(0)::message);
    assertEquals("INFO", said.get(1).level(), "a version applied meanwhile: " + said.get(1));
    assertEquals("WARN", said.get(2).level(), said.get(2)::message);

    provider.schemaFailure = null; // the first task migrated meanwhile
    List<SourceRecord> records = new ArrayList<>();
    await()
        .until(
            () -> {
              mockTime.sleep(1_000);
              List<SourceRecord> polled = t.poll();
              if (polled != null) {
                records.addAll(polled);
              }
              return !records.isEmpty();
            });
    assertEquals("m1", SourceOffsets.messageId(records.get(0)));
    assertEquals(0, provider.migrations.get());
  }

  /**
   * A table without a schema history that lacks what the relay reads is waited for too, said with
   * its own reason and the statements that fix it, not the migration's advice (a migration is
   * refused on such a table).
   */
  @Test
  void anIncompleteTableOfTheUsersOwnToolIsWaitedForClaimingNothing() {
    MockTime mockTime = new MockTime();
    time = mockTime;
    store.enqueue("eu", message("m1"));
    OutboxSourceTask t = startTask(Map.of());
    provider.schemaFailure =
        new OutboxStoreException(
            OutboxStoreException.Kind.SCHEMA,
            StoreProvider.SCHEMA_INCOMPLETE,
            null,
            StoreProvider.CHECK_SCHEMA,
            "lacks indexes the relay reads: outbox_due_key_seq_idx (every claim)");
    long mark = LogCapture.get().mark();

    assertNull(t.poll());
    mockTime.sleep(30_000);
    assertNull(t.poll());

    assertEquals(MessageStatus.PENDING, store.find("m1").orElseThrow().status(), "not claimed");
    List<LogCapture.Event> said =
        LogCapture.get().matching(mark, e -> e.message().contains("reason=SCHEMA_INCOMPLETE"));
    assertEquals(1, said.size(), said::toString);
    assertTrue(said.get(0).message().contains("outbox_due_key_seq_idx"), said.get(0)::message);
    assertFalse(said.get(0).message().contains("outbox-relay-cli migrate"), said.get(0)::message);
    assertTrue(provider.schemaChecks.get() >= 2, "checked again");

    // One gap fixed, the next found: said at once, not five minutes later.
    provider.schemaFailure =
        new OutboxStoreException(
            OutboxStoreException.Kind.SCHEMA,
            StoreProvider.SCHEMA_INCOMPLETE,
            null,
            StoreProvider.CHECK_SCHEMA,
            "lacks indexes the relay reads: outbox_published_at_idx");
    mockTime.sleep(30_000);
    assertNull(t.poll());
    said = LogCapture.get().matching(mark, e -> e.message().contains("reason=SCHEMA_INCOMPLETE"));
    assertEquals(2, said.size(), said::toString);
    assertTrue(said.get(1).message().contains("outbox_published_at_idx"), said.get(1)::message);
  }

  /**
   * A wait for another session's migration is logged at INFO, and at WARN once it has lasted
   * {@value SchemaReadiness#LONG_WAIT_MINUTES} minutes (a migrator that died while its session
   * lingers holds the lock until the server notices); the checks stay at most 30 s apart.
   */
  @Test
  void aLongWaitForAnotherSessionsMigrationIsAWarning() {
    MockTime mockTime = new MockTime();
    time = mockTime;
    OutboxSourceTask t = startTask(Map.of("schema.migrate.on.start", "true"));
    provider.migrationFailure =
        transientMigrationFailure(StoreProvider.MIGRATION_IN_PROGRESS, null);
    LogCapture logs = LogCapture.get();
    long mark = logs.mark();

    assertNull(t.poll());
    for (int i = 0; i < 9; i++) { // 4.5 min
      mockTime.sleep(30_000);
      assertNull(t.poll());
    }
    assertEquals(10, provider.migrations.get(), "checked at most 30 s apart");
    assertEquals(List.of("INFO"), levelsOfWaits(logs, mark));

    mockTime.sleep(30_000);
    assertNull(t.poll());
    mockTime.sleep(30_000);
    assertNull(t.poll());
    List<LogCapture.Event> warnings =
        logs.matching(
            mark,
            e ->
                e.level().equals("WARN")
                    && e.message().startsWith("Schema migration of table outbox has been running"));
    assertEquals(2, warnings.size(), warnings::toString);
    assertTrue(warnings.get(0).message().contains("for 5 min"), warnings.get(0)::message);
  }

  private static List<String> levelsOfWaits(LogCapture logs, long mark) {
    return logs
        .matching(mark, e -> e.message().startsWith("Schema migration of table outbox"))
        .stream()
        .map(LogCapture.Event::level)
        .distinct()
        .toList();
  }

  private static OutboxStoreException transientMigrationFailure(String reason, String sqlState) {
    return new OutboxStoreException(
        OutboxStoreException.Kind.TRANSIENT, reason, sqlState, StoreProvider.MIGRATE);
  }

  /** The database being down is no reason to wait longer than a poll: retried on the next one. */
  @Test
  void aMigrationThatFoundTheDatabaseDownIsTriedAgainOnTheNextPoll() {
    add("eu", "m1", "a", "{}".getBytes());
    OutboxSourceTask t = startTask(Map.of("schema.migrate.on.start", "true"));
    provider.migrationFailure = transientMigrationFailure("DB_UNAVAILABLE", "08006");
    assertPollFailed(t, "the database failed the poll");
    provider.migrationFailure = null;
    assertEquals(List.of("m1"), messageIds(t.poll()));
    assertEquals(2, provider.migrations.get());
  }

  @Test
  void claimsEmitsAndRecordsPublishedWithCoordinates() {
    add("eu", "m1", "a", "{}".getBytes());
    add("eu", "m2", "a", "{}".getBytes());
    add("us", "foreign", "a", "{}".getBytes());
    store.insertLegacy(message("legacy"));
    startTask(Map.of());

    List<SourceRecord> records = task.poll();
    assertEquals(List.of("m1", "m2"), records.stream().map(SourceOffsets::messageId).toList());
    assertEquals("outbox.order", records.get(0).topic());
    assertEquals("a", records.get(0).key());
    for (int i = 0; i < records.size(); i++) {
      task.commitRecord(records.get(i), metadata(records.get(i), 100 + i));
    }
    await().until(() -> status("m2") == MessageStatus.PUBLISHED);
    assertEquals(MessageStatus.PUBLISHED, status("m1"));
    assertEquals(100, store.find("m1").orElseThrow().kafka().offset());
    assertEquals(MessageStatus.PENDING, status("foreign"));
    assertEquals(MessageStatus.PENDING, status("legacy"));
    assertEquals(2, task.metrics().published.get());
  }

  private static OutboxMessage message(String id) {
    return OutboxMessage.builder()
        .messageId(id)
        .aggregateType("order")
        .aggregateId("a")
        .eventType("E")
        .build();
  }

  /** A row of aggregate {@code aggregate} that an earlier task tried twice, in vain. */
  private void addWithTwoAttemptsSpent(String messageId, String aggregate) {
    add("eu", messageId, aggregate, "{}".getBytes());
    ClaimRequest earlier = new ClaimRequest("earlier", Set.of("eu"), 1, LEASE, 10, true);
    for (int i = 0; i < 2; i++) {
      var m = store.claim(earlier).claimed().get(0);
      store.retryLater(messageId, m.lease(), "DELIVERY_UNCONFIRMED", Duration.ZERO, 10);
    }
  }

  @Test
  void rowsOverALoweredBudgetAreParkedCountedAndTheirAggregateFlows() {
    addWithTwoAttemptsSpent("a1", "a");
    add("eu", "a2", "a", "{}".getBytes());
    startTask(Map.of("max.attempts", "2"));

    assertEquals(List.of("a2"), messageIds(task.poll()));
    assertEquals(MessageStatus.EXHAUSTED, status("a1"));
    assertEquals("ATTEMPTS_BUDGET_LOWERED", store.find("a1").orElseThrow().lastFailureCode());
    assertEquals(1, task.metrics().exhausted.get());
  }

  /**
   * A claim that only parked rows over their budget made progress: the next claim runs at once.
   * Taken for an empty claim, it was followed by the idle wait (here the whole poll interval),
   * doubling after each such claim, while due rows waited.
   */
  @Test
  void aClaimThatOnlyParkedRowsIsFollowedByTheNextClaimAtOnce() {
    addWithTwoAttemptsSpent("a1", "a");
    add("eu", "b1", "b", "{}".getBytes());
    startTask(Map.of("max.attempts", "2", "claim.batch.size", "1", "poll.interval.ms", "600000"));

    assertEquals(List.of(), messageIds(task.poll()), "a1 parked, nothing claimed");
    assertEquals(MessageStatus.EXHAUSTED, status("a1"));
    assertEquals(List.of("b1"), messageIds(task.poll()));
  }

  /** A row due before {@code deadline}, claimed by a task whose host clock reads {@code worker}. */
  private List<SourceRecord> pollWithDeadlineAndWorkerClock(Instant deadline, Instant worker) {
    store.enqueue(
        "eu",
        OutboxMessage.builder()
            .messageId("m1")
            .aggregateType("order")
            .aggregateId("a")
            .eventType("OrderPlaced")
            .payload("{}".getBytes())
            .deliverBefore(deadline)
            .build());
    taskClock = RelayClock.database(); // production: the store judges time, the host has its own
    time = new MockTime(0, worker.toEpochMilli(), 0);
    startTask(Map.of());
    return task.poll();
  }

  @Test
  void aDeadlineThatTheStoreClockHasPassedFailsTheRowWhateverTheWorkerClockSays() {
    Instant deadline = clock.now().minusSeconds(1);
    List<SourceRecord> records =
        pollWithDeadlineAndWorkerClock(deadline, deadline.minusSeconds(60));
    assertEquals(List.of(), messageIds(records));
    await().until(() -> status("m1") == MessageStatus.FAILED);
    assertEquals("DEADLINE_EXPIRED", store.find("m1").orElseThrow().lastFailureCode());
  }

  @Test
  void aDeadlineThatTheStoreClockHasNotReachedIsPublishedWhateverTheWorkerClockSays() {
    Instant deadline = clock.now().plusSeconds(1);
    List<SourceRecord> records = pollWithDeadlineAndWorkerClock(deadline, deadline.plusSeconds(60));
    assertEquals(List.of("m1"), messageIds(records));
    assertEquals(MessageStatus.IN_FLIGHT, status("m1"));
  }

  @Test
  void nullMetadataIsNeverPublishedAndBecomesARetry() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(Map.of());
    SourceRecord r = task.poll().get(0);
    task.commitRecord(r, null);
    // The row is written first, the count after it, on the outcome thread.
    await()
        .until(() -> status("m1") == MessageStatus.AMBIGUOUS && task.metrics().retried.get() >= 1);
    assertEquals(1, store.find("m1").orElseThrow().attempts());
    assertEquals("DELIVERY_UNCONFIRMED", store.find("m1").orElseThrow().lastFailureCode());
    assertEquals(1, task.metrics().retried.get());
  }

  /**
   * A worker without exactly-once support calls commit() on the task thread too, once, as it stops,
   * while acknowledgements may still come: records not acknowledged by then are in Kafka or on
   * their way, and none is taken for dropped (only Connect's exactly-once task's commit() says a
   * transaction ended, ConnectTaskKind). Taken for one, its row would be settled while Kafka has
   * it, and sent again.
   */
  @Test
  void aCommitOutsideConnectsExactlyOnceTaskTakesNoRecordForDropped() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(Map.of("null.metadata.policy", "fail"));
    SourceRecord r = task.poll().get(0);
    task.commit();
    assertNull(task.poll());
    task.commit();
    assertNull(task.poll());

    assertEquals(MessageStatus.IN_FLIGHT, status("m1"));
    assertEquals(0, task.metrics().failed.get() + task.metrics().retried.get());
    task.commitRecord(r, metadata(r, 7));
    await().until(() -> status("m1") == MessageStatus.PUBLISHED);
  }

  @Test
  void nullMetadataWithPolicyFailIsRecordedFailed() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(Map.of("null.metadata.policy", "fail"));
    long mark = LogCapture.get().mark();
    task.commitRecord(task.poll().get(0), null);
    await().until(() -> status("m1") == MessageStatus.FAILED);
    assertEquals("DROPPED_OR_UNDELIVERED", store.find("m1").orElseThrow().lastFailureCode());
    // Said as it is: parked, not "retry scheduled"
    // This task's lines only: a task of an earlier test may still log its own rows (m1 among
    // them) in its grace.
    Predicate<LogCapture.Event> aboutM1 =
        e ->
            e.message().contains("message_id=m1 ")
                && e.thread().contains("task-test-" + testName + "-");
    await().until(() -> !LogCapture.get().matching(mark, aboutM1).isEmpty());
    List<LogCapture.Event> said = LogCapture.get().matching(mark, aboutM1);
    assertEquals(1, said.size(), said::toString);
    assertTrue(said.get(0).message().contains("parked FAILED"), said.get(0).message());
    assertTrue(said.get(0).message().contains("reason=DROPPED_OR_UNDELIVERED"));
    assertEquals(1, task.metrics().failed.get());
  }

  @Test
  void aStaleAcknowledgementIsRejectedCountedAndLeavesTheNewOwnersRow() {
    add("eu", "m1", "a", "{}".getBytes());
    time = new MockTime(); // no renewal comes due: the acknowledgement's write finds the loss
    startTask(Map.of("lease.duration.ms", "1000", "lease.renewal.interval.ms", "900"));
    SourceRecord r = task.poll().get(0);
    clock.advance(Duration.ofSeconds(2));
    var takeover =
        store.claimAbandoned(
            new ClaimRequest("other-owner", Set.of("eu"), 1, Duration.ofMinutes(1), 10, true));
    assertEquals(1, takeover.claimed().size());
    var before = store.find("m1").orElseThrow();

    task.commitRecord(r, metadata(r, 5));
    // The ledger is settled before the count goes up, on the outcome thread: wait for both.
    await()
        .until(
            () ->
                failing.publishCalls.get() == 1
                    && task.metrics().inFlight() == 0
                    && task.metrics().claimLost.get() >= 1);
    assertEquals(1, task.metrics().claimLost.get());
    assertEquals(0, task.metrics().leaseRenewalsLost.get(), "found by the write, not a renewal");
    assertEquals(before, store.find("m1").orElseThrow());
    assertEquals(0, task.metrics().published.get());
  }

  /** topic.allowed.regex: a row naming a topic outside it is parked, its neighbours flow. */
  @Test
  void aRowNamingATopicOutsideTheAllowedOnesIsParkedNotPublished() {
    add("eu", "good", "a", "{}".getBytes());
    store.enqueue(
        "eu",
        OutboxMessage.builder()
            .messageId("forged")
            .aggregateType("order")
            .aggregateId("b")
            .eventType("OrderPlaced")
            .topic("connect-configs")
            .payload("{}".getBytes())
            .build());
    startTask(Map.of("topic.allowed.regex", "outbox\\..+"));

    List<SourceRecord> records = task.poll();

    assertEquals(List.of("good"), records.stream().map(SourceOffsets::messageId).toList());
    assertEquals("outbox.order", records.get(0).topic());
    await().until(() -> status("forged") == MessageStatus.FAILED);
    assertEquals("TOPIC_NOT_ALLOWED", store.find("forged").orElseThrow().lastFailureCode());
  }

  @Test
  void poisonRowsAreFailedWithAReasonWhileNeighboursFlow() {
    add("eu", "good1", "a", "{}".getBytes());
    add("eu", "bad", "b", "not json".getBytes());
    add("eu", "good2", "c", "{}".getBytes());
    startTask(Map.of("payload.format", "json"));
    List<SourceRecord> records = task.poll();
    assertEquals(
        List.of("good1", "good2"), records.stream().map(SourceOffsets::messageId).toList());
    await().until(() -> status("bad") == MessageStatus.FAILED);
    assertEquals("PAYLOAD_INVALID_JSON", store.find("bad").orElseThrow().lastFailureCode());
  }

  @Test
  void poisonRowsGoToTheDeadLetterTopicWhenConfigured() {
    add("eu", "bad", "b", "not json".getBytes());
    startTask(Map.of("payload.format", "json", "dead.letter.topic", "outbox.dlq"));
    SourceRecord dlq = task.poll().get(0);
    assertEquals("outbox.dlq", dlq.topic());
    assertEquals(MessageStatus.IN_FLIGHT, status("bad"), "FAILED only once the DLQ has it");
    task.commitRecord(dlq, metadata(dlq, 1));
    await() // the row written first, the count after it, on the outcome thread
        .until(
            () -> status("bad") == MessageStatus.FAILED && task.metrics().deadLettered.get() >= 1);
    assertEquals(1, task.metrics().deadLettered.get());
  }

  @Test
  void databaseOutageIsRetriableAndTheTaskRecovers() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(Map.of());
    failing.failing = true;
    assertPollFailed(task, "the database failed the poll");
    failing.failing = false;
    assertEquals(1, task.poll().size());
  }

  /**
   * An outage is said at WARN once, its repeats at DEBUG (at WARN again every five minutes while it
   * lasts), and its end once at INFO: a WARN at every poll, hundreds per task in a 10-minute
   * outage, and nothing at its end, buried what an operator needed.
   */
  @Test
  void aDatabaseOutageIsSaidOnceAgainEveryFiveMinutesAndItsEndAtInfo() {
    MockTime mockTime = new MockTime();
    time = mockTime;
    add("eu", "m1", "a", "{}".getBytes());
    startTask(Map.of());
    long mark = LogCapture.get().mark();
    failing.failing = true;
    for (int i = 0; i < 3; i++) {
      assertPollFailed(task, "poll " + i);
    }
    mockTime.sleep(FailureRun.REMINDER.toMillis());
    assertPollFailed(task, "poll 3, five minutes on");
    assertPollFailed(task, "poll 4");
    failing.failing = false;
    assertEquals(1, task.poll().size());

    List<String> said =
        LogCapture.get()
            .matching(mark, e -> e.message().startsWith("Database unavailable while claiming"))
            .stream()
            .map(LogCapture.Event::level)
            .toList();
    assertEquals(List.of("WARN", "DEBUG", "DEBUG", "WARN", "DEBUG"), said);
    assertEquals(
        List.of("Claims succeed again after 5 polls that the database failed"),
        LogCapture.get()
            .matching(mark, e -> e.message().startsWith("Claims succeed again"))
            .stream()
            .map(LogCapture.Event::message)
            .toList());
  }

  /**
   * A claim the database cancelled after the statement timeout is said as such, not as the database
   * being unavailable: it answered, and a claim that slow at every poll wants looking into (a
   * bloated table, an index left invalid).
   */
  @Test
  void aClaimCancelledByTheStatementTimeoutIsNotSaidAsAnOutage() {
    startTask(Map.of());
    failing.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_QUERY_CANCELED", "57014", "claim");
    long mark = LogCapture.get().mark();
    failing.failing = true;
    assertPollFailed(task, "cancelled");

    List<String> said =
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.logger().equals(OutboxSourceTask.class.getName())
                        && e.message().contains("sqlState=57014"))
            .stream()
            .map(LogCapture.Event::message)
            .toList();
    assertEquals(1, said.size(), said::toString);
    assertTrue(said.get(0).startsWith("Claim cancelled by the database"), said::toString);
    assertTrue(said.get(0).contains("statement.timeout.ms"), said::toString);
    assertFalse(said.get(0).contains("unavailable"), said::toString);
  }

  /**
   * A publish that keeps failing while the rest of the database works (a write stuck behind a lock,
   * cancelled by the statement timeout each time) does not stop lease renewal: the rows waiting for
   * their outcome keep their leases, and are published once the write goes through.
   */
  @Test
  void aPublishThatKeepsFailingDoesNotStopLeaseRenewal() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(SHORT_LEASES);
    List<SourceRecord> records = task.poll();
    failing.publishesFail = true;
    task.commitRecord(records.get(0), metadata(records.get(0), 1));
    await().until(() -> failing.publishCalls.get() >= 1);
    int renewals = failing.renewCalls.get();

    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () -> {
              assertNull(task.poll()); // Connect keeps polling: the task thread is alive
              return failing.publishCalls.get() >= 4 && failing.renewCalls.get() >= renewals + 2;
            });
    assertEquals(MessageStatus.IN_FLIGHT, status("m1"));

    failing.publishesFail = false;
    await().until(() -> status("m1") == MessageStatus.PUBLISHED);
  }

  /**
   * Outcomes other than publishes are written one statement each: a batch of hundreds (records a
   * transform dropped, on a slow database) renews the leases of the rows still waiting for Kafka
   * between its writes, not only after the whole batch, when they may have expired.
   */
  @Test
  void aLongBatchOfSingleRowWritesRenewsTheOtherLeasesBetweenItsWrites() throws Exception {
    MockTime mockTime = new MockTime();
    time = mockTime;
    for (int i = 0; i < 10; i++) {
      add("eu", "m" + i, "a" + i, "{}".getBytes());
    }
    startTask(
        Map.of(
            "lease.duration.ms", "20000",
            "lease.renewal.interval.ms", "200",
            "ordering.enabled", "false"));
    List<SourceRecord> records = task.poll();
    assertEquals(10, records.size());
    CountDownLatch allAcknowledged = new CountDownLatch(1);
    List<Integer> renewalsAtEachWrite = new java.util.concurrent.CopyOnWriteArrayList<>();
    failing.beforeRetryLater =
        () -> {
          try {
            allAcknowledged.await(); // the acknowledgements wait in the queue for the batch
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          renewalsAtEachWrite.add(failing.renewCalls.get());
          mockTime.sleep(300); // each write outlasts the renewal interval
        };
    for (SourceRecord r : records.subList(1, 10)) {
      task.commitRecord(r, null); // dropped by a transform: a retry, written on its own
    }
    allAcknowledged.countDown();

    await().until(() -> renewalsAtEachWrite.size() == 9 && task.metrics().inFlight() == 1);
    // At most two batches (the first write may have taken only the first acknowledgement): one
    // renewal between them; the writes of a batch renew between each other.
    assertTrue(
        renewalsAtEachWrite.get(8) - renewalsAtEachWrite.get(1) >= 6,
        "renewals between the writes: " + renewalsAtEachWrite);
    assertEquals(MessageStatus.IN_FLIGHT, status("m0"));
    assertEquals(MessageStatus.AMBIGUOUS, status("m9"));
  }

  /**
   * A slow batch publish followed by the retry of an outcome set aside for its row's lock is two
   * statements: the leases due for renewal meanwhile are renewed between them. Renewed only after
   * both, a lease could run out behind two writes each near the statement timeout.
   */
  @Test
  void theLeasesAreRenewedBetweenABatchPublishAndTheSetAsideRetryAfterIt() throws Exception {
    MockTime mockTime = new MockTime();
    time = mockTime;
    add("eu", "m1", "a", "{}".getBytes());
    add("eu", "m2", "b", "{}".getBytes());
    startTask(
        Map.of(
            "lease.duration.ms", "20000",
            "lease.renewal.interval.ms", "200",
            "ordering.enabled", "false"));
    List<SourceRecord> records = task.poll();
    assertEquals(2, records.size());
    failing.lockedRows = Set.of("m2");
    task.commitRecord(records.get(1), metadata(records.get(1), 2));
    await().until(() -> failing.skippingLockedCalls.get() >= 1); // m2 set aside for its lock

    List<Integer> renewalsAtSetAsideRetries = new java.util.concurrent.CopyOnWriteArrayList<>();
    AtomicInteger renewalsAfterThePublish = new AtomicInteger(-1);
    failing.beforePublish =
        () -> {
          mockTime.sleep(600); // past the renewal interval and the set-aside retry's wait
          renewalsAfterThePublish.set(failing.renewCalls.get());
        };
    failing.beforeSkippingLocked =
        () -> {
          if (renewalsAfterThePublish.get() >= 0) {
            renewalsAtSetAsideRetries.add(failing.renewCalls.get());
          }
        };
    task.commitRecord(records.get(0), metadata(records.get(0), 1));

    await().until(() -> !renewalsAtSetAsideRetries.isEmpty());
    assertEquals(MessageStatus.PUBLISHED, status("m1"));
    assertTrue(
        renewalsAtSetAsideRetries.get(0) > renewalsAfterThePublish.get(),
        "renewed between the two writes: "
            + renewalsAfterThePublish.get()
            + " then "
            + renewalsAtSetAsideRetries);
  }

  @Test
  void authenticationFailureFailsTheTaskWithASanitizedMessage() {
    startTask(Map.of());
    failing.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.AUTHENTICATION, "DB_AUTHENTICATION_FAILED", "28P01", "claim");
    failing.failing = true;
    ConnectException e = assertThrows(ConnectException.class, task::poll);
    assertTrue(e.getMessage().contains("DB_AUTHENTICATION_FAILED"), e.getMessage());
    assertNull(e.getCause());
  }

  /**
   * A publish that committed though its reply was lost (the connection dropped at COMMIT, as in a
   * database failover) is retried, finds its rows gone, and records them as published, not as lost
   * claims: each would otherwise count a false duplicate on the zombie signal.
   */
  @Test
  void aPublishWhoseReplyWasLostIsNotALostClaimWhenRetried() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(Map.of());
    List<SourceRecord> records = task.poll();
    failing.nextPublishLosesItsReply = true;

    task.commitRecord(records.get(0), metadata(records.get(0), 1));

    await()
        .until(
            () ->
                failing.publishCalls.get() >= 2
                    && task.metrics().inFlight() == 0
                    && task.metrics().published.get() >= 1);
    assertEquals(MessageStatus.PUBLISHED, status("m1"));
    assertEquals(1, task.metrics().published.get());
    assertEquals(0, task.metrics().claimLost.get());
  }

  /**
   * A lease renewal due between a publish whose reply was lost and its retry finds the row gone
   * (published by that very write). It must leave the row to the retried write, which finds it in
   * the published log, rather than report a lost claim: in a failover that would count a false
   * duplicate for every acknowledgement in hand.
   */
  @Test
  void aRenewalBetweenALostReplyAndItsRetryReportsNoLostClaim() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(SHORT_LEASES);
    List<SourceRecord> records = task.poll();
    failing.publishesFailAfterTheLostReply = true;
    failing.nextPublishLosesItsReply = true;

    task.commitRecord(records.get(0), metadata(records.get(0), 1));
    await().until(() -> failing.publishCalls.get() >= 2);
    assertEquals(MessageStatus.PUBLISHED, status("m1"), "the lost reply's write committed");
    int renewals = failing.renewCalls.get();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () -> {
              assertNull(task.poll()); // keeps the task responsive, so renewals go on
              // a renewal since, ended (the store counts one as it starts, and renewals run one
              // at a time), or (the defect) an earlier one that reported the row lost
              return failing.renewCalls.get() >= renewals + 2 || task.metrics().claimLost.get() > 0;
            });
    assertEquals(0, task.metrics().claimLost.get(), "the renewal left the row to the write");

    failing.publishesFail = false;
    await().until(() -> task.metrics().inFlight() == 0 && task.metrics().published.get() >= 1);
    assertEquals(1, task.metrics().published.get());
    assertEquals(0, task.metrics().claimLost.get());
    assertEquals(0, task.metrics().leaseRenewalsLost.get());
  }

  /**
   * ... while a claim really taken over during those retries is still reported, once, by the
   * retried write.
   */
  @Test
  void aClaimTakenOverWhileItsPublishIsRetriedIsReportedLostOnce() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(SHORT_LEASES);
    List<SourceRecord> records = task.poll();
    failing.publishesFail = true;
    task.commitRecord(records.get(0), metadata(records.get(0), 1));
    await().until(() -> failing.publishCalls.get() >= 1);

    takenOverByAnotherOwner();
    int renewals = failing.renewCalls.get();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () -> {
              assertNull(task.poll());
              return failing.renewCalls.get() >= renewals + 2; // one since, ended (as above)
            });
    assertEquals(0, task.metrics().claimLost.get(), "left to the write in hand");

    failing.publishesFail = false;
    await().until(() -> task.metrics().inFlight() == 0 && task.metrics().claimLost.get() >= 1);
    assertEquals(1, task.metrics().claimLost.get());
    assertEquals(0, task.metrics().published.get());
    assertEquals(MessageStatus.IN_FLIGHT, status("m1"), "still the other owner's");
  }

  /**
   * ... and one whose write is still failing when the stop's grace ends, never to be retried, is
   * reported as a lost claim then: the renewal left it to a write that never came.
   */
  @Test
  void aClaimTakenOverWhileItsPublishIsRetriedIsReportedLostWhenTheWriteIsAbandoned() {
    add("eu", "m1", "a", "{}".getBytes());
    MockTime mockTime = new MockTime();
    time = mockTime;
    startTask(SHORT_LEASES);
    List<SourceRecord> records = task.poll();
    failing.publishesFail = true;
    task.commitRecord(records.get(0), metadata(records.get(0), 1));
    await().until(() -> failing.publishCalls.get() >= 1);
    takenOverByAnotherOwner();
    renewalBetweenRetries(mockTime);
    assertEquals(0, task.metrics().claimLost.get(), "left to the write in hand");

    stopPastTheGrace(mockTime); // the write still failing

    assertEquals(1, task.metrics().claimLost.get());
    assertEquals(0, task.metrics().leaseRenewalsLost.get(), "by the abandon, not a renewal");
    assertEquals(0, task.metrics().published.get());
    assertEquals(0, task.metrics().leasesNotHeldAtStop.get(), "reported once, as the lost claim");
  }

  /**
   * ... but a publish abandoned so whose earlier attempt did apply (its reply lost) is found in the
   * published log, and is no lost claim.
   */
  @Test
  void anAbandonedPublishThatItsLostReplyAppliedIsNoLostClaim() {
    add("eu", "m1", "a", "{}".getBytes());
    MockTime mockTime = new MockTime();
    time = mockTime;
    startTask(SHORT_LEASES);
    List<SourceRecord> records = task.poll();
    failing.publishesFailAfterTheLostReply = true;
    failing.nextPublishLosesItsReply = true;
    task.commitRecord(records.get(0), metadata(records.get(0), 1));
    await().until(() -> failing.publishCalls.get() >= 2);
    assertEquals(MessageStatus.PUBLISHED, status("m1"), "the lost reply's write committed");
    renewalBetweenRetries(mockTime);

    stopPastTheGrace(mockTime); // the write still failing

    assertEquals(0, task.metrics().claimLost.get());
    assertEquals(1, task.metrics().published.get());
    assertEquals(0, task.metrics().lateAcks.get());
    assertEquals(0, task.metrics().leasesNotHeldAtStop.get(), "published: no lease to end");
  }

  @Test
  void stopIsIdempotentAndALateAcknowledgementWithinTheGraceIsWritten() {
    add("eu", "m1", "a", "{}".getBytes());
    add("eu", "m2", "b", "{}".getBytes());
    startTask(Map.of());
    List<SourceRecord> records = task.poll();
    task.commitRecord(records.get(0), metadata(records.get(0), 1));
    task.stop();
    task.stop();
    assertNull(task.poll());
    await().until(() -> status("m1") == MessageStatus.PUBLISHED);
    // m2 is still awaited for the grace period: a late ack within it is still recorded.
    task.commitRecord(records.get(1), metadata(records.get(1), 2));
    await().until(() -> status("m2") == MessageStatus.PUBLISHED);
    await().until(() -> failing.closes.get() > 0); // nothing left to await: the store closes
    assertEquals(1, failing.closes.get(), "closed once for two stops");
    assertEquals(2, task.metrics().published.get());
    assertEquals(0, task.metrics().lateAcks.get());
  }

  /**
   * A row whose record Kafka never acknowledged has its lease ended once the stop's late-ack grace
   * has passed, so that it is reclaimed at the next abandoned-row probe, not once the lease would
   * have run out: as an abandoned row, alone (the stop may have been a failure this very row
   * caused).
   */
  @Test
  void aRowStillUnacknowledgedWhenTheStopsGraceEndsIsAbandonedAtOnce() {
    add("eu", "m1", "a", "{}".getBytes());
    add("eu", "m2", "b", "{}".getBytes());
    MockTime mockTime = new MockTime();
    time = mockTime;
    startTask(Map.of());
    List<SourceRecord> records = task.poll();
    assertEquals(List.of("m1", "m2"), messageIds(records));

    task.stop();
    mockTime.sleep(30_000);
    await().until(() -> failing.closes.get() == 1);

    var row = store.find("m1").orElseThrow();
    assertEquals(MessageStatus.IN_FLIGHT, row.status());
    assertEquals(clock.now(), row.leaseExpiresAt(), "abandoned now, not in 30 s");
    assertEquals(0, row.attempts());
    var reclaimed =
        store.claimAbandoned(
            new ClaimRequest("next", Set.of("eu"), 10, Duration.ofSeconds(30), 10, true));
    assertEquals(List.of("m1"), reclaimed.claimed().stream().map(m -> m.messageId()).toList());
  }

  /**
   * A held row that another task reclaimed since the last renewal is not among the leases the stop
   * ends: it is named at the stop (its record, if sent, may reach Kafka twice), not left as the gap
   * between two counts.
   */
  @Test
  void aRowReclaimedByAnotherTaskBeforeTheStopIsNamedAtTheStop() {
    add("eu", "m1", "a", "{}".getBytes());
    MockTime mockTime = new MockTime();
    time = mockTime;
    startTask(Map.of("lease.duration.ms", "2000", "lease.renewal.interval.ms", "1000"));
    assertEquals(List.of("m1"), messageIds(task.poll()));
    takenOverByAnotherOwner();
    long mark = LogCapture.get().mark();

    task.stop();
    mockTime.sleep(30_000);
    await().until(() -> failing.closes.get() == 1);

    List<LogCapture.Event> named =
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.message().contains("message_id=m1")
                        && e.message().contains("reason=LEASE_NOT_HELD_AT_STOP"));
    assertEquals(1, named.size(), () -> LogCapture.get().matching(mark, e -> true).toString());
    assertEquals("other", store.find("m1").orElseThrow().leaseOwner(), "the other task holds it");
    assertEquals(1, task.metrics().leasesNotHeldAtStop.get(), "and counted in the stop summary");
  }

  /**
   * Connect stops a task only once its poll has returned: a poll waits at most a second, however
   * long the poll interval, and the next polls take the rest of the wait (an idle task still claims
   * once per interval).
   */
  @Test
  void aPollWaitsAtMostASecondAndTheNextPollsTakeTheRestOfTheWait() {
    startTask(Map.of("poll.interval.ms", "600000"));
    CompletableFuture<List<SourceRecord>> first = CompletableFuture.supplyAsync(task::poll);
    await().atMost(Duration.ofSeconds(30)).until(first::isDone);
    assertNull(first.join(), "an empty claim, then one slice of its wait");

    add("eu", "m1", "a", "{}".getBytes());
    CompletableFuture<List<SourceRecord>> second = CompletableFuture.supplyAsync(task::poll);
    await().atMost(Duration.ofSeconds(30)).until(second::isDone);
    assertNull(second.join(), "still the interval's wait: nothing claimed");
    assertEquals(MessageStatus.PENDING, status("m1"));
  }

  /**
   * A poll that takes the end of one wait and then begins another waits only once: the next poll
   * waits the new one's first slice. With an interval of 1.5 s the second poll waited 0.5 s,
   * claimed nothing, and waited a whole slice more, each poll of an idle task up to two seconds of
   * Connect's five for a stop.
   */
  @Test
  void aPollThatEndsOneWaitDoesNotWaitTheNextToo() {
    startTask(Map.of("poll.interval.ms", "1500"));
    List<Long> slicesAfterEachPoll =
        CompletableFuture.supplyAsync(
                () -> {
                  List<Long> slices = new ArrayList<>();
                  for (int i = 0; i < 3; i++) {
                    assertNull(task.poll());
                    slices.add(task.pollPause().slicesWaited());
                  }
                  return slices;
                })
            .orTimeout(60, java.util.concurrent.TimeUnit.SECONDS)
            .join();

    // 1: an empty claim, the first slice of 1.5 s; 2: the last 0.5 s, an empty claim, no wait;
    // 3: the first slice of the new wait.
    // (However slow the machine: a poll that found its wait over claims and waits one slice.)
    assertEquals(List.of(1L, 2L, 3L), slicesAfterEachPoll);
  }

  /**
   * Something interrupts the task thread (a transform that restored an interrupt it caught): the
   * poll clears it, says so once, and waits as before. Left set, every wait ended at once and each
   * poll claimed again, a core busy with claims that found nothing.
   */
  @Test
  void anInterruptOfTheTaskThreadIsClearedAndTheTaskStillWaits() {
    startTask(Map.of("poll.interval.ms", "600000"));
    long mark = LogCapture.get().mark();
    CompletableFuture<List<Boolean>> interruptedAfterPolls =
        CompletableFuture.supplyAsync(
            () -> {
              List<Boolean> flags = new ArrayList<>();
              for (int i = 0; i < 3; i++) {
                Thread.currentThread().interrupt();
                assertNull(task.poll());
                flags.add(Thread.interrupted());
              }
              return flags;
            },
            r -> new Thread(r, "task-thread").start()); // a thread of its own, not a pool's
    await().atMost(Duration.ofSeconds(30)).until(interruptedAfterPolls::isDone);

    assertEquals(List.of(false, false, false), interruptedAfterPolls.join());
    assertEquals(1, failing.claimCalls.get(), "one empty claim, then the interval's wait");
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=TASK_THREAD_INTERRUPTED"))
            .size(),
        "said once");
  }

  @Test
  void idleTaskWaitsAndReturnsNull() {
    startTask(Map.of());
    assertNull(task.poll());
  }

  @Test
  void anAbandonedRowIsReclaimedAloneAndNothingElseIsClaimedMeanwhile() {
    add("eu", "m1", "a", "{}".getBytes());
    store.claim(new ClaimRequest("crashed", Set.of("eu"), 1, Duration.ofSeconds(1), 10, true));
    add("eu", "m2", "b", "{}".getBytes());
    clock.advance(Duration.ofSeconds(5));
    startTask(Map.of());
    List<SourceRecord> first = task.poll();
    assertEquals(List.of("m1"), first.stream().map(SourceOffsets::messageId).toList());
    assertNull(task.poll(), "nothing else while the isolated row is in flight");
    task.commitRecord(first.get(0), metadata(first.get(0), 1));
    await().until(() -> status("m1") == MessageStatus.PUBLISHED);
    List<SourceRecord> next = null;
    for (int i = 0; i < 5 && (next == null || next.isEmpty()); i++) {
      next = task.poll();
    }
    assertEquals(List.of("m2"), next.stream().map(SourceOffsets::messageId).toList());
  }

  @Test
  void afterADatabaseErrorOwnersGetAProbeIntervalToRenewBeforeExpiredLeasesAreTaken() {
    // m1's lease ran out while the database was away; its owner is alive and about to renew.
    add("eu", "m1", "a", "{}".getBytes());
    store.claim(new ClaimRequest("owner", Set.of("eu"), 1, Duration.ofSeconds(1), 10, true));
    clock.advance(Duration.ofSeconds(5));
    MockTime mockTime = new MockTime();
    time = mockTime;
    OutboxSourceTask t =
        startTask(Map.of("lease.duration.ms", "8000", "lease.renewal.interval.ms", "2000"));
    failing.failing = true;
    assertPollFailed(t, "the database failed the poll");
    failing.failing = false;

    // For a probe interval (a quarter of the lease) after the error, m1 is left to its owner.
    assertNull(t.poll());
    mockTime.sleep(1999);
    assertNull(t.poll());
    assertEquals(MessageStatus.IN_FLIGHT, status("m1"));
    assertEquals(0, store.find("m1").orElseThrow().abandonedClaims());
    // Its owner did not come back: then it is reclaimed, alone, as any abandoned row.
    mockTime.sleep(1);
    assertEquals(List.of("m1"), messageIds(t.poll()));
  }

  @Test
  void anOutcomeWriterThatDiesFailsTheTaskWithASanitizedReasonAndTheStoreClosesOnce() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(Map.of());
    List<SourceRecord> records = task.poll();
    failing.publishBug = new IllegalStateException("sentinel-payload-text");
    task.commitRecord(records.get(0), metadata(records.get(0), 1));

    AtomicReference<ConnectException> failure = new AtomicReference<>();
    await()
        .until(
            () -> {
              try {
                task.poll();
                return false;
              } catch (ConnectException e) {
                failure.set(e);
                return true;
              }
            });
    String message = failure.get().getMessage();
    assertTrue(message.contains("reason=BACKGROUND_THREAD_DIED"), message);
    assertFalse(message.contains("sentinel-payload-text"), message);
    assertNull(failure.get().getCause());
    assertEquals(MessageStatus.IN_FLIGHT, status("m1"), "nothing recorded without a write");
    assertEquals(1, task.metrics().lateAcks.get(), "the outcome it held is reported, not lost");

    // The loop has ended, so the stop is the last party to the close; a close that waits (a pool
    // during an outage) must not hold Connect's stop().
    CountDownLatch closing = new CountDownLatch(1);
    failing.closeGate = closing;
    long mark = LogCapture.get().mark();
    Thread stopper = new Thread(task::stop);
    stopper.setDaemon(true); // stuck for good if the stop waited for the close
    stopper.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> !stopper.isAlive());
    closing.countDown();
    await().until(() -> failing.closes.get() == 1);
    task.stop();
    assertEquals(1, failing.closes.get());
    // Closed on a thread of its own, whose lines still say whose they are. This task's only: an
    // earlier test's task may say its own stop late, from its outcome thread.
    List<LogCapture.Event> summary =
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.message().startsWith("outbox-relay task stopped: ")
                        && e.thread().contains("task-test-" + testName + "-"));
    assertEquals(1, summary.size(), summary::toString);
    assertEquals(
        "eu", summary.get(0).context().get(OutboxSourceTask.MDC_INSTANCE_KEYS), summary::toString);
    // The stop settled what the dead loop could not: the row is abandoned now, not in a lease.
    var row = store.find("m1").orElseThrow();
    assertEquals(MessageStatus.IN_FLIGHT, row.status());
    assertEquals(clock.now(), row.leaseExpiresAt(), "abandoned at the stop, not when it runs out");
  }

  @Test
  void theStoreIsClosedOnceWhenTheTaskStopsWithNothingInFlight() {
    startTask(Map.of());
    assertNull(task.poll());
    task.stop();
    await().until(() -> failing.closes.get() == 1);
    task.stop();
    assertEquals(1, failing.closes.get());
  }

  @Test
  void anAcknowledgementWithoutAnOffsetIsNeverRecordedAsPublished() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(Map.of());
    SourceRecord record = task.poll().get(0);
    // What a producer with acks=0 reports: metadata, but offset -1.
    RecordMetadata noOffset =
        new RecordMetadata(new TopicPartition(record.topic(), 0), -1, 0, 0L, 0, 0);
    assertFalse(noOffset.hasOffset());
    task.commitRecord(record, noOffset);
    await().until(() -> status("m1") != MessageStatus.IN_FLIGHT);
    assertEquals(MessageStatus.AMBIGUOUS, status("m1"));
    assertEquals("ACK_WITHOUT_OFFSET", store.find("m1").orElseThrow().lastFailureCode());
    assertEquals(0, task.metrics().published.get());
  }

  /**
   * A lease lost at renewal is a lost claim, counted once; its record, still awaited from Kafka,
   * keeps its in-flight slot until its acknowledgement comes (freed at renewal, the task could
   * claim a full budget beside records still in the producer).
   */
  @Test
  void aLeaseLostAtRenewalIsALostClaimCountedOnceWhoseSlotItsRecordsOutcomeFrees() {
    add("eu", "m1", "a", "{}".getBytes());
    MockTime mockTime = new MockTime();
    time = mockTime;
    startTask(Map.of("lease.duration.ms", "8000", "lease.renewal.interval.ms", "2000"));
    SourceRecord record = task.poll().get(0);
    assertEquals(1, task.metrics().inFlight());
    // The lease runs out (the database's clock) and another owner takes the row.
    clock.advance(Duration.ofSeconds(9));
    assertEquals(
        1,
        store
            .claimAbandoned(
                new ClaimRequest("other", Set.of("eu"), 1, Duration.ofSeconds(8), 10, true))
            .claimed()
            .size());

    mockTime.sleep(2000); // renewal due
    await().until(() -> task.metrics().leaseRenewalsLost.get() == 1);
    assertEquals(1, task.metrics().claimLost.get(), "a lost renewal is a lost claim");
    assertEquals(1, task.metrics().inFlight(), "its record is still awaited");

    // Kafka acknowledges the record after all: fenced off, and not counted a second time.
    long mark = LogCapture.get().mark();
    task.commitRecord(record, metadata(record, 7));
    await() // the write's outcome settled: the last thing it does for a claim lost before
        .until(
            () ->
                !LogCapture.get()
                    .matching(mark, e -> e.message().contains("already reported lost at lease"))
                    .isEmpty());
    assertEquals(1, failing.publishCalls.get());
    assertEquals(0, task.metrics().inFlight());
    assertEquals(1, task.metrics().claimLost.get());
    assertEquals(0, task.metrics().published.get());
    assertEquals("other", store.find("m1").orElseThrow().leaseOwner());
  }

  /**
   * stop() waits (up to its flush timeout) for an outcome write already taken from the queue, not
   * only for queued ones. Returning with the write still running let the task's successor settle
   * the row first (exactly once, its recovery records it PUBLISHED), and the late write then
   * reported a false lost claim.
   */
  @Test
  void stopWaitsForTheOutcomeWriteInHand() {
    add("eu", "m1", "a", "{}".getBytes());
    MockTime mockTime = new MockTime(); // the flush timeout does not run out by itself
    time = mockTime;
    startTask(Map.of());
    List<SourceRecord> records = task.poll();
    CountDownLatch gate = new CountDownLatch(1);
    failing.publishGate = gate;
    task.commitRecord(records.get(0), metadata(records.get(0), 1));
    await().until(() -> failing.publishCalls.get() == 1); // in hand: the queue is empty

    Thread stopper = new Thread(task::stop);
    stopper.start();
    await().until(() -> stopper.getState() == Thread.State.TIMED_WAITING || !stopper.isAlive());
    assertTrue(stopper.isAlive(), "stop() returned with the outcome write in hand");
    gate.countDown();

    await().until(() -> !stopper.isAlive());
    assertEquals(MessageStatus.PUBLISHED, status("m1"));
    assertEquals(1, task.metrics().published.get());
  }

  /**
   * stop() ends the outcome thread's waits without interrupting it: an interrupt that landed in a
   * write waiting for a pooled connection (which HikariCP ends at once, with an exception) failed
   * the write, a database error logged and the write retried, at every stop under load.
   */
  @Test
  void stopDoesNotFailAnOutcomeWriteWaitingForAConnection() {
    add("eu", "m1", "a", "{}".getBytes());
    MockTime mockTime = new MockTime();
    time = mockTime;
    startTask(Map.of());
    List<SourceRecord> records = task.poll();
    CountDownLatch gate = new CountDownLatch(1);
    failing.publishGate = gate;
    failing.publishGateInterruptible = true;
    long mark = LogCapture.get().mark();
    task.commitRecord(records.get(0), metadata(records.get(0), 1));
    await().until(() -> failing.publishCalls.get() == 1); // waiting for its connection

    Thread stopper = new Thread(task::stop);
    stopper.start();
    await()
        .until(
            () -> {
              mockTime.sleep(100); // past the flush timeout: stop() ends the loop's waits
              return !stopper.isAlive();
            });
    gate.countDown();

    await().until(() -> failing.closes.get() == 1);
    assertEquals(MessageStatus.PUBLISHED, status("m1"));
    assertEquals(1, failing.publishCalls.get(), "the write was not failed and retried");
    assertEquals(
        List.of(), LogCapture.get().matching(mark, e -> e.message().contains("outcomes failed")));
  }

  /**
   * At least once, an acknowledgement with Kafka's coordinates that comes after the stop's grace
   * (Connect's producer closed late on another thread) is a record in Kafka whose row a later claim
   * sends again: said as the duplicate it is, not as a row merely settled later.
   */
  @Test
  void anAcknowledgementAfterTheGraceSaysItsRowIsSentAgain() {
    add("eu", "m1", "a", "{}".getBytes());
    MockTime mockTime = new MockTime();
    time = mockTime;
    startTask(Map.of());
    List<SourceRecord> records = task.poll();
    stopMovingTheClock(task);
    mockTime.sleep(60_000); // the late-acknowledgement grace ends
    await().until(() -> failing.closes.get() == 1);
    long mark = LogCapture.get().mark();

    task.commitRecord(records.get(0), metadata(records.get(0), 1));

    assertEquals(1, task.metrics().lateAcks.get());
    List<LogCapture.Event> said =
        LogCapture.get()
            .matching(
                mark, e -> e.message().contains("reason=LATE_ACK") && e.message().contains("m1"));
    assertEquals(1, said.size(), said::toString);
    assertTrue(said.get(0).message().contains("a duplicate"), said.get(0)::message);
  }

  @Test
  void anAcknowledgementQueuedWhenTheWriterClosesIsCountedLateNotLost() {
    add("eu", "m1", "a", "{}".getBytes());
    add("eu", "m2", "b", "{}".getBytes());
    MockTime mockTime = new MockTime();
    time = mockTime;
    startTask(Map.of());
    List<SourceRecord> records = task.poll();
    CountDownLatch gate = new CountDownLatch(1);
    failing.publishGate = gate;
    task.commitRecord(records.get(0), metadata(records.get(0), 1));
    await().until(() -> failing.publishCalls.get() == 1); // the writer is inside m1's write
    task.commitRecord(records.get(1), metadata(records.get(1), 2)); // queued behind it

    stopMovingTheClock(task); // the flush waits on the task's clock; then the late-ack grace
    mockTime.sleep(60_000);
    gate.countDown();

    await().until(() -> failing.closes.get() == 1);
    assertEquals(MessageStatus.PUBLISHED, status("m1"));
    assertEquals(1, task.metrics().lateAcks.get(), "m2's acknowledgement counted late");
    assertEquals(MessageStatus.IN_FLIGHT, status("m2"), "and not written after the stop");
  }

  /**
   * The task's instance keys leave the task thread's logging context when it stops (on that thread,
   * as Connect calls stop()) and when its start fails: Connect's own context restores only its
   * keys, and the pooled thread's next task, another connector's, logged under these.
   */
  @Test
  void theInstanceKeysLeaveTheLoggingContextAtStopAndAtAFailedStart() {
    OutboxSourceTask t = startTask(Map.of());
    assertEquals("eu", MDC.get(OutboxSourceTask.MDC_INSTANCE_KEYS));
    t.stop();
    assertNull(MDC.get(OutboxSourceTask.MDC_INSTANCE_KEYS));

    Map<String, String> props = new HashMap<>();
    props.put("connection.url", "jdbc:postgresql://localhost:1/unused");
    props.put("instance.keys", "eu");
    props.put("connector.name", "task-test-" + testName + "-failed");
    FixedStoreProvider refusing = new FixedStoreProvider(failing, () -> taskClock);
    refusing.openFailure = new IllegalStateException("the pool cannot start");
    OutboxSourceTask failed = new OutboxSourceTask(refusing, time);
    failed.initialize(new NoMetricsContext());
    assertThrows(ConnectException.class, () -> failed.start(props));
    assertNull(MDC.get(OutboxSourceTask.MDC_INSTANCE_KEYS));
  }

  /**
   * A mapping that throws (a bug) fails the poll naming the row. The rest of its claim is given
   * back, due at once for the next instance, and none of it is left in the ledger for the stop to
   * wait its grace for. The row that failed takes a row-that-fails-its-task's route: its lease ends
   * now, and it is reclaimed alone as an abandoned row (charged an attempt each time it fails a
   * task, until it is parked EXHAUSTED); given back, it went out again in an ordinary batch and
   * failed that task too, for ever.
   */
  @Test
  void aMappingThatThrowsFailsThePollGivesBackTheRestAndParksItsRow() {
    add("eu", "m1", "a", "{}".getBytes());
    add("eu", "m2", "b", "{}".getBytes());
    startTask(Map.of());
    task.handoff().failMappingOf(row -> row.messageId().equals("m1"));
    long mark = LogCapture.get().mark();

    MappingFailedException e = assertThrows(MappingFailedException.class, task::poll);

    assertEquals("m1", e.messageId());
    assertEquals(0, task.metrics().inFlight());
    await().until(() -> status("m2") == MessageStatus.PENDING);
    assertNull(store.find("m2").orElseThrow().leaseOwner(), "given back");
    var failed = store.find("m1").orElseThrow();
    assertEquals(MessageStatus.FAILED, failed.status(), "parked: it would fail every task");
    assertEquals(ReasonCodes.MAPPING_FAILED, failed.lastFailureCode());
    assertNull(failed.leaseOwner());
    assertEquals(1, task.metrics().failed.get());
    assertEquals(
        1,
        LogCapture.get()
            .matching(
                mark,
                l -> l.message().contains("message_id=m1") && l.message().contains("Parked FAILED"))
            .size());
    assertFalse(
        store.hasAbandoned(
            new ClaimRequest("other", Set.of("eu"), 10, Duration.ofSeconds(30), 10, true)));
    // Polled again (the task restarted), the rest goes out, and the parked row fails nothing.
    List<String> sent = new ArrayList<>();
    await()
        .pollInSameThread()
        .until(
            () -> {
              sent.addAll(messageIds(task.poll()));
              return !sent.isEmpty();
            });
    assertEquals(List.of("m2"), sent);
  }

  /**
   * Where the park cannot be written (or may not have been: its reply lost), the row's lease ends:
   * reclaimed alone, charged each time.
   */
  @Test
  void aMappingThatThrowsLeavesItsRowAbandonedWhereItCannotBeParked() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(Map.of());
    task.handoff().failMappingOf(row -> row.messageId().equals("m1"));
    failing.parksFail = true; // as the connection dropped mid-statement (08006)
    long mark = LogCapture.get().mark();

    assertThrows(MappingFailedException.class, task::poll);

    assertEquals(
        1,
        LogCapture.get()
            .matching(
                mark,
                l ->
                    l.message().contains("may have parked message_id=m1")
                        && l.message().contains("reason=WRITE_REPLY_LOST"))
            .size(),
        "the park may have committed: said so, not that it failed");

    var failed = store.find("m1").orElseThrow();
    assertEquals(MessageStatus.IN_FLIGHT, failed.status());
    assertEquals(clock.now(), failed.leaseExpiresAt(), "abandoned now, not given back");
    assertTrue(
        store.hasAbandoned(
            new ClaimRequest("other", Set.of("eu"), 10, Duration.ofSeconds(30), 10, true)));
  }

  /** ... and where the park was refused before it was sent, that is what is said. */
  @Test
  void aMappingThatThrowsWhoseParkWasNotSentSaysSo() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(Map.of());
    task.handoff().failMappingOf(row -> row.messageId().equals("m1"));
    failing.failure =
        new OutboxStoreException(
                OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08001", "mark-failed")
            .beforeSending();
    failing.parksFail = true;
    long mark = LogCapture.get().mark();

    assertThrows(MappingFailedException.class, task::poll);

    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, l -> l.message().contains("Could not park message_id=m1"))
            .size());
    assertEquals(MessageStatus.IN_FLIGHT, status("m1"), "left to its lease: abandoned now");
  }

  /**
   * ... and where another session holds the row locked, neither the park nor the end of its lease
   * waits for it (each gives up on the lock): the lease runs out instead, and the task says so.
   */
  @Test
  void aMappingThatThrowsOnALockedRowSaysItsLeaseRunsOut() {
    add("eu", "m1", "a", "{}".getBytes());
    startTask(Map.of());
    task.handoff().failMappingOf(row -> row.messageId().equals("m1"));
    failing.lockedRows = Set.of("m1");
    long mark = LogCapture.get().mark();

    assertThrows(MappingFailedException.class, task::poll);

    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, l -> l.message().contains("Could not park message_id=m1"))
            .size());
    assertEquals(
        1,
        LogCapture.get()
            .matching(
                mark,
                l ->
                    l.message().contains("Could not end the lease of message_id=m1")
                        && l.message().contains("reason=ROW_LOCKED"))
            .size());
    var row = store.find("m1").orElseThrow();
    assertEquals(MessageStatus.IN_FLIGHT, row.status());
    assertTrue(row.leaseExpiresAt().isAfter(clock.now()), "not ended: runs out");
  }

  /**
   * Task 0's maintenance runs beside its polls, on a thread of its own, where its pool has a
   * connection for it beside the claims' and the outcome loop's (3 or more): a count of a large
   * backlog (here one held until the test lets it end) no longer holds the poll that started it.
   * With a pool of 2 it runs inside the poll, as it did.
   */
  @ParameterizedTest(name = "connection.pool.size={0}")
  @ValueSource(ints = {2, 4})
  void taskZerosMaintenanceRunsBesideItsPollsWhereThePoolHasRoom(int poolSize) throws Exception {
    CountDownLatch countEnds = new CountDownLatch(1);
    AtomicInteger counts = new AtomicInteger();
    failing.beforeInspect = FailingStore.heldUntil(countEnds, counts::incrementAndGet);
    startTask(Map.of("connection.pool.size", Integer.toString(poolSize)));
    CompletableFuture<List<SourceRecord>> poll = CompletableFuture.supplyAsync(task::poll);
    try {
      await().until(() -> counts.get() == 1);
      if (poolSize == 2) {
        assertFalse(poll.isDone(), "the count holds the poll");
      } else {
        poll.get(30, TimeUnit.SECONDS); // returned, not failed, the count still going
        assertEquals(1, countEnds.getCount(), "the count still going");
      }
    } finally {
      countEnds.countDown();
      failing.beforeInspect = null;
    }
    assertNull(poll.get(30, TimeUnit.SECONDS), "the poll returns once the count ends");
  }

  /**
   * A task stopped while its maintenance runs gives its pool's idle connections back before it
   * waits for that run, then closes the store once the run ends: the whole pool stayed open beside
   * the successor's until then.
   */
  @Test
  void aStopDuringMaintenanceReleasesTheIdleConnectionsBeforeWaitingForIt() throws Exception {
    CountDownLatch countEnds = new CountDownLatch(1);
    AtomicInteger counts = new AtomicInteger();
    failing.beforeInspect = FailingStore.heldUntil(countEnds, counts::incrementAndGet);
    startTask(Map.of("connection.pool.size", "4"));
    assertNull(CompletableFuture.supplyAsync(task::poll).get(30, TimeUnit.SECONDS));
    await().until(() -> counts.get() == 1);
    try {
      task.stop();
      assertEquals(1, failing.idleReleases.get(), "at the stop, before the grace and the close");
      assertEquals(0, failing.closes.get(), "the close waits for the count");
    } finally {
      countEnds.countDown();
      failing.beforeInspect = null;
    }
    await().until(() -> failing.closes.get() == 1);
    assertEquals(2, failing.idleReleases.get(), "again at the close: what the grace opened");
  }

  @Test
  void aMalformedTaskIdFailsTheTaskInsteadOfBecomingTaskZero() {
    assertThrows(ConnectException.class, () -> startTask(Map.of(OutboxSourceTask.TASK_ID, "x1")));
    task = null;
  }

  /**
   * A poll the database failed: no records, the failure counted; not thrown as a
   * RetriableException, which Connect logs with its trace at every poll.
   */
  static void assertPollFailed(OutboxSourceTask t, String message) {
    long before = t.metrics().databaseErrors.get();
    assertNull(t.poll(), message);
    assertTrue(t.metrics().databaseErrors.get() > before, "the failure counted: " + message);
  }

  /** Delegates to the in-memory store, or fails like a database that went away. */
  static final class FailingStore implements OutboxStore {
    private final OutboxStore delegate;
    volatile boolean failing;

    /** With {@link #failing}: only the next call fails. */
    volatile boolean failOnce;

    /** Every {@code markFailed} fails, as {@link #failure}. */
    volatile boolean parksFail;

    volatile OutboxStoreException failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", "claim");

    /** Retention batches that succeed; the next ones fail with {@link #failure}. */
    volatile int retentionBatchesBeforeFailing = Integer.MAX_VALUE;

    /** While set, runs at the start of each retryLater. */
    volatile Runnable beforeRetryLater;

    /**
     * While set, a statement of dead-letter positions with this row's fails, as {@link #failure}.
     */
    volatile String refusedDeadLetterCopy;

    /** While set, runs at the start of each deletePublished. */
    volatile Runnable beforeRetentionBatch;

    /** While set, each deletePublished deletes nothing and says it deleted a full batch. */
    volatile boolean retentionBatchesFull;

    /** While set, runs at the start of each recordDeadLetterCopies. */
    volatile Runnable beforeDeadLetterCopy;

    /** Thrown by the next batch publish: a bug, not a store failure. */
    volatile RuntimeException publishBug;

    /** Thrown by every claim: a failure the store did not classify (a bug). */
    volatile Throwable claimBug;

    /** While set, a batch publish waits for it (uninterruptibly, like a driver call). */
    volatile CountDownLatch publishGate;

    /**
     * The publish's wait for {@link #publishGate} ends at an interrupt, failing the write, as
     * HikariCP's wait for a pooled connection does.
     */
    volatile boolean publishGateInterruptible;

    /** While set, close() waits for it, as a pool's close can during an outage. */
    volatile CountDownLatch closeGate;

    /** While set, batch publishes fail (a write stuck behind a lock); nothing else does. */
    volatile boolean publishesFail;

    /**
     * Rows another session holds locked, as PostgreSQL's statements meet them: a renewal and an end
     * of leases skip them and report them locked; a batch publish holding one fails with 55P03 (its
     * lock wait spent), the publish skipping locked rows marks it ROW_LOCKED and writes the others;
     * a single outcome write of one fails with 55P03.
     */
    volatile Set<String> lockedRows = Set.of();

    /** Run at the start of each batch publish, when set. */
    volatile Runnable beforePublish;

    /** Run at the start of each batch publish skipping locked rows, when set. */
    volatile Runnable beforeSkippingLocked;

    /** Batch publishes skipping locked rows ({@link #markPublishedSkippingLocked}). */
    final AtomicInteger skippingLockedCalls = new AtomicInteger();

    private void checkUnlocked(String messageId, String operation) {
      if (lockedRows.contains(messageId)) {
        throw lockWait(operation);
      }
    }

    private static OutboxStoreException lockWait(String operation) {
      return new OutboxStoreException(
          OutboxStoreException.Kind.TRANSIENT, "DB_LOCK_NOT_AVAILABLE", "55P03", operation);
    }

    /** The next batch publish commits, then fails: its reply lost, as at a failover. */
    volatile boolean nextPublishLosesItsReply;

    /**
     * After the lost reply, publishes fail (set publishesFail) until the test lets them through.
     */
    volatile boolean publishesFailAfterTheLostReply;

    final AtomicInteger publishCalls = new AtomicInteger();
    final AtomicInteger renewCalls = new AtomicInteger();
    final AtomicInteger claimCalls = new AtomicInteger();
    final AtomicInteger closes = new AtomicInteger();

    final AtomicInteger idleReleases = new AtomicInteger();

    FailingStore(OutboxStore delegate) {
      this.delegate = delegate;
    }

    private void check() {
      if (failing) {
        if (failOnce) { // the next call only
          failing = false;
          failOnce = false;
        }
        throw failure;
      }
    }

    /** The next claim commits, then fails: its reply lost, as at a failover. */
    volatile boolean nextClaimLosesItsReply;

    @Override
    public dev.outboxrelay.store.ClaimResult claim(ClaimRequest request) {
      check();
      Throwable bug = claimBug;
      if (bug instanceof Error error) {
        throw error;
      }
      if (bug != null) {
        throw (RuntimeException) bug;
      }
      claimCalls.incrementAndGet();
      dev.outboxrelay.store.ClaimResult result = delegate.claim(request);
      if (nextClaimLosesItsReply) {
        nextClaimLosesItsReply = false;
        throw failure;
      }
      return result;
    }

    @Override
    public dev.outboxrelay.store.ClaimResult claimAbandoned(ClaimRequest request) {
      check();
      return delegate.claimAbandoned(request);
    }

    @Override
    public boolean hasAbandoned(ClaimRequest request) {
      check();
      return delegate.hasAbandoned(request);
    }

    @Override
    public long newEpoch() {
      check();
      return delegate.newEpoch();
    }

    @Override
    public dev.outboxrelay.store.RecoveryPage recover(
        dev.outboxrelay.store.RecoveryRequest request,
        String instanceKey,
        long afterSeq,
        int pageRows) {
      check();
      return delegate.recover(request, instanceKey, afterSeq, pageRows);
    }

    @Override
    public dev.outboxrelay.store.UnheldPage releaseUnheld(
        String instanceKey,
        String owner,
        java.util.Collection<Long> heldSeqs,
        long handedThroughBatch,
        long afterSeq,
        int pageRows) {
      check();
      return delegate.releaseUnheld(
          instanceKey, owner, heldSeqs, handedThroughBatch, afterSeq, pageRows);
    }

    @Override
    public List<String> giveBack(List<dev.outboxrelay.store.HeldLease> rows) {
      check();
      return delegate.giveBack(rows);
    }

    @Override
    public dev.outboxrelay.store.EndedLeases expireLeases(
        List<dev.outboxrelay.store.HeldLease> leases) {
      check();
      Set<String> locked = lockedRows;
      List<dev.outboxrelay.store.HeldLease> free =
          leases.stream().filter(l -> !locked.contains(l.messageId())).toList();
      Set<String> skipped = new HashSet<>();
      leases.stream()
          .map(dev.outboxrelay.store.HeldLease::messageId)
          .filter(locked::contains)
          .forEach(skipped::add);
      return new dev.outboxrelay.store.EndedLeases(delegate.expireLeases(free).ended(), skipped);
    }

    @Override
    public dev.outboxrelay.store.Outcome markPublished(dev.outboxrelay.store.PublishedAck ack) {
      check();
      return delegate.markPublished(ack);
    }

    @Override
    public List<dev.outboxrelay.store.Outcome> markPublished(
        List<dev.outboxrelay.store.PublishedAck> acks) {
      check();
      publishCalls.incrementAndGet();
      Runnable before = beforePublish;
      if (before != null) {
        before.run();
      }
      if (publishesFail) {
        throw failure;
      }
      RuntimeException bug = publishBug;
      if (bug != null) {
        throw bug;
      }
      CountDownLatch gate = publishGate;
      if (gate != null && publishGateInterruptible) {
        try {
          gate.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt(); // as the pool does
          throw new OutboxStoreException(
              OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", null, "publish");
        }
      } else if (gate != null) {
        Uninterruptibles.await(gate);
      }
      for (dev.outboxrelay.store.PublishedAck ack : acks) {
        checkUnlocked(ack.messageId(), "mark-published");
      }
      List<dev.outboxrelay.store.Outcome> outcomes = delegate.markPublished(acks);
      if (nextPublishLosesItsReply) {
        nextPublishLosesItsReply = false;
        publishesFail = publishesFailAfterTheLostReply;
        throw failure;
      }
      return outcomes;
    }

    @Override
    public List<dev.outboxrelay.store.Outcome> markPublishedSkippingLocked(
        List<dev.outboxrelay.store.PublishedAck> acks) {
      check();
      skippingLockedCalls.incrementAndGet();
      Runnable beforeSkipping = beforeSkippingLocked;
      if (beforeSkipping != null) {
        beforeSkipping.run();
      }
      if (publishesFail) {
        throw failure;
      }
      Set<String> locked = lockedRows;
      List<dev.outboxrelay.store.PublishedAck> free =
          acks.stream().filter(a -> !locked.contains(a.messageId())).toList();
      Iterator<dev.outboxrelay.store.Outcome> written = delegate.markPublished(free).iterator();
      List<dev.outboxrelay.store.Outcome> outcomes = new ArrayList<>();
      for (dev.outboxrelay.store.PublishedAck ack : acks) {
        outcomes.add(
            locked.contains(ack.messageId())
                ? dev.outboxrelay.store.Outcome.ROW_LOCKED
                : written.next());
      }
      return outcomes;
    }

    @Override
    public boolean claimsEnded(String owner) {
      check();
      return delegate.claimsEnded(owner);
    }

    @Override
    public Set<String> publishedUnderOwnLease(List<dev.outboxrelay.store.PublishedAck> acks) {
      check();
      return delegate.publishedUnderOwnLease(acks);
    }

    @Override
    public dev.outboxrelay.store.Outcome retryLater(
        String messageId,
        dev.outboxrelay.store.Lease lease,
        String reasonCode,
        Duration delay,
        int maxAttempts) {
      Runnable hook = beforeRetryLater;
      if (hook != null) {
        hook.run();
      }
      check();
      checkUnlocked(messageId, "retry-later");
      return delegate.retryLater(messageId, lease, reasonCode, delay, maxAttempts);
    }

    @Override
    public dev.outboxrelay.store.Outcome markFailed(
        String messageId,
        dev.outboxrelay.store.Lease lease,
        String reasonCode,
        dev.outboxrelay.store.KafkaCoordinates deadLetter) {
      check();
      if (parksFail) {
        throw failure;
      }
      checkUnlocked(messageId, "mark-failed");
      return delegate.markFailed(messageId, lease, reasonCode, deadLetter);
    }

    @Override
    public List<Boolean> recordDeadLetterCopies(List<dev.outboxrelay.store.DeadLetterCopy> copies) {
      check();
      Runnable before = beforeDeadLetterCopy;
      if (before != null) {
        before.run();
      }
      String refused = refusedDeadLetterCopy;
      if (refused != null && copies.stream().anyMatch(c -> c.messageId().equals(refused))) {
        throw failure;
      }
      return delegate.recordDeadLetterCopies(copies);
    }

    @Override
    public List<dev.outboxrelay.store.Outcome> park(List<dev.outboxrelay.store.ParkRequest> parks) {
      check();
      return delegate.park(parks);
    }

    @Override
    public Set<String> parkedUnderOwnLease(List<dev.outboxrelay.store.ParkRequest> parks) {
      check();
      return delegate.parkedUnderOwnLease(parks);
    }

    @Override
    public dev.outboxrelay.store.Outcome release(
        String messageId, dev.outboxrelay.store.Lease lease) {
      check();
      checkUnlocked(messageId, "release");
      return delegate.release(messageId, lease);
    }

    @Override
    public dev.outboxrelay.store.Renewal renew(
        List<dev.outboxrelay.store.HeldLease> leases, Duration d) {
      check();
      renewCalls.incrementAndGet();
      Set<String> locked = lockedRows;
      Set<String> skipped = new HashSet<>();
      List<dev.outboxrelay.store.HeldLease> free = new ArrayList<>();
      for (dev.outboxrelay.store.HeldLease lease : leases) {
        if (locked.contains(lease.messageId())) {
          skipped.add(lease.messageId());
        } else {
          free.add(lease);
        }
      }
      return new dev.outboxrelay.store.Renewal(delegate.renew(free, d).lost(), skipped);
    }

    /** While set, runs at the start of each inspect (a count that takes its time). */
    volatile Runnable beforeInspect;

    /**
     * Calls of lag, countParked and countLeasedElsewhere: what a backlog read runs after inspect.
     */
    final AtomicInteger backlogSideReads = new AtomicInteger();

    /** For {@link #beforeInspect}: runs {@code each}, then holds the inspect until released. */
    static Runnable heldUntil(CountDownLatch release, Runnable each) {
      return () -> {
        each.run();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      };
    }

    volatile Runnable beforeLag;

    /** While set, inspect fails (a count that times out) and nothing else does. */
    volatile boolean inspectsFail;

    @Override
    public dev.outboxrelay.store.BacklogSnapshot inspect(Set<String> keys, boolean published) {
      Runnable hook = beforeInspect;
      if (hook != null) {
        hook.run();
      }
      check();
      if (inspectsFail) {
        throw failure;
      }
      return delegate.inspect(keys, published);
    }

    @Override
    public Duration lag(Set<String> keys) {
      backlogSideReads.incrementAndGet();
      Runnable hook = beforeLag;
      if (hook != null) {
        hook.run();
      }
      check();
      return delegate.lag(keys);
    }

    @Override
    public Map<MessageStatus, Long> countParked(Set<String> keys) {
      backlogSideReads.incrementAndGet();
      check();
      return delegate.countParked(keys);
    }

    /** {@code countLeasedElsewhere} throws {@link #failure} while set. */
    volatile boolean leasedElsewhereCountsFail;

    @Override
    public long countLeasedElsewhere(Set<String> keys, String ownOwners) {
      backlogSideReads.incrementAndGet();
      check();
      if (leasedElsewhereCountsFail) {
        throw failure;
      }
      return delegate.countLeasedElsewhere(keys, ownOwners);
    }

    @Override
    public int deletePublished(Set<String> keys, Instant before, int limit) {
      Runnable hook = beforeRetentionBatch;
      if (hook != null) {
        hook.run();
      }
      check();
      if (retentionBatchesBeforeFailing-- <= 0) {
        throw failure;
      }
      if (retentionBatchesFull) {
        return limit;
      }
      return delegate.deletePublished(keys, before, limit);
    }

    @Override
    public Instant now() {
      return delegate.now();
    }

    @Override
    public void releaseIdleConnections() {
      idleReleases.incrementAndGet();
    }

    @Override
    public void close() {
      CountDownLatch gate = closeGate;
      if (gate != null) {
        Uninterruptibles.await(gate);
      }
      closes.incrementAndGet();
    }
  }

  /** Waits without giving way to interrupts, as a JDBC call does. */
  private static final class Uninterruptibles {
    static void await(CountDownLatch latch) {
      boolean interrupted = false;
      while (true) {
        try {
          latch.await();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private static final class NoMetricsContext implements SourceTaskContext {
    @Override
    public Map<String, String> configs() {
      return Map.of();
    }

    @Override
    public OffsetStorageReader offsetStorageReader() {
      return null;
    }

    @Override
    public PluginMetrics pluginMetrics() {
      return null;
    }
  }
}
