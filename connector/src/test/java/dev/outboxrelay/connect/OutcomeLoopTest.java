package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.SteppableTime;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

class OutcomeLoopTest {

  /** An outcome loop over {@code store} on {@code time}, its renewer and writer the fixture's. */
  private static OutcomeLoop loopOver(RuntimeFixture f, OutboxStore store, Time time) {
    return loopOver(f, store, time, null);
  }

  /**
   * As {@link #loopOver(RuntimeFixture, OutboxStore, Time)}, a failed write retried {@code backoff}
   * to twice that later; null: after the loop's own backoff.
   */
  private static OutcomeLoop loopOver(
      RuntimeFixture f, OutboxStore store, Time time, Duration backoff) {
    return loopOver(f, store, time, backoff, new StoreHealth(f.metrics, time));
  }

  /**
   * As {@link #loopOver(RuntimeFixture, OutboxStore, Time, Duration)}, reporting to {@code health}.
   */
  private static OutcomeLoop loopOver(
      RuntimeFixture f, OutboxStore store, Time time, Duration backoff, StoreHealth health) {
    LeaseRenewer renewer =
        new LeaseRenewer(store, f.ledger, f.metrics, f.settings, time, health, f.wake);
    OutcomeWriter writer =
        new OutcomeWriter(store, f.ledger, f.metrics, f.settings, time, f.wake, () -> {});
    if (backoff == null) {
      return new OutcomeLoop(
          writer, renewer, f.ledger, f.metrics, health, time, f.wake, () -> {}, "outcome-loop");
    }
    return new OutcomeLoop(
        writer,
        renewer,
        f.ledger,
        f.metrics,
        health,
        time,
        f.wake,
        () -> {},
        "outcome-loop",
        backoff,
        backoff.multipliedBy(2));
  }

  /**
   * Whatever ends the thread, its exit hook runs once and admission closes: here an Error thrown
   * while the stop settles what Kafka never acknowledged (in production an OutOfMemoryError, say; a
   * plain Error here, which the test JVM's fork does not take for its own running out). Skipped,
   * the store's pool was never closed, and submit() kept queueing outcomes nobody would write.
   */
  @Test
  void anErrorWhileSettlingAtStopStillClosesAdmissionAndRunsTheExitHookOnce() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    var claimed = f.claimIntoLedger().get(0); // never acknowledged: settled at the stop
    Time time = new MockTime();
    StoreHealth health = new StoreHealth(f.metrics, time);
    LeaseRenewer renewer =
        new LeaseRenewer(f.store, f.ledger, f.metrics, f.settings, time, health, f.wake);
    OutcomeWriter writer =
        new OutcomeWriter(
            f.store,
            f.ledger,
            f.metrics,
            f.settings,
            time,
            f.wake,
            () -> {
              throw new Error("while settling at stop");
            });
    AtomicInteger exits = new AtomicInteger();
    OutcomeLoop loop =
        new OutcomeLoop(
            writer,
            renewer,
            f.ledger,
            f.metrics,
            health,
            time,
            f.wake,
            exits::incrementAndGet,
            "outcome-loop-test");
    loop.start();

    loop.stop(Duration.ZERO, Duration.ZERO);

    // The Error ends the thread, as it should: not Awaitility's to report as this test's failure.
    await().dontCatchUncaughtExceptions().until(() -> !loop.isAlive());
    assertEquals(1, exits.get(), "the exit hook ran once");
    assertFalse(
        loop.submit(new PendingOutcome.Released("m1", claimed.lease())),
        "admission closed: a late outcome is refused, not queued for nobody");
  }

  /**
   * A stop's flush retries a write that is in its error backoff at once: a backoff of seconds (a
   * database blip) spent the whole flush without a write, and the write landed after stop()
   * returned, where exactly once a successor's recovery may have settled the rows already. The
   * backoff here is longer than any test: only the stop's wake-up retries the write.
   */
  @Test
  void aStopsFlushRetriesAWriteInItsBackoffAtOnce() throws Exception {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    var claimed = f.claimIntoLedger().get(0);
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failing = true;
    MockTime time = new MockTime();
    OutcomeLoop loop = loopOver(f, store, time, Duration.ofHours(1));
    loop.start();
    assertTrue(loop.submit(new PendingOutcome.Released("m1", claimed.lease())));
    await().until(() -> f.metrics.databaseErrors.get() == 1); // in its backoff of an hour or more

    store.failing = false; // the database is back
    Thread stopper = new Thread(() -> loop.stop(Duration.ofSeconds(2), Duration.ZERO));
    stopper.setDaemon(true);
    stopper.start();
    try {
      await().until(() -> f.ledger.isEmpty()); // written during the flush
      await().until(() -> !stopper.isAlive()); // and the flush ended with nothing left to write
      await().until(() -> !loop.isAlive());
      assertEquals(MessageStatus.PENDING, f.store.find("m1").orElseThrow().status());
      assertEquals(0, f.metrics.lateAcks.get());
    } finally {
      // Failed, the flush would wait for ever on this clock, the loop in its backoff: past both.
      time.sleep(Duration.ofHours(3).toMillis());
      stopper.join(10_000);
      await().until(() -> !loop.isAlive());
    }
  }

  /**
   * Closing, once no acknowledgement can come (Connect closed the producer), a write the database
   * refuses for good (here a privilege revoked) is not retried for the rest of the grace: the stop
   * ends the rows' leases at once. Retried, the leases were renewed, and their aggregates waited,
   * for the whole grace. A failure of no known class, which a retry may heal, is still retried
   * through the grace. The grace here is an hour of a clock that moves only when told.
   */
  @ParameterizedTest(name = "{0}")
  @EnumSource(
      value = OutboxStoreException.Kind.class,
      names = {"PERMISSION", "INTERNAL"})
  void aWriteRefusedForGoodIsNotRetriedOnceNoAcknowledgementCanCome(
      OutboxStoreException.Kind kind) {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    f.add("eu", "m2", "b");
    List<ClaimedMessage> both = f.claimIntoLedger();
    var claimed = both.get(0);
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    String sqlState = kind == OutboxStoreException.Kind.PERMISSION ? "42501" : "XX000";
    store.failure = new OutboxStoreException(kind, "DB_REFUSED", sqlState, "publish");
    store.publishesFail = true;
    store.parksFail = true;
    MockTime time = new MockTime();
    OutcomeLoop loop = loopOver(f, store, time);
    long mark = LogCapture.get().mark();
    // Both queued before the loop runs, so that they are written, and abandoned, as one batch:
    // submitted to a running loop, the second could come after the first was taken alone, and
    // was then reported as unwritten from the queue (seen under load).
    assertTrue(
        loop.submit(
            new PendingOutcome.Published(
                "m1", claimed.seq(), claimed.lease(), new KafkaCoordinates("t", 0, 7))));
    // A dead-lettered row's outcome: its copy is in Kafka too.
    assertTrue(
        loop.submit(
            new PendingOutcome.Failed(
                "m2",
                both.get(1).lease(),
                "PAYLOAD_TOO_LARGE",
                new KafkaCoordinates("dlq", 0, 3))));
    loop.start();
    try {
      await().until(() -> store.publishCalls.get() >= 1);

      loop.endGraceOnceProducerClosed(() -> true);
      loop.stop(Duration.ZERO, Duration.ofHours(1));

      if (kind == OutboxStoreException.Kind.INTERNAL) {
        int calls = store.publishCalls.get();
        await().until(() -> store.publishCalls.get() >= calls + 2); // retried on
        awaitWaitingOrEnded(loop);
        assertTrue(loop.isAlive());
        assertEquals(0, f.metrics.lateAcks.get());
        time.sleep(Duration.ofHours(2).toMillis()); // the grace ends
      }
      await().until(() -> !loop.isAlive());
      assertEquals(2, f.metrics.lateAcks.get(), "the outcomes abandoned, counted late");
      // Refused (a privilege) or not known to have been answered (no SQLState): said as such.
      String reason =
          kind == OutboxStoreException.Kind.PERMISSION
              ? "reason=OUTCOME_REFUSED_AT_STOP, error=DB_REFUSED"
              : "reason=DATABASE_UNAVAILABLE_AT_STOP, error=DB_REFUSED";
      assertEquals(
          1,
          LogCapture.get()
              .matching(
                  mark,
                  e ->
                      e.thread().equals("outcome-loop") // not an earlier test's task's
                          && e.message()
                              .startsWith("Outcome abandoned at stop: message_id=m1 (" + reason)
                          && e.message()
                              .endsWith(
                                  "; Kafka has its record, and a later claim sends the row again:"
                                      + " a duplicate)"))
              .size(),
          "at least once, said as the duplicate it is");
      assertEquals(
          1,
          LogCapture.get()
              .matching(
                  mark,
                  e ->
                      e.thread().equals("outcome-loop")
                          && e.message().startsWith("Outcome abandoned at stop: message_id=m2 (")
                          && e.message().endsWith(" a duplicate)"))
              .size(),
          "its dead-letter copy too");
      assertEquals(
          f.clock.now(),
          f.store.find("m1").orElseThrow().leaseExpiresAt(),
          "its lease ended by the stop");
      assertEquals(0, f.metrics.published.get());
    } finally {
      time.sleep(Duration.ofHours(2).toMillis()); // failed, the loop retries until the grace ends
      await().until(() -> !loop.isAlive());
    }
  }

  /**
   * One row's write that the database refuses for good (a constraint or a trigger of the table's
   * owner) names the row: in the failure the next poll fails the task with (the task's status is
   * where an operator looks), in the retry's log line, and at the stop, which says the database
   * refused it, not that it was unavailable.
   */
  @Test
  void aRowTheDatabaseRefusesIsNamedAndItsStopSaysRefusedNotUnavailable() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    var claimed = f.claimIntoLedger().get(0);
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.INVALID_DATA, "DB_INVALID_DATA", "23514", "mark-failed");
    store.failing = true;
    MockTime time = new MockTime();
    StoreHealth health = new StoreHealth(f.metrics, time);
    OutcomeLoop loop = loopOver(f, store, time, Duration.ofHours(1), health);
    long mark = LogCapture.get().mark();
    loop.start();
    try {
      assertTrue(
          loop.submit(new PendingOutcome.Failed("m1", claimed.lease(), "POISON_PILL", null)));
      await().until(() -> health.fatalStoreError() != null);
      assertEquals(
          "outbox-relay: outbox store mark-failed of message_id=m1 failed: DB_INVALID_DATA"
              + " (SQLState 23514)",
          TaskFailures.of(health.fatalStoreError()).getMessage());
      await()
          .until(
              () ->
                  !LogCapture.get()
                      .matching(
                          mark,
                          e ->
                              e.message()
                                  .startsWith(
                                      "Writing 1 outcomes failed (reason=DB_INVALID_DATA,"
                                          + " sqlState=23514, at message_id=m1); retrying"))
                      .isEmpty());

      loop.endGraceOnceProducerClosed(() -> true);
      loop.stop(Duration.ZERO, Duration.ofHours(1));
      await().until(() -> !loop.isAlive());

      List<String> atStop =
          LogCapture.get()
              .matching(
                  mark,
                  e ->
                      e.message().startsWith("Outcome abandoned at stop")
                          && e.thread().equals("outcome-loop")) // not an earlier test's task's
              .stream()
              .map(LogCapture.Event::message)
              .toList();
      assertEquals(
          List.of(
              "Outcome abandoned at stop: message_id=m1 (reason=OUTCOME_REFUSED_AT_STOP,"
                  + " error=DB_INVALID_DATA; a later claim or the next instance's recovery"
                  + " settles the row)"),
          atStop);
    } finally {
      time.sleep(Duration.ofHours(2).toMillis());
      await().until(() -> !loop.isAlive());
    }
  }

  /**
   * Writes failing in an outage are said at WARN once, their retries at DEBUG, and the write that
   * goes through says so at INFO: each retry logged a WARN, up to one a second for as long as the
   * outage lasted.
   */
  @Test
  void writesFailingInAnOutageAreSaidOnceAndTheirEndAtInfo() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    var claimed = f.claimIntoLedger().get(0);
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failing = true;
    MockTime time = new MockTime();
    OutcomeLoop loop = loopOver(f, store, time, Duration.ofMillis(1));
    long mark = LogCapture.get().mark();
    loop.start();
    try {
      assertTrue(
          loop.submit(
              new PendingOutcome.Published(
                  "m1", claimed.seq(), claimed.lease(), new KafkaCoordinates("t", 0, 7))));
      await().until(() -> f.metrics.databaseErrors.get() >= 3);
      store.failing = false;
      await().until(() -> f.store.find("m1").orElseThrow().status() == MessageStatus.PUBLISHED);
      List<LogCapture.Event> failed =
          LogCapture.get().matching(mark, e -> e.message().startsWith("Writing 1 outcomes failed"));
      assertTrue(failed.size() >= 3, failed::toString);
      assertEquals("WARN", failed.get(0).level());
      assertEquals(
          List.of("DEBUG"),
          failed.subList(1, failed.size()).stream()
              .map(LogCapture.Event::level)
              .distinct()
              .toList());
      assertEquals(
          List.of("Outcome writes succeed again after " + failed.size() + " failed attempts"),
          LogCapture.get()
              .matching(mark, e -> e.message().startsWith("Outcome writes succeed again"))
              .stream()
              .map(LogCapture.Event::message)
              .toList());
    } finally {
      loop.endGraceOnceProducerClosed(() -> true);
      loop.stop(Duration.ZERO, Duration.ZERO);
      await().until(() -> !loop.isAlive());
    }
  }

  /**
   * A write refused for good and in its backoff when no acknowledgement can come any more (a later
   * instance of the task started, or Connect closed the task's producer, which nothing signals and
   * the backoff checks at each slice) is abandoned then, not at its backoff's end: the stop ends
   * its rows' leases at once. The backoff and the grace here are longer than any test.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {OutcomeLoop.TASK_SUCCEEDED, OutcomeLoop.PRODUCER_CLOSED})
  void theEndOfTheAcknowledgementsEndsAWritesBackoff(String endedBy) {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    var claimed = f.claimIntoLedger().get(0);
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failure =
        new OutboxStoreException(OutboxStoreException.Kind.PERMISSION, "DB_REFUSED", "42501", "x");
    store.publishesFail = true;
    MockTime time = new MockTime();
    OutcomeLoop loop = loopOver(f, store, time, Duration.ofHours(1));
    AtomicBoolean producerClosed = new AtomicBoolean();
    loop.endGraceOnceProducerClosed(producerClosed::get);
    loop.start();
    try {
      // Stopped first: its wake-ups, unspent, end the first backoff only (one retry), and the
      // second waits its hour; an outcome submitted before could leave one of them for the next.
      loop.stop(Duration.ZERO, Duration.ofHours(1));
      assertTrue(
          loop.submit(
              new PendingOutcome.Published(
                  "m1", claimed.seq(), claimed.lease(), new KafkaCoordinates("t", 0, 7))));
      await().until(() -> store.publishCalls.get() >= 2);
      awaitWaitingOrEnded(loop); // not the moment after the write, when it is alive either way
      assertTrue(loop.isAlive(), "in its backoff, an acknowledgement may still come");
      assertEquals(0, f.metrics.lateAcks.get(), "the outcome still in hand, retried");

      if (endedBy.equals(OutcomeLoop.TASK_SUCCEEDED)) {
        loop.acknowledgementsEnded();
      } else {
        producerClosed.set(true);
      }

      await().until(() -> !loop.isAlive());
      assertEquals(1, f.metrics.lateAcks.get(), "the outcome abandoned, counted late");
      assertEquals(f.clock.now(), f.store.find("m1").orElseThrow().leaseExpiresAt());
    } finally {
      time.sleep(Duration.ofHours(3).toMillis());
      await().until(() -> !loop.isAlive());
    }
  }

  /**
   * The late-acknowledgement grace ends on the task's clock even while a write is in its backoff:
   * the backoff is waited in slices, each ending once that clock has passed the grace. Waited
   * whole, a clock moved past the grace (as a test moves one) did not end it.
   */
  @Test
  void aBackoffEndsOnceTheTaskClockPassesTheGrace() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    var claimed = f.claimIntoLedger().get(0);
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failing = true;
    MockTime time = new MockTime();
    OutcomeLoop loop = loopOver(f, store, time, Duration.ofHours(1));
    loop.start();
    try {
      loop.stop(Duration.ZERO, Duration.ofMinutes(30)); // first: see the test above
      assertTrue(loop.submit(new PendingOutcome.Released("m1", claimed.lease())));
      await().until(() -> f.metrics.databaseErrors.get() >= 2);
      awaitWaitingOrEnded(loop);
      assertTrue(loop.isAlive(), "within the grace");
      assertEquals(0, f.metrics.lateAcks.get(), "the outcome still in hand, retried");

      time.sleep(Duration.ofMinutes(31).toMillis());

      await().until(() -> !loop.isAlive());
      assertEquals(1, f.metrics.lateAcks.get(), "the outcome abandoned at the grace's end");
    } finally {
      time.sleep(Duration.ofHours(3).toMillis());
      await().until(() -> !loop.isAlive());
    }
  }

  /**
   * A wall clock stepped back while stop() waits for a write that keeps failing does not stretch
   * its flush: the stop returns once the flush timeout has passed on the monotonic clock. On the
   * wall clock it waited out the step too, past Connect's graceful shutdown timeout.
   */
  @Test
  void aWallClockSteppedBackDoesNotStretchTheFlushAtStop() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    var claimed = f.claimIntoLedger().get(0);
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.failing = true; // every write fails: the flush runs out
    SteppableTime time = new SteppableTime();
    OutcomeLoop loop = loopOver(f, store, time);
    loop.start();
    assertTrue(loop.submit(new PendingOutcome.Released("m1", claimed.lease())));
    await().until(() -> f.metrics.databaseErrors.get() > 0); // in hand, retried

    Thread stopper = new Thread(() -> loop.stop(Duration.ofSeconds(2), Duration.ZERO));
    stopper.setDaemon(true);
    stopper.start();
    // Waiting for the flush: its deadline taken.
    await().until(() -> stopper.getState() == Thread.State.TIMED_WAITING);
    time.stepWallClock(Duration.ofHours(-1));
    time.sleep(1999);
    assertTrue(stopper.isAlive(), "the flush timeout has not passed");
    time.sleep(1);

    await().until(() -> !stopper.isAlive());
    await().until(() -> !loop.isAlive());
    assertEquals(1, f.metrics.lateAcks.get(), "the outcome abandoned at the stop");
  }

  /**
   * A row another session holds locked (an operator's open transaction) holds up only its own
   * outcome: the publish that met the lock is sent again skipping it, a single write that met one
   * is set aside, and the loop goes on writing what comes next; the set-aside outcomes are tried
   * again alone until the lock is gone, each logged once. Before, the whole batch waited out the
   * statement timeout and was retried whole (the error backoff here is an hour: retried whole, m1
   * was never written), the task's in-flight budget filled and its claims stopped.
   */
  @Test
  void anOutcomeWhoseRowIsLockedIsSetAsideWhileTheOthersAreWritten() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    for (String id : List.of("m1", "m2", "m3", "m4", "m5")) {
      f.add("eu", id, "agg-" + id);
    }
    Map<String, ClaimedMessage> claimed = new HashMap<>();
    f.claimIntoLedger().forEach(m -> claimed.put(m.messageId(), m));
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.lockedRows = Set.of("m2", "m3");
    MockTime time = new MockTime();
    OutcomeLoop loop = loopOver(f, store, time, Duration.ofHours(1));
    long mark = LogCapture.get().mark();
    loop.start();
    try {
      assertTrue(loop.submit(published(claimed.get("m1"), 1)));
      assertTrue(loop.submit(published(claimed.get("m2"), 2)));
      assertTrue(loop.submit(released(claimed.get("m3"))));
      assertTrue(loop.submit(released(claimed.get("m4")))); // may be behind m3 in one batch

      // Each set-aside round comes after its wait on the task's clock, moved here.
      await().until(() -> advanced(time) && status(f, "m1") == MessageStatus.PUBLISHED);
      await().until(() -> advanced(time) && status(f, "m4") == MessageStatus.PENDING);
      for (int round = 0; round < 5; round++) { // rounds in which m2 and m3 stay locked
        int before = store.skippingLockedCalls.get();
        await().until(() -> advanced(time) && store.skippingLockedCalls.get() > before);
      }
      assertEquals(MessageStatus.IN_FLIGHT, status(f, "m2"));
      assertEquals(MessageStatus.IN_FLIGHT, status(f, "m3"));
      assertTrue(f.ledger.get("m2").isPresent() && f.ledger.get("m3").isPresent());
      assertEquals(0, f.metrics.claimLost.get());
      assertTrue(f.metrics.outcomesRowLocked.get() >= 2, "counted each time set aside");
      for (String id : List.of("m2", "m3")) {
        assertEquals(
            1,
            LogCapture.get()
                .matching(
                    mark,
                    e ->
                        e.message().contains("Outcome set aside")
                            && e.message().contains("reason=ROW_LOCKED")
                            && e.message().contains("message_id=" + id))
                .size(),
            "logged once while it stays aside: " + id);
      }
      assertEquals(
          0,
          LogCapture.get()
              .matching(
                  mark,
                  e ->
                      e.message().contains("Outcome set aside")
                          && e.message().contains("message_id=m4"))
              .size(),
          "m4, if behind m3 in its batch, was set aside untried: not said to be locked");

      // Not stalled: an outcome that comes now is written at once.
      assertTrue(loop.submit(published(claimed.get("m5"), 5)));
      await().until(() -> status(f, "m5") == MessageStatus.PUBLISHED);
      assertEquals(MessageStatus.IN_FLIGHT, status(f, "m2"));

      store.lockedRows = Set.of(); // the operator's transaction ends
      await().until(() -> advanced(time) && f.ledger.isEmpty());
      assertEquals(MessageStatus.PUBLISHED, status(f, "m2"));
      assertEquals(MessageStatus.PENDING, status(f, "m3"));
      assertEquals(3, f.metrics.published.get());
      assertEquals(2, f.metrics.released.get());
      assertEquals(0, f.metrics.claimLost.get());
    } finally {
      loop.stop(Duration.ZERO, Duration.ZERO); // the flush's deadline is the task clock's
      await().until(() -> !loop.isAlive());
    }
    assertEquals(0, f.metrics.lateAcks.get(), "every outcome written");
  }

  /**
   * A stop with an outcome still set aside for its row's lock, once no acknowledgement can come:
   * tried once more, then counted late, and the grace ends at once (waiting for the lock, the loop
   * held every other unresolved row's lease for the grace); and the stop's end of leases skips the
   * locked row instead of waiting for it (which held the end of every other lease past the
   * statement timeout), telling it from a lease no longer held.
   */
  @Test
  void aStopWithARowStillLockedEndsTheOtherLeasesAndSaysWhichWasLocked() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    f.add("eu", "m2", "b");
    Map<String, ClaimedMessage> claimed = new HashMap<>();
    f.claimIntoLedger().forEach(m -> claimed.put(m.messageId(), m));
    Instant m1Expiry = f.store.find("m1").orElseThrow().leaseExpiresAt();
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.lockedRows = Set.of("m1");
    MockTime time = new MockTime();
    OutcomeLoop loop = loopOver(f, store, time, Duration.ofHours(1));
    long mark = LogCapture.get().mark();
    loop.start();
    try {
      assertTrue(loop.submit(published(claimed.get("m1"), 1))); // m2: never acknowledged
      await().until(() -> f.metrics.outcomesRowLocked.get() >= 1);
      int before = store.skippingLockedCalls.get();
      loop.stop(Duration.ZERO, Duration.ofHours(1));
      loop.acknowledgementsEnded();
      await().until(() -> !loop.isAlive()); // the clock not moved: the grace ended early
      assertTrue(store.skippingLockedCalls.get() > before, "tried once more at the stop");
    } finally {
      time.sleep(Duration.ofHours(2).toMillis());
      await().until(() -> !loop.isAlive());
    }
    assertEquals(1, f.metrics.lateAcks.get(), "the locked row's outcome, never written");
    assertEquals(m1Expiry, f.store.find("m1").orElseThrow().leaseExpiresAt(), "not waited for");
    assertEquals(f.clock.now(), f.store.find("m2").orElseThrow().leaseExpiresAt(), "ended");
    assertEquals(0, f.metrics.leasesNotHeldAtStop.get(), "locked, not lost");
    assertEquals(
        1,
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.message().contains("Lease not ended at stop")
                        && e.message().contains("reason=ROW_LOCKED")
                        && e.message().contains("message_id=m1"))
            .size());
  }

  /**
   * The stop's flush tries what is set aside once, then waits no longer for it: it held every stop
   * with a row still locked for the whole flush timeout (2 s of Connect's 5). Here the task's clock
   * never moves, so the stop returns only if the flush stops waiting for the locked row.
   */
  @Test
  void theFlushWaitsNoLongerForARowStillLockedOnceItTriedIt() throws Exception {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    ClaimedMessage m1 = f.claimIntoLedger().get(0);
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.lockedRows = Set.of("m1");
    MockTime time = new MockTime();
    OutcomeLoop loop = loopOver(f, store, time, Duration.ofHours(1));
    loop.start();
    Thread stopping = new Thread(() -> loop.stop(Duration.ofHours(1), Duration.ofHours(1)));
    try {
      assertTrue(loop.submit(published(m1, 1)));
      await().until(() -> f.metrics.outcomesRowLocked.get() == 1); // set aside
      int before = store.skippingLockedCalls.get();

      stopping.start();

      await().until(() -> !stopping.isAlive());
      assertTrue(store.skippingLockedCalls.get() > before, "tried once at the flush");
    } finally {
      time.sleep(Duration.ofHours(3).toMillis());
      await().until(() -> !loop.isAlive() && !stopping.isAlive());
    }
  }

  /**
   * ... but for the other outcomes the flush still waits: a publish in hand when the stop comes is
   * written before the stop returns, a row set aside beside it or not.
   */
  @Test
  void theFlushStillWaitsForTheOtherOutcomesBesideALockedRow() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    f.add("eu", "m2", "b");
    Map<String, ClaimedMessage> claimed = new HashMap<>();
    f.claimIntoLedger().forEach(m -> claimed.put(m.messageId(), m));
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.lockedRows = Set.of("m1");
    MockTime time = new MockTime();
    OutcomeLoop loop = loopOver(f, store, time, Duration.ofHours(1));
    loop.start();
    CountDownLatch gate = new CountDownLatch(1);
    Thread stopping = new Thread(() -> loop.stop(Duration.ofHours(1), Duration.ofHours(1)));
    try {
      assertTrue(loop.submit(published(claimed.get("m1"), 1)));
      await().until(() -> f.metrics.outcomesRowLocked.get() == 1); // set aside
      store.publishGate = gate;
      int publishes = store.publishCalls.get();
      assertTrue(loop.submit(published(claimed.get("m2"), 2)));
      await().until(() -> store.publishCalls.get() > publishes); // m2's write, held

      stopping.start();
      await()
          .until(
              () ->
                  stopping.getState() == Thread.State.TIMED_WAITING
                      || stopping.getState() == Thread.State.TERMINATED);
      assertTrue(stopping.isAlive(), "waits for m2's write");
      gate.countDown();

      await().until(() -> !stopping.isAlive());
      assertEquals(MessageStatus.PUBLISHED, f.store.find("m2").orElseThrow().status());
    } finally {
      gate.countDown();
      time.sleep(Duration.ofHours(3).toMillis());
      await().until(() -> !loop.isAlive() && !stopping.isAlive());
    }
  }

  /**
   * The try once no acknowledgement can come, apart from the stop's flush: the lock goes after the
   * flush's try, and the task's clock never moves (no paced try comes), so only that try writes the
   * outcome, which would otherwise be counted late.
   */
  @Test
  void onceNoAcknowledgementCanComeWhatIsSetAsideIsTriedOnceMore() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    ClaimedMessage m1 = f.claimIntoLedger().get(0);
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.lockedRows = Set.of("m1");
    MockTime time = new MockTime();
    OutcomeLoop loop = loopOver(f, store, time, Duration.ofHours(1));
    loop.start();
    try {
      assertTrue(loop.submit(published(m1, 1)));
      await().until(() -> f.metrics.outcomesRowLocked.get() == 1); // set aside
      int first = store.skippingLockedCalls.get(); // the publish sent again, skipping m1
      loop.stop(Duration.ZERO, Duration.ofHours(1));
      await().until(() -> store.skippingLockedCalls.get() == first + 1); // the flush's try
      store.lockedRows = Set.of();

      loop.acknowledgementsEnded();

      await().until(() -> !loop.isAlive());
      assertEquals(first + 2, store.skippingLockedCalls.get(), "tried once more");
    } finally {
      loop.stop(Duration.ZERO, Duration.ZERO);
      await().until(() -> !loop.isAlive());
    }
    assertEquals(MessageStatus.PUBLISHED, status(f, "m1"));
    assertEquals(0, f.metrics.lateAcks.get());
  }

  /** Moves {@code time} on by a second; true, for use in a condition. */
  private static boolean advanced(MockTime time) {
    time.sleep(1000);
    return true;
  }

  private static MessageStatus status(RuntimeFixture f, String messageId) {
    return f.store.find(messageId).orElseThrow().status();
  }

  private static PendingOutcome.Published published(ClaimedMessage m, long offset) {
    return new PendingOutcome.Published(
        m.messageId(), m.seq(), m.lease(), new KafkaCoordinates("t", 0, offset));
  }

  private static PendingOutcome.Released released(ClaimedMessage m) {
    return new PendingOutcome.Released(m.messageId(), m.lease());
  }

  /**
   * Until the loop waits in a write's backoff or has ended: then whether it is alive says which
   * (idle, it waits too, but not in a backoff).
   */
  private static void awaitWaitingOrEnded(OutcomeLoop loop) {
    await().until(() -> loop.inBackoff() || !loop.isAlive());
  }
}
