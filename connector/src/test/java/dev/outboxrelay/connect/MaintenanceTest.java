package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.SteppableTime;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.utils.MockTime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class MaintenanceTest {
  /** The thread of runs on a thread of their own: their lines, not an earlier test's task's. */
  private static final String MAINTENANCE_THREAD = "maintenance-test";

  private final MockTime time = new MockTime();

  private static RuntimeFixture fixture() {
    return new RuntimeFixture(fixtureProps());
  }

  private static Map<String, String> fixtureProps() {
    return Map.of(
        "instance.keys", "eu",
        "ordering.enabled", "false",
        "retention.published.ms", "60000",
        "cleanup.interval.ms", "10000",
        "cleanup.batch.size", "2",
        "metrics.backlog.interval.ms", "5000");
  }

  private static void publishAll(RuntimeFixture f) {
    for (ClaimedMessage m : f.store.claim(f.settings.claimRequest()).claimed()) {
      f.store.markPublished(
          new PublishedAck(
              m.messageId(), m.seq(), m.lease(), new KafkaCoordinates("t", 0, m.seq())));
    }
  }

  /**
   * On a thread of its own, a run does not hold the poll that started it: a count of millions of
   * rows (here one held until the test lets it end) or reads waiting for connections in an outage
   * held the poll, and a stop meanwhile outlasted Connect's graceful shutdown timeout. No second
   * run starts while one runs; a failure that retrying cannot fix is thrown by the next call, in a
   * poll, which fails the task.
   */
  @Test
  void aRunOnItsOwnThreadDoesNotHoldThePollThatStartedIt() throws Exception {
    RuntimeFixture f = fixture();
    f.add("eu", "m1", "a");
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    java.util.concurrent.CountDownLatch countEnds = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.atomic.AtomicInteger counts =
        new java.util.concurrent.atomic.AtomicInteger();
    store.beforeInspect =
        OutboxSourceTaskTest.FailingStore.heldUntil(countEnds, counts::incrementAndGet);
    java.util.concurrent.ExecutorService thread =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      RelayMetrics metrics = new RelayMetrics(time);
      Maintenance maintenance = new Maintenance(store, f.config, metrics, time, true, null, thread);

      Thread poll = new Thread(maintenance::runIfDue); // as a poll would start it
      poll.start();
      org.awaitility.Awaitility.await().until(() -> counts.get() == 1 && !poll.isAlive());
      time.sleep(60_000); // due again: the run still going is not doubled
      maintenance.runIfDue();
      assertEquals(0, metrics.backlog(MessageStatus.PENDING), "not counted yet");

      countEnds.countDown();
      org.awaitility.Awaitility.await().until(() -> metrics.backlog(MessageStatus.PENDING) == 1);
      assertEquals(1, counts.get());

      store.beforeInspect = null;
      store.failure =
          new OutboxStoreException(
              OutboxStoreException.Kind.PERMISSION, "DB_PERMISSION_DENIED", "42501", "inspect");
      store.inspectsFail = true;
      time.sleep(600_000);
      // The first call starts the run, which fails on its thread; a later one (or, had the run
      // ended already, the same) throws its failure.
      org.awaitility.Awaitility.await()
          .until(
              () -> {
                try {
                  maintenance.runIfDue();
                  return false;
                } catch (OutboxStoreException e) {
                  return e.kind() == OutboxStoreException.Kind.PERMISSION;
                }
              });
    } finally {
      countEnds.countDown();
      thread.shutdownNow();
    }
  }

  @Test
  void onlyTheFirstTaskRunsIt() {
    RuntimeFixture f = fixture();
    f.add("eu", "m1", "a");
    new Maintenance(f.store, f.config, f.metrics, time, false, null).runIfDue();
    assertEquals(0, f.metrics.backlog(MessageStatus.PENDING));
    new Maintenance(f.store, f.config, f.metrics, time, true, null).runIfDue();
    assertEquals(1, f.metrics.backlog(MessageStatus.PENDING));
  }

  @Test
  void backlogFiguresAreRefreshedAtTheirInterval() {
    RuntimeFixture f = fixture();
    Maintenance maintenance = new Maintenance(f.store, f.config, f.metrics, time, true, null);
    maintenance.runIfDue();
    f.add("eu", "m1", "a");
    maintenance.runIfDue();
    assertEquals(0, f.metrics.backlog(MessageStatus.PENDING), "not due yet");
    time.sleep(5000);
    maintenance.runIfDue();
    assertEquals(1, f.metrics.backlog(MessageStatus.PENDING));
  }

  /**
   * At least once, rows of the connector's keys held under live leases of another connector's tasks
   * (two connectors on one key) are counted with the backlog, and said once while it lasts.
   */
  @Test
  void rowsLeasedByAnotherConnectorAreCountedWithTheBacklogAndSaidOnce() {
    RuntimeFixture f = fixture();
    f.add("eu", "ours", "a");
    f.add("eu", "theirs", "b");
    ClaimRequest own = f.settings.claimRequest();
    ClaimedMessage ours =
        f.store
            .claim(
                new ClaimRequest(
                    "relay/task-1/1", own.instanceKeys(), 1, own.leaseDuration(), 3, true))
            .claimed()
            .get(0);
    ClaimedMessage theirs =
        f.store
            .claim(
                new ClaimRequest(
                    "other/task-0/2", own.instanceKeys(), 1, own.leaseDuration(), 3, true))
            .claimed()
            .get(0);
    assertEquals("theirs", theirs.messageId());
    long mark = LogCapture.get().mark();
    Maintenance maintenance =
        new Maintenance(f.store, f.config, f.metrics, time, true, "relay/task-");

    maintenance.runIfDue();
    assertEquals(1, f.metrics.foreignLeasedRows.get());
    time.sleep(5000);
    maintenance.runIfDue();
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("(reason=LEASED_BY_ANOTHER_CONNECTOR)"))
            .size(),
        "said once while it lasts");
    RelayMetrics notAsked = new RelayMetrics(time);
    new Maintenance(f.store, f.config, notAsked, time, true, null).runIfDue(); // exactly once
    assertEquals(0, notAsked.foreignLeasedRows.get(), "not asked to count");

    f.store.release("theirs", theirs.lease());
    f.store.release("ours", ours.lease());
    time.sleep(5000);
    maintenance.runIfDue();
    assertEquals(0, f.metrics.foreignLeasedRows.get());
  }

  /**
   * With a long cleanup interval (a day), retention runs first within a minute of task 0's start,
   * then at its interval: a task 0 restarted more often than the interval (rolling deploys) never
   * ran it.
   */
  /**
   * A run going on when the task stops ends after its statement: retention does not start on a pool
   * about to close (cut short by the close, it reported the database failing after the task had
   * stopped).
   */
  @Test
  void aRunGoingOnWhenTheTaskStopsEndsAfterItsStatement() throws Exception {
    RuntimeFixture f = fixture();
    f.add("eu", "old", "a");
    publishAll(f);
    f.clock.advance(Duration.ofSeconds(61));
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);

    // the count and retention both due
    stopDuringTheCount(f, store, null, () -> time.sleep(Maintenance.FIRST_CLEANUP_MS));

    assertEquals(0, f.metrics.cleanedUp.get(), "retention did not start after the stop");
  }

  /**
   * Runs maintenance on a thread of its own, holds it in its backlog count, stops it there, lets
   * the count end, and waits for the run to end. {@code beforeRun}: once maintenance is made.
   */
  private void stopDuringTheCount(
      RuntimeFixture f,
      OutboxSourceTaskTest.FailingStore store,
      String ownOwners,
      Runnable beforeRun)
      throws InterruptedException {
    java.util.concurrent.CountDownLatch countEnds = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch counting = new java.util.concurrent.CountDownLatch(1);
    store.beforeInspect =
        OutboxSourceTaskTest.FailingStore.heldUntil(countEnds, counting::countDown);
    java.util.concurrent.ExecutorService thread =
        java.util.concurrent.Executors.newSingleThreadExecutor(
            r -> new Thread(r, MAINTENANCE_THREAD));
    try {
      Maintenance maintenance =
          new Maintenance(store, f.config, f.metrics, time, true, ownOwners, thread);
      beforeRun.run();
      maintenance.runIfDue();
      assertTrue(counting.await(10, java.util.concurrent.TimeUnit.SECONDS));

      maintenance.stop();
      countEnds.countDown();
      thread.shutdown();
      assertTrue(thread.awaitTermination(10, java.util.concurrent.TimeUnit.SECONDS));
    } finally {
      countEnds.countDown();
      thread.shutdownNow();
    }
  }

  /**
   * ... and so does a backlog read: after a count the stop let finish (or that failed), it reads
   * neither the rows leased elsewhere nor the lag and parked rows alone, on a pool about to close
   * (each up to the statement timeout), and logs no failure after the task's stopped line.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aBacklogReadGoingOnWhenTheTaskStopsRunsNoFurtherStatement(boolean countFails)
      throws Exception {
    RuntimeFixture f = fixture();
    f.add("eu", "a", "a");
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_STATEMENT_TIMEOUT", "57014", "inspect");
    store.inspectsFail = countFails;
    long mark = LogCapture.get().mark();

    stopDuringTheCount(f, store, "relay/task-", () -> {});

    assertEquals(0, store.backlogSideReads.get(), "no statement after the count");
    assertEquals(
        List.of(),
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.level().equals("WARN")
                        && e.logger().endsWith(".Maintenance")
                        && e.thread().equals(MAINTENANCE_THREAD)), // not an earlier test's task's
        "nothing said failing after the stop");
  }

  @Test
  void retentionRunsFirstSoonAfterTheStartWhateverItsInterval() {
    Map<String, String> props = new java.util.HashMap<>(fixtureProps());
    props.put("cleanup.interval.ms", "86400000");
    RuntimeFixture f = new RuntimeFixture(props);
    f.add("eu", "old", "a");
    publishAll(f);
    f.clock.advance(Duration.ofSeconds(61));
    Maintenance maintenance = new Maintenance(f.store, f.config, f.metrics, time, true, null);
    maintenance.runIfDue();
    time.sleep(Maintenance.FIRST_CLEANUP_MS - 1);
    maintenance.runIfDue();
    assertEquals(0, f.metrics.cleanedUp.get(), "not yet");
    time.sleep(1);
    maintenance.runIfDue();
    assertEquals(1, f.metrics.cleanedUp.get(), "within a minute of the start");

    f.add("eu", "later", "a");
    publishAll(f);
    f.clock.advance(Duration.ofSeconds(61));
    time.sleep(Duration.ofHours(12).toMillis());
    maintenance.runIfDue();
    assertEquals(1, f.metrics.cleanedUp.get(), "then at its interval");
    time.sleep(Duration.ofHours(12).toMillis());
    maintenance.runIfDue();
    assertEquals(2, f.metrics.cleanedUp.get());
  }

  /**
   * A wall clock stepped back (an NTP correction) holds neither the backlog reads nor retention
   * back: both waited for it to catch up again.
   */
  @Test
  void aWallClockSteppedBackHoldsNeitherBack() {
    SteppableTime stepped = new SteppableTime();
    RuntimeFixture f = fixture();
    f.add("eu", "old", "a");
    publishAll(f);
    f.clock.advance(Duration.ofSeconds(61));
    Maintenance maintenance = new Maintenance(f.store, f.config, f.metrics, stepped, true, null);
    maintenance.runIfDue();
    f.add("eu", "m1", "a");

    stepped.stepWallClock(Duration.ofHours(-1));
    stepped.sleep(10_000); // the backlog interval twice, the cleanup interval once
    maintenance.runIfDue();
    assertEquals(1, f.metrics.backlog(MessageStatus.PENDING), "the backlog read again");
    assertEquals(1, f.metrics.cleanedUp.get(), "retention ran");
  }

  /**
   * A backlog read that fails for the database's reasons (an outage, the statement timeout on a
   * backlog of tens of millions) leaves the lag ageing and does not fail the poll that ran it: task
   * 0 then claimed nothing while each poll ran the count again. One that retrying cannot fix does.
   */
  @Test
  void aFailedBacklogReadLeavesTheLagAgeingAndOnlyAPermanentFailureFailsTheCall() {
    RuntimeFixture f = fixture();
    f.add("eu", "m1", "a");
    f.clock.advance(Duration.ofSeconds(4));
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    RelayMetrics metrics = new RelayMetrics(time);
    Maintenance maintenance = new Maintenance(store, f.config, metrics, time, true, null);
    maintenance.runIfDue();
    assertEquals(4_000, metrics.lagMs());

    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "57014", "inspect");
    store.failing = true; // cancelled by the statement timeout
    time.sleep(5000);
    maintenance.runIfDue();
    assertEquals(9_000, metrics.lagMs(), "the oldest row's age now, not the last reading");
    assertEquals(
        1, metrics.databaseErrors.get(), "the lag read alone failed; not the count's timeout");

    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.PERMISSION, "DB_PERMISSION_DENIED", "42501", "inspect");
    time.sleep(5000);
    assertThrows(OutboxStoreException.class, maintenance::runIfDue);
  }

  /**
   * A count that fails (the statement timeout, on a backlog of tens of millions) still leaves
   * lag-ms current: the lag is read alone. Without it, a task 0 that started on such a backlog
   * showed no lag at all, and lag alerts stayed silent when the backlog was largest.
   */
  @Test
  void aBacklogCountThatFailsStillReadsTheLagAlone() {
    RuntimeFixture f = fixture();
    f.add("eu", "m1", "a");
    f.clock.advance(Duration.ofSeconds(4));
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "57014", "inspect");
    store.inspectsFail = true;
    RelayMetrics metrics = new RelayMetrics(time);
    Maintenance maintenance = new Maintenance(store, f.config, metrics, time, true, null);

    maintenance.runIfDue();
    assertEquals(4_000, metrics.lagMs(), "read alone, though no count ever succeeded");
    assertEquals(0, metrics.databaseErrors.get(), "a count past the statement timeout: no error");

    f.clock.advance(Duration.ofSeconds(7)); // the database's clock: the row is 11 s old
    time.sleep(5_000);
    maintenance.runIfDue();
    assertEquals(11_000, metrics.lagMs(), "read again, not aged from the last reading (9 s)");

    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", "inspect");
    time.sleep(600_000);
    maintenance.runIfDue();
    assertEquals(1, metrics.databaseErrors.get(), "a count the database failed: an error");
  }

  /**
   * Rows another connector holds are counted when the backlog count fails too (a backlog too large
   * to count is when two connectors on one key matter most): the figure froze, and its alert kept
   * firing after the other connector was gone.
   */
  @Test
  void rowsLeasedByAnotherConnectorAreCountedWhenTheBacklogCountFails() {
    RuntimeFixture f = fixture();
    f.add("eu", "theirs", "b");
    ClaimRequest own = f.settings.claimRequest();
    ClaimedMessage theirs =
        f.store
            .claim(
                new ClaimRequest(
                    "other/task-0/2", own.instanceKeys(), 1, own.leaseDuration(), 3, true))
            .claimed()
            .get(0);
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "57014", "inspect");
    store.inspectsFail = true;
    Maintenance maintenance =
        new Maintenance(store, f.config, f.metrics, time, true, "relay/task-");

    maintenance.runIfDue();
    assertEquals(1, f.metrics.foreignLeasedRows.get());

    f.store.release("theirs", theirs.lease());
    time.sleep(600_000);
    maintenance.runIfDue();
    assertEquals(0, f.metrics.foreignLeasedRows.get(), "the other connector is gone");
  }

  /**
   * A count of rows leased elsewhere that times out (it reads every unsettled row, as the backlog
   * count does) is said once until a count succeeds, not at every interval; said again after.
   */
  @Test
  void aFailingCountOfRowsLeasedElsewhereIsSaidOnceUntilOneSucceeds() {
    RuntimeFixture f = fixture();
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "QUERY_CANCELED", "57014", "count");
    store.leasedElsewhereCountsFail = true;
    Maintenance maintenance =
        new Maintenance(store, f.config, f.metrics, time, true, "relay/task-");
    long mark = LogCapture.get().mark();
    java.util.function.IntSupplier said =
        () ->
            LogCapture.get()
                .matching(
                    mark, e -> e.message().contains("foreign-leased-rows keeps its last value"))
                .size();

    for (int i = 0; i < 3; i++) {
      maintenance.runIfDue();
      time.sleep(600_000);
    }
    assertEquals(1, said.getAsInt(), "once while it fails");

    store.leasedElsewhereCountsFail = false;
    maintenance.runIfDue();
    time.sleep(600_000);
    store.leasedElsewhereCountsFail = true;
    maintenance.runIfDue();
    assertEquals(2, said.getAsInt(), "and again after a count succeeded");
  }

  /**
   * A stop that comes while the lag is read after a failed count sends no more statements: each
   * read may wait out the connection timeout in an outage, and the pool is about to close.
   */
  @Test
  void aStopDuringTheLagReadAfterAFailedCountEndsTheReads() {
    RuntimeFixture f = fixture();
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "57014", "inspect");
    store.inspectsFail = true;
    Maintenance[] maintenance = {null};
    store.beforeLag = () -> maintenance[0].stop(); // the task stops as the lag is read
    maintenance[0] = new Maintenance(store, f.config, f.metrics, time, true, "relay/task-");

    maintenance[0].runIfDue();

    assertEquals(1, store.backlogSideReads.get(), "the lag only: no parked rows, no other leases");
  }

  /**
   * An idle task 0 pauses up to poll.interval.ms between polls, where the backlog is read: with a
   * poll interval longer than two backlog intervals, a reading that found no row is not overdue
   * (lag-ms NaN) while the task only waits out its pause.
   */
  @Test
  void anIdlePollsPauseDoesNotMakeAReadingOverdue() {
    Map<String, String> props = new java.util.HashMap<>(fixtureProps());
    props.put("poll.interval.ms", "300000");
    RuntimeFixture f = new RuntimeFixture(props);
    RelayMetrics metrics = new RelayMetrics(time);
    Maintenance maintenance = new Maintenance(f.store, f.config, metrics, time, true, null);
    maintenance.runIfDue();
    time.sleep(305_000); // an idle poll's longest pause, and an interval
    assertEquals(0.0, metrics.lagGauge(), "only waiting out its pause");
    time.sleep(1);
    assertTrue(Double.isNaN(metrics.lagGauge()), "overdue past the pause and an interval");
  }

  /** A read after a count that timed out fails the task with an error retrying cannot fix. */
  @Test
  void aPermanentFailureOfTheLagReadAloneFailsTheCall() {
    RuntimeFixture f = fixture();
    f.add("eu", "m1", "a");
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "57014", "inspect");
    store.inspectsFail = true;
    store.beforeLag =
        () -> {
          store.failure =
              new OutboxStoreException(
                  OutboxStoreException.Kind.PERMISSION, "DB_PERMISSION_DENIED", "42501", "lag");
          store.failing = true; // the privilege revoked between the two reads
        };
    Maintenance maintenance =
        new Maintenance(store, f.config, new RelayMetrics(time), time, true, null);

    OutboxStoreException thrown = assertThrows(OutboxStoreException.class, maintenance::runIfDue);
    assertEquals("42501", thrown.sqlState());
  }

  /**
   * A count that fails still refreshes the parked rows (by their own index): the shipped
   * parked-rows alert reads them, and rows parked while counting kept failing went unseen.
   */
  @Test
  void aBacklogCountThatFailsStillCountsTheParkedRows() {
    RuntimeFixture f = fixture();
    f.add("eu", "m1", "a");
    f.add("eu", "m2", "b");
    f.add("us", "u1", "c");
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    RelayMetrics metrics = new RelayMetrics(time);
    Maintenance maintenance = new Maintenance(store, f.config, metrics, time, true, null);
    maintenance.runIfDue();
    assertEquals(2, metrics.backlog(MessageStatus.PENDING));
    assertEquals(0, metrics.backlog(MessageStatus.FAILED));

    ClaimedMessage m1 = f.store.claim(f.settings.claimRequest().withLimit(1)).claimed().get(0);
    f.store.markFailed(m1.messageId(), m1.lease(), "PAYLOAD_INVALID_JSON");
    ClaimedMessage u1 =
        f.store
            .claim(new ClaimRequest("other", Set.of("us"), 1, Duration.ofSeconds(30), 3, false))
            .claimed()
            .get(0);
    f.store.markFailed(u1.messageId(), u1.lease(), "PAYLOAD_INVALID_JSON");
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "57014", "inspect");
    store.inspectsFail = true;
    time.sleep(5000);
    maintenance.runIfDue();

    assertEquals(1, metrics.backlog(MessageStatus.FAILED), "eu's parked row, not us's");
    assertEquals(2, metrics.backlog(MessageStatus.PENDING), "the last count's, not read");
  }

  /**
   * A count that took long (it reads every row awaiting delivery) is not run again before ten times
   * as long, nor later than ten intervals: on a backlog of millions it would otherwise take most of
   * task 0's time.
   */
  @Test
  void aSlowBacklogReadIsSpacedByTenTimesItsDuration() {
    RuntimeFixture f = fixture(); // every 5 s
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    Maintenance maintenance = new Maintenance(store, f.config, f.metrics, time, true, null);

    assertNextCountComesAfter(f, store, maintenance, 2_000, 20_000, "m1"); // 10 × 2 s
    time.sleep(20_000);
    // A minute: ten times that is past the cap of ten intervals (50 s).
    assertNextCountComesAfter(f, store, maintenance, 60_000, 50_000, "m2");
  }

  /**
   * Where counting fails, the lag and the parked rows are read alone: the next count is spaced by
   * all the reads took, since each held task 0's thread.
   */
  @Test
  void aFailedCountIsSpacedByTheReadsThatFollowedItToo() {
    RuntimeFixture f = fixture(); // every 5 s
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "57014", "inspect");
    store.inspectsFail = true;
    int[] counts = {0};
    store.beforeInspect = () -> counts[0]++;
    store.beforeLag = () -> time.sleep(2_000); // the count itself fails at once
    Maintenance maintenance = new Maintenance(store, f.config, f.metrics, time, true, null);
    maintenance.runIfDue();
    store.beforeLag = null;
    assertEquals(1, counts[0]);

    time.sleep(19_999); // 10 × 2 s
    maintenance.runIfDue();
    assertEquals(1, counts[0], "not before ten times what the reads took");
    time.sleep(1);
    maintenance.runIfDue();
    assertEquals(2, counts[0]);
  }

  /**
   * Between counts spaced by a large backlog (ten times a 20 s count), the lag is read alone every
   * interval: lag-ms stayed at the last count's reading for minutes, exactly when the backlog was
   * largest, and the lag alert fired that much later.
   */
  @Test
  void betweenCountsSpacedByALargeBacklogTheLagIsReadAloneEveryInterval() {
    RuntimeFixture f = fixture(); // every 5 s
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    int[] lagReads = {0};
    store.beforeLag = () -> lagReads[0]++;
    RelayMetrics metrics = new RelayMetrics(time);
    Maintenance maintenance = new Maintenance(store, f.config, metrics, time, true, null);
    store.beforeInspect = () -> time.sleep(20_000); // the next count 200 s later
    maintenance.runIfDue();
    store.beforeInspect = null;
    int afterCount = lagReads[0];

    time.sleep(4_999);
    maintenance.runIfDue();
    assertEquals(afterCount, lagReads[0], "not before an interval");
    time.sleep(1);
    maintenance.runIfDue();
    assertEquals(afterCount + 1, lagReads[0]);
    assertFalse(Double.isNaN(metrics.lagGauge()));
    time.sleep(5_000);
    maintenance.runIfDue();
    assertEquals(afterCount + 2, lagReads[0]);
  }

  /**
   * A lag read between spaced counts that the statement timeout cancels is a database error (an
   * index probe should not take long), said once at WARN until a read succeeds: it was neither
   * counted nor said above DEBUG, so lag reads timing out for the minutes between counts showed
   * only as an ageing lag-ms.
   */
  @Test
  void aLagReadBetweenCountsThatTimesOutIsCountedAndSaidOnceUntilOneSucceeds() {
    RuntimeFixture f = fixture(); // every 5 s
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    RelayMetrics metrics = new RelayMetrics(time);
    Maintenance maintenance = new Maintenance(store, f.config, metrics, time, true, null);
    store.beforeInspect = () -> time.sleep(20_000); // the next count 200 s later
    maintenance.runIfDue();
    store.beforeInspect = null;
    long mark = LogCapture.get().mark();
    OutboxStoreException timedOut =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "57014", "lag");
    store.beforeLag =
        () -> {
          throw timedOut;
        };

    time.sleep(5_000);
    maintenance.runIfDue();
    time.sleep(5_000);
    maintenance.runIfDue();
    assertEquals(2, metrics.databaseErrors.get(), "each timed-out read");
    assertEquals(1, lagAloneWarnings(mark).size(), "said once while it lasts");

    store.beforeLag = null;
    time.sleep(5_000);
    maintenance.runIfDue();
    store.beforeLag =
        () -> {
          throw timedOut;
        };
    time.sleep(5_000);
    maintenance.runIfDue();
    assertEquals(3, metrics.databaseErrors.get());
    assertEquals(2, lagAloneWarnings(mark).size(), "said again after a read succeeded");

    // A count, which reads the lag with the backlog, ends the episode too.
    store.beforeInspect = () -> time.sleep(20_000); // the next count 200 s later again
    time.sleep(200_000);
    maintenance.runIfDue();
    store.beforeInspect = null;
    time.sleep(5_000);
    maintenance.runIfDue();
    assertEquals(3, lagAloneWarnings(mark).size(), "said again after a count");
  }

  private static List<LogCapture.Event> lagAloneWarnings(long mark) {
    return LogCapture.get()
        .matching(
            mark,
            e ->
                e.level().equals("WARN")
                    && e.message().contains("Reading the lag between backlog counts failed")
                    && e.message().contains("sqlState=57014"));
  }

  /** A count at its interval reads the lag with the backlog: no read of it alone in between. */
  @Test
  void countsAtTheirIntervalReadNoLagAlone() {
    RuntimeFixture f = fixture(); // every 5 s
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    int[] lagReads = {0};
    store.beforeLag = () -> lagReads[0]++;
    Maintenance maintenance = new Maintenance(store, f.config, f.metrics, time, true, null);
    for (int i = 0; i < 10; i++) {
      maintenance.runIfDue();
      time.sleep(1_000);
    }
    assertEquals(0, lagReads[0]);
  }

  /**
   * Runs a count that takes {@code tookMs}, adds a row, and checks that the next count comes {@code
   * spacingMs} later, not a millisecond earlier.
   */
  private void assertNextCountComesAfter(
      RuntimeFixture f,
      OutboxSourceTaskTest.FailingStore store,
      Maintenance maintenance,
      long tookMs,
      long spacingMs,
      String newRow) {
    store.beforeInspect = () -> time.sleep(tookMs);
    maintenance.runIfDue();
    store.beforeInspect = null;
    long before = f.metrics.backlog(MessageStatus.PENDING);
    f.add("eu", newRow, newRow);

    time.sleep(spacingMs - 1);
    maintenance.runIfDue();
    assertEquals(before, f.metrics.backlog(MessageStatus.PENDING), "not before " + spacingMs);
    time.sleep(1);
    maintenance.runIfDue();
    assertEquals(before + 1, f.metrics.backlog(MessageStatus.PENDING));
  }

  /**
   * A run deletes at most 10 batches; one that ended on a full batch is behind, and the next runs
   * after a short pause, not a whole interval later (which would cap retention below what a task
   * publishes).
   */
  @Test
  void retentionThatIsBehindRunsAgainSoonUntilItCatchesUp() {
    RuntimeFixture f = fixture(); // batches of 2, every 10 s
    for (int i = 0; i < 25; i++) {
      f.add("eu", "old" + i, "a" + i);
    }
    publishAll(f);
    f.clock.advance(Duration.ofSeconds(61));
    Maintenance maintenance = new Maintenance(f.store, f.config, f.metrics, time, true, null);

    time.sleep(10_000);
    maintenance.runIfDue();
    assertEquals(20, f.metrics.cleanedUp.get(), "10 batches of 2");
    time.sleep(Maintenance.CATCH_UP_PAUSE_MS - 1);
    maintenance.runIfDue();
    assertEquals(20, f.metrics.cleanedUp.get(), "not yet");
    time.sleep(1);
    maintenance.runIfDue();
    assertEquals(25, f.metrics.cleanedUp.get(), "caught up");

    f.add("eu", "next", "n");
    publishAll(f);
    f.clock.advance(Duration.ofSeconds(61));
    time.sleep(Maintenance.CATCH_UP_PAUSE_MS);
    maintenance.runIfDue();
    assertEquals(25, f.metrics.cleanedUp.get(), "caught up: the next run is an interval later");
    time.sleep(10_000 - Maintenance.CATCH_UP_PAUSE_MS);
    maintenance.runIfDue();
    assertEquals(26, f.metrics.cleanedUp.get());
  }

  /**
   * Retention that stays behind (every run ends on full batches) runs once a second while its
   * batches are quick, timed from its own start (the backlog read before it and the run's own time
   * made it one run every 1.5 s and more: about two thirds of the pace the docs promise), and says
   * so once it has lasted: a WARN, again while it lasts, and retention-behind-ms; an INFO and 0
   * once it catches up. The published log grew without end, and only a DEBUG line said so.
   */
  @Test
  void retentionThatStaysBehindKeepsItsPaceAndSaysSo() {
    RuntimeFixture f = fixture(); // batches of 2, every 10 s
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.retentionBatchesFull = true;
    store.beforeRetentionBatch = () -> time.sleep(50); // ten batches: half a second
    store.beforeInspect = () -> time.sleep(300); // the backlog read before it, every 5 s
    RelayMetrics metrics = new RelayMetrics(time); // on the clock the runs are timed by
    Maintenance maintenance = new Maintenance(store, f.config, metrics, time, true, null);
    long mark = LogCapture.get().mark();
    time.sleep(10_000);

    long start = time.hiResClockMs();
    while (time.hiResClockMs() - start < 60_000) {
      maintenance.runIfDue();
      time.sleep(10);
    }
    assertTrue(
        metrics.cleanedUp.get() >= 50 * 20,
        "a run of 10 batches of 2 a second: " + metrics.cleanedUp.get());
    assertTrue(metrics.retentionBehindMs() >= 59_000, "behind since its first run");
    assertEquals(List.of(), retentionBehindLines(mark, "WARN"), "not yet");

    while (time.hiResClockMs() - start < Maintenance.RETENTION_BEHIND_WARN_MS + 2_000) {
      maintenance.runIfDue();
      time.sleep(100);
    }
    assertEquals(1, retentionBehindLines(mark, "WARN").size());
    assertTrue(metrics.retentionBehindMs() >= Maintenance.RETENTION_BEHIND_WARN_MS);

    store.retentionBatchesFull = false; // nothing left to delete
    time.sleep(Maintenance.CATCH_UP_PAUSE_MS);
    maintenance.runIfDue();
    assertEquals(0, metrics.retentionBehindMs());
    assertEquals(1, retentionBehindLines(mark, "INFO").size(), "caught up");
  }

  private static List<LogCapture.Event> retentionBehindLines(long mark, String level) {
    return LogCapture.get()
        .matching(
            mark, e -> e.level().equals(level) && e.message().contains("reason=RETENTION_BEHIND"));
  }

  /**
   * A retention batch that met a lock another session holds (an open transaction on an entry of the
   * published log; the delete waits a second at most) says so: each run stops at the same oldest
   * entries until that transaction ends.
   */
  @Test
  void aRetentionBatchThatMetALockSaysSo() {
    RuntimeFixture f = fixture();
    f.add("eu", "old", "a");
    publishAll(f);
    f.clock.advance(Duration.ofSeconds(61));
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT,
            "DB_LOCK_NOT_AVAILABLE",
            "55P03",
            "delete-published");
    store.retentionBatchesBeforeFailing = 0;
    Maintenance maintenance = new Maintenance(store, f.config, f.metrics, time, true, null);
    long mark = LogCapture.get().mark();

    time.sleep(10_000);
    maintenance.runIfDue();

    assertEquals(
        1,
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.level().equals("WARN")
                        && e.message().contains("reason=DB_LOCK_NOT_AVAILABLE")
                        && e.message().contains("another session holds a lock on an entry"))
            .size());
    assertEquals(1, f.metrics.databaseErrors.get(), "the database-errors alert sees it");
  }

  /**
   * A retention batch that fails once the task is stopping (its statement timed out during the
   * stop, or the pool closed under it) is no failure to alert on: said at INFO, not counted.
   */
  @Test
  void aRetentionBatchEndedByTheStopIsNoFailure() {
    RuntimeFixture f = fixture();
    f.add("eu", "old", "a");
    publishAll(f);
    f.clock.advance(Duration.ofSeconds(61));
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "57014", "delete-published");
    store.retentionBatchesBeforeFailing = 0;
    Maintenance[] maintenance = {null};
    store.beforeRetentionBatch = () -> maintenance[0].stop(); // the task stops as the batch runs
    maintenance[0] = new Maintenance(store, f.config, f.metrics, time, true, null);
    long mark = LogCapture.get().mark();

    time.sleep(10_000);
    maintenance[0].runIfDue();

    assertEquals(
        List.of(),
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.level().equals("WARN")
                        && e.logger().endsWith(".Maintenance")
                        && e.thread().equals(Thread.currentThread().getName())));
    assertEquals(
        1,
        LogCapture.get()
            .matching(
                mark, e -> e.message().startsWith("Retention cleanup ended as the task stopped"))
            .size());
    assertEquals(0, f.metrics.databaseErrors.get());
  }

  /**
   * A retention batch that fails for the database's reasons ends the run without failing the poll
   * that ran it (it was reported as a failed claim), and the rows deleted before it are counted;
   * the next run is an interval later. One that retrying cannot fix fails the call.
   */
  @Test
  void aFailedRetentionBatchEndsTheRunAndCountsWhatItDeleted() {
    RuntimeFixture f = fixture(); // batches of 2, every 10 s
    for (int i = 0; i < 9; i++) {
      f.add("eu", "old" + i, "a" + i);
    }
    publishAll(f);
    f.clock.advance(Duration.ofSeconds(61));
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "57014", "delete-published");
    store.retentionBatchesBeforeFailing = 1;
    Maintenance maintenance = new Maintenance(store, f.config, f.metrics, time, true, null);

    time.sleep(10_000);
    maintenance.runIfDue();
    assertEquals(2, f.metrics.cleanedUp.get(), "the batch before the failure");
    assertEquals(1, f.metrics.databaseErrors.get(), "the database-errors alert sees it");
    time.sleep(Maintenance.CATCH_UP_PAUSE_MS);
    store.retentionBatchesBeforeFailing = Integer.MAX_VALUE;
    maintenance.runIfDue();
    assertEquals(2, f.metrics.cleanedUp.get(), "no catch-up pause after a failure: an interval");
    time.sleep(10_000 - Maintenance.CATCH_UP_PAUSE_MS);
    maintenance.runIfDue();
    assertEquals(9, f.metrics.cleanedUp.get());

    f.add("eu", "last", "l");
    publishAll(f);
    f.clock.advance(Duration.ofSeconds(61));
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.PERMISSION,
            "DB_PERMISSION_DENIED",
            "42501",
            "delete-published");
    store.retentionBatchesBeforeFailing = 0;
    time.sleep(10_000);
    assertThrows(OutboxStoreException.class, maintenance::runIfDue);
    assertEquals(9, f.metrics.cleanedUp.get());
  }

  @Test
  void retentionDeletesOnlyOwnPublishedRowsOlderThanTheCutoffInBatches() {
    RuntimeFixture f = fixture();
    for (int i = 0; i < 5; i++) {
      f.add("eu", "old" + i, "a" + i);
      f.add("us", "theirs" + i, "a" + i);
    }
    publishAll(f);
    for (ClaimedMessage m :
        f.store
            .claim(new ClaimRequest("us-task", Set.of("us"), 10, Duration.ofSeconds(30), 3, false))
            .claimed()) {
      f.store.markPublished(
          new PublishedAck(
              m.messageId(), m.seq(), m.lease(), new KafkaCoordinates("t", 0, m.seq())));
    }
    f.clock.advance(Duration.ofSeconds(61));
    f.add("eu", "recent", "r");
    publishAll(f);
    Maintenance maintenance = new Maintenance(f.store, f.config, f.metrics, time, true, null);

    time.sleep(10_000);
    maintenance.runIfDue();

    assertEquals(5, f.metrics.cleanedUp.get());
    for (int i = 0; i < 5; i++) {
      assertTrue(f.store.find("old" + i).isEmpty());
      assertEquals(
          MessageStatus.PUBLISHED,
          f.store.find("theirs" + i).orElseThrow().status(),
          "another instance key's row");
    }
    assertEquals(MessageStatus.PUBLISHED, f.store.find("recent").orElseThrow().status());
  }
}
