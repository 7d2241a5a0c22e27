package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.SteppableTime;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.function.LongConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.connect.runtime.StandInPausedTask;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LeaseRenewerTest {
  private final RuntimeFixture f =
      new RuntimeFixture(Map.of("lease.duration.ms", "8000", "lease.renewal.interval.ms", "2000"));
  private final SteppableTime time = new SteppableTime();
  private final OutboxSourceTaskTest.FailingStore store =
      new OutboxSourceTaskTest.FailingStore(f.store);
  private final StoreHealth health = new StoreHealth(f.metrics, time);
  private final LeaseRenewer renewer =
      new LeaseRenewer(store, f.ledger, f.metrics, f.settings, time, health, f.wake);

  private Instant expiry(String id) {
    return f.store.find(id).orElseThrow().leaseExpiresAt();
  }

  @Test
  void renewsHeldLeasesOnlyWhenDue() {
    f.add("eu", "m1", "a");
    f.claimIntoLedger();
    Instant claimed = expiry("m1");
    f.clock.advance(Duration.ofSeconds(1));

    renewer.renewIfDue();
    assertEquals(claimed, expiry("m1"), "not due yet");
    assertEquals(2000, renewer.millisUntilDue());

    time.sleep(2000);
    renewer.renewIfDue();
    assertEquals(claimed.plusSeconds(1), expiry("m1"), "a lease from the store's now");
    assertEquals(0, f.metrics.claimLost.get());
  }

  /**
   * A wall clock stepped back (an NTP correction, a VM resumed) does not hold the renewals back: on
   * it, none ran until it had caught up again, and with a step longer than the lease less the
   * renewal interval every lease of the worker ran out, its rows reclaimed and sent again by other
   * tasks.
   */
  @Test
  void aWallClockSteppedBackDoesNotHoldTheRenewalsBack() {
    f.add("eu", "m1", "a");
    f.claimIntoLedger();
    Instant claimed = expiry("m1");
    f.clock.advance(Duration.ofSeconds(2));
    time.stepWallClock(Duration.ofHours(-1));
    time.sleep(2000); // a renewal interval, by the monotonic clock

    renewer.renewIfDue();
    assertEquals(1, store.renewCalls.get(), "renewed when due");
    assertEquals(claimed.plusSeconds(2), expiry("m1"));
    assertEquals(2000, renewer.millisUntilDue(), "the next one an interval later");
  }

  /** Nor does one stepped forward make a task that polls look hung, its leases left to run out. */
  @Test
  void aWallClockSteppedForwardDoesNotMakeAPollingTaskLookHung() {
    f.add("eu", "m1", "a");
    f.claimIntoLedger();
    Instant claimed = expiry("m1");
    renewer.taskPolled();
    renewer.pollReturned();
    f.clock.advance(Duration.ofSeconds(2));
    time.stepWallClock(Duration.ofHours(1));
    time.sleep(2000);

    renewer.renewIfDue();
    assertEquals(claimed.plusSeconds(2), expiry("m1"), "renewed: the task polled 2 s ago");
  }

  @Test
  void aTaskThatStoppedPollingIsNotKeptAlive() {
    f.add("eu", "m1", "a");
    f.claimIntoLedger();
    Instant claimed = expiry("m1");
    f.clock.advance(Duration.ofSeconds(1));
    time.sleep(4001); // over half a lease without a poll
    renewer.renewIfDue();
    assertEquals(claimed, expiry("m1"));

    renewer.taskPolled();
    time.sleep(2000);
    renewer.renewIfDue();
    assertEquals(claimed.plusSeconds(1), expiry("m1"));
  }

  /**
   * Connect's task thread blocks in a send while the producer's buffer is full (large records, a
   * slow broker), away from poll: while acknowledgements arrive, the producer is draining that
   * buffer and the task is alive, so its leases are renewed.
   */
  @Test
  void acknowledgementsKeepATaskBlockedInASendAlive() {
    f.add("eu", "m1", "a");
    f.claimIntoLedger();
    Instant claimed = expiry("m1");
    f.clock.advance(Duration.ofSeconds(1));
    time.sleep(3000);
    renewer.acknowledged(); // another record of the task
    time.sleep(1001); // over half a lease since the last poll, not since the acknowledgement
    renewer.renewIfDue();
    assertEquals(claimed.plusSeconds(1), expiry("m1"));

    f.clock.advance(Duration.ofSeconds(1));
    time.sleep(4001); // over half a lease since both
    renewer.renewIfDue();
    assertEquals(claimed.plusSeconds(1), expiry("m1"), "neither polls nor acknowledgements");
  }

  /**
   * In a broker outage Connect's task thread waits in the producer (for the metadata of a topic it
   * has no metadata for, without end): it is waiting on Kafka, not hung, and its leases are kept,
   * said once at WARN. Handed to another task, which would wait the same, the rows were sent twice
   * once the broker was back. Once it no longer waits there (here: its send ended), the rule for a
   * thread away from poll applies again after half a lease.
   */
  @Test
  void aTaskThreadWaitingOnKafkaInTheProducerIsKeptAlive() throws Exception {
    f.add("eu", "m1", "a");
    f.claimIntoLedger();
    Instant claimed = expiry("m1");
    f.clock.advance(Duration.ofSeconds(1));
    long mark = LogCapture.get().mark();
    Thread task;
    try (KafkaProducer<byte[], byte[]> producer = producerWithoutBroker()) {
      task = sendingWithoutBroker(producer);

      time.sleep(4001); // over half a lease without a poll or an acknowledgement
      renewer.renewIfDue();
      assertEquals(claimed.plusSeconds(1), expiry("m1"), "kept while it waits on Kafka");
      assertEquals(1, f.metrics.waitingOnKafka.get());
      f.clock.advance(Duration.ofSeconds(1));
      time.sleep(2000);
      renewer.renewIfDue();
      assertEquals(claimed.plusSeconds(2), expiry("m1"));
      assertEquals(
          1,
          LogCapture.get()
              .matching(
                  mark, e -> onTestThread(e) && e.message().contains("reason=WAITING_ON_KAFKA"))
              .size(),
          "said once");
      producer.close(Duration.ZERO);
    }
    task.join(10_000);

    time.sleep(4001); // over half a lease since it was last seen waiting on Kafka
    f.clock.advance(Duration.ofSeconds(1));
    renewer.renewIfDue();
    assertEquals(claimed.plusSeconds(2), expiry("m1"), "no longer kept");
    assertEquals(0, f.metrics.waitingOnKafka.get());
    renewer.taskPolled();
    time.sleep(2000);
    renewer.renewIfDue();
    assertEquals(0, f.metrics.waitingOnKafka.get(), "polling again");
  }

  /**
   * Acknowledgements spaced over half a lease apart while the task thread stays in the producer (a
   * full buffer draining slowly) do not end its wait on Kafka: it was said again, and the gauge
   * flipped to 0 and back, after each.
   */
  @Test
  void anAcknowledgementDoesNotEndAWaitOnKafka() throws Exception {
    long mark = LogCapture.get().mark();
    whileWaitingOnKafka(
        token -> {
          Instant held = expiry("m1");
          renewer.acknowledged();
          f.clock.advance(Duration.ofSeconds(1));
          time.sleep(2000); // a renewal due, the acknowledgement within half a lease
          renewer.renewIfDue();
          assertEquals(held.plusSeconds(1), expiry("m1"), "its leases kept");
          assertEquals(1, f.metrics.waitingOnKafka.get(), "still in the producer");
          time.sleep(2001); // over half a lease since the acknowledgement, still in the producer
          renewer.renewIfDue();
          assertEquals(1, f.metrics.waitingOnKafka.get());
        });
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> onTestThread(e) && e.message().contains("reason=WAITING_ON_KAFKA"))
            .size(),
        "said once");
  }

  /** But an acknowledgement once the thread has left the producer ends the wait, said once. */
  @Test
  void anAcknowledgementAfterTheThreadLeftTheProducerEndsTheWait() throws Exception {
    long mark = LogCapture.get().mark();
    whileWaitingOnKafka(token -> {}); // returns once the send ended
    renewer.acknowledged();
    time.sleep(2000);
    renewer.renewIfDue();
    assertEquals(0, f.metrics.waitingOnKafka.get());
    renewer.taskPolled();
    time.sleep(2000);
    renewer.renewIfDue();
    assertEquals(
        List.of("INFO"),
        LogCapture.get()
            .matching(
                mark, e -> onTestThread(e) && e.message().startsWith("Task thread no longer waits"))
            .stream()
            .map(LogCapture.Event::level)
            .toList());
  }

  /**
   * A wait on Kafka that ends with the task holding nothing (its last record sent and its outcome
   * written, a quiet connector) is over: the gauge stayed at 1, firing its alert until rows were
   * held again, and the next wait went unsaid.
   */
  @Test
  void aWaitOnKafkaEndsWhenNothingIsHeldAnyMore() throws Exception {
    long token = whileWaitingOnKafka(lease -> {});

    f.ledger.resolve("m1", token); // sent, acknowledged, its outcome written
    renewer.taskPolled();
    time.sleep(2000);
    renewer.renewIfDue();
    assertEquals(0, f.metrics.waitingOnKafka.get(), "nothing held, nothing waits on Kafka");
  }

  /**
   * But a thread that still waits on Kafka with its leases all lost meanwhile (the database back
   * before Kafka, other tasks took its rows) still shows: nothing would set the gauge again.
   */
  @Test
  void aWaitOnKafkaWhoseLeasesWereAllLostStillShows() throws Exception {
    whileWaitingOnKafka(
        token -> {
          f.ledger.markLost("m1", token); // found lost by a renewal: no longer held
          time.sleep(2000);
          renewer.renewIfDue();
          assertEquals(1, f.metrics.waitingOnKafka.get(), "it still waits on Kafka");
        });
    time.sleep(4001); // half a lease after its last wait: not a back-off between two sends
    renewer.renewIfDue();
    assertEquals(0, f.metrics.waitingOnKafka.get(), "no longer");
  }

  /**
   * A wait on Kafka that begins with records awaited but no lease held (exactly once, a parked
   * row's dead letter to a topic without metadata; here a claim lost before the wait) is said too:
   * with nothing held, nothing set the gauge.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"a lost claim", "a parked row's dead letter"})
  void aWaitOnKafkaWithRecordsAwaitedButNoLeaseHeldShows(String awaited) throws Exception {
    f.add("eu", "m1", "a");
    ClaimedMessage row = f.claimIntoLedger().get(0);
    if (awaited.equals("a lost claim")) {
      f.ledger.markLost("m1", row.lease().token()); // no lease held; its record still awaited
    } else {
      f.ledger.resolve("m1", row.lease().token()); // exactly once: parked, its lease gone,
      f.ledger.addParked(row); // its dead-letter record handed to Connect
    }
    try (KafkaProducer<byte[], byte[]> producer = producerWithoutBroker()) {
      Thread task = sendingWithoutBroker(producer);
      time.sleep(4001); // over half a lease without a poll or an acknowledgement
      renewer.renewIfDue();
      assertEquals(1, f.metrics.waitingOnKafka.get(), "it waits on Kafka with a record awaited");
      producer.close(Duration.ZERO);
      task.join(10_000);
    }
    time.sleep(2000);
    renewer.renewIfDue();
    assertEquals(1, f.metrics.waitingOnKafka.get(), "between two sends, as with leases");
    time.sleep(2001);
    renewer.renewIfDue();
    assertEquals(0, f.metrics.waitingOnKafka.get(), "no longer");
  }

  /**
   * m1 held while the task thread waits on Kafka for over half a lease (said by the gauge), then
   * {@code meanwhile} with m1's lease token, before the wait ends. Returns that token.
   */
  private long whileWaitingOnKafka(LongConsumer meanwhile) throws Exception {
    f.add("eu", "m1", "a");
    long token = f.claimIntoLedger().get(0).lease().token();
    try (KafkaProducer<byte[], byte[]> producer = producerWithoutBroker()) {
      Thread task = sendingWithoutBroker(producer);
      time.sleep(4001); // over half a lease without a poll or an acknowledgement
      renewer.renewIfDue();
      assertEquals(1, f.metrics.waitingOnKafka.get());
      meanwhile.accept(token);
      producer.close(Duration.ZERO);
      task.join(10_000);
    }
    return token;
  }

  /** Nor is a stall whose leases all settled: the next one, with rows held again, is said too. */
  @Test
  void aStallIsSaidAgainAfterOneWhoseLeasesAllSettled() {
    long mark = LogCapture.get().mark();
    f.add("eu", "m1", "a");
    long token = f.claimIntoLedger().get(0).lease().token();
    time.sleep(4001); // over half a lease without a poll or an acknowledgement
    renewer.renewIfDue();
    assertEquals(1, f.metrics.taskUnresponsive.get(), "renewals withheld");
    f.ledger.resolve("m1", token); // its record acknowledged after all
    time.sleep(2000);
    renewer.renewIfDue();
    assertEquals(0, f.metrics.taskUnresponsive.get(), "nothing left to withhold");

    renewer.taskPolled();
    renewer.pollReturned();
    f.add("eu", "m2", "b");
    f.claimIntoLedger();
    time.sleep(4001);
    renewer.renewIfDue();
    assertEquals(
        2,
        LogCapture.get()
            .matching(
                mark, e -> onTestThread(e) && e.message().contains("reason=TASK_UNRESPONSIVE"))
            .size());
    assertEquals(1, f.metrics.taskUnresponsive.get());
    renewer.taskPolled(); // the thread back
    time.sleep(1001); // a withheld renewal looks again a second later
    renewer.renewIfDue();
    assertEquals(0, f.metrics.taskUnresponsive.get(), "renewing again");
  }

  /** A producer whose sends wait on Kafka for ever, as Connect's do in a broker outage. */
  private static KafkaProducer<byte[], byte[]> producerWithoutBroker() {
    Map<String, Object> config = new HashMap<>();
    config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1"); // no broker answers
    config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.MAX_VALUE); // as Connect sets it
    config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    return new KafkaProducer<>(config);
  }

  /** A task thread that polled and now waits in a send until {@code producer} is closed. */
  private Thread sendingWithoutBroker(KafkaProducer<byte[], byte[]> producer) {
    Thread task =
        new Thread(
            () -> {
              renewer.taskPolled();
              renewer.pollReturned(); // Connect sends the poll's records
              try {
                producer.send(new ProducerRecord<>("orders", new byte[] {1}));
              } catch (RuntimeException e) { // NOPMD: the producer is closed under it
              }
            },
            "task-thread");
    task.start();
    await().until(() -> ProducerWait.isWaitingOnKafka(task));
    return task;
  }

  /**
   * A task thread waiting in Connect's pause is not hung: every task of the connector is paused,
   * and its leases are kept (said once at INFO), so that at the resume its records still waiting in
   * Connect go out under them. Read as hung, they ran out, and each task's first claim at the
   * resume took the rows another had in flight, which both then sent.
   */
  @Test
  void aTaskThreadPausedByConnectKeepsItsLeases() throws Exception {
    f.add("eu", "m1", "a");
    f.claimIntoLedger();
    Instant claimed = expiry("m1");
    long mark = LogCapture.get().mark();
    CountDownLatch resumed = new CountDownLatch(1);
    Thread task =
        new Thread(
            () -> {
              renewer.taskPolled();
              renewer.pollReturned();
              try {
                StandInPausedTask.awaitUnpause(resumed);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            },
            "task-thread");
    task.start();
    try {
      await().until(() -> ConnectPause.isPaused(task));
      for (int i = 1; i <= 3; i++) {
        f.clock.advance(Duration.ofSeconds(1));
        time.sleep(4001); // over half a lease without a poll or an acknowledgement
        renewer.renewIfDue();
        assertEquals(claimed.plusSeconds(i), expiry("m1"), "kept while paused");
      }
      assertEquals(0, f.metrics.taskUnresponsive.get());
      assertEquals(
          List.of("INFO"),
          LogCapture.get()
              .matching(
                  mark, e -> onTestThread(e) && e.message().startsWith("Task paused by Connect"))
              .stream()
              .map(LogCapture.Event::level)
              .toList());
    } finally {
      resumed.countDown();
      task.join(10_000);
    }
    f.clock.advance(Duration.ofSeconds(1));
    time.sleep(4001); // no longer paused, nor polling: a stall again
    renewer.renewIfDue();
    assertEquals(claimed.plusSeconds(3), expiry("m1"), "not renewed");
    assertEquals(1, f.metrics.taskUnresponsive.get());
  }

  /** Once a stalled task thread polls again its leases are renewed within a second. */
  @Test
  void aStalledTaskIsRenewedSoonAfterItPollsAgain() {
    f.add("eu", "m1", "a");
    f.claimIntoLedger();
    Instant claimed = expiry("m1");
    time.sleep(4001);
    renewer.renewIfDue();
    assertEquals(claimed, expiry("m1"));
    assertEquals(1000, renewer.millisUntilDue(), "looked at again soon, not an interval later");

    renewer.taskPolled();
    f.clock.advance(Duration.ofSeconds(1));
    time.sleep(1000);
    renewer.renewIfDue();
    assertEquals(claimed.plusSeconds(1), expiry("m1"));
  }

  /**
   * A poll in progress is the relay's own work (a slow claim, task 0's maintenance): however long
   * it takes, the leases are renewed. Only a task thread away from poll is not kept alive.
   */
  @Test
  void aLongPollInProgressKeepsTheLeasesAlive() {
    f.add("eu", "m1", "a");
    f.claimIntoLedger();
    Instant claimed = expiry("m1");
    renewer.taskPolled(); // and the poll takes long
    f.clock.advance(Duration.ofSeconds(1));
    time.sleep(4001); // over half a lease
    renewer.renewIfDue();
    assertEquals(claimed.plusSeconds(1), expiry("m1"), "renewed during the poll");

    renewer.pollReturned();
    f.clock.advance(Duration.ofSeconds(1));
    time.sleep(4001); // over half a lease outside poll
    renewer.renewIfDue();
    assertEquals(claimed.plusSeconds(1), expiry("m1"), "not renewed: the thread is elsewhere");
  }

  /**
   * Renewals failing through an outage are said once at WARN, and their end once at INFO: tried
   * again every second, each failure's WARN filled the log (database-errors-total counts each).
   */
  @Test
  void renewalsFailingThroughAnOutageAreSaidOnceAndTheirEndToo() {
    f.add("eu", "m1", "a");
    f.claimIntoLedger();
    time.sleep(2000);
    store.failing = true;
    long mark = LogCapture.get().mark();
    for (int i = 0; i < 5; i++) {
      renewer.renewIfDue();
      time.sleep(1000);
      renewer.taskPolled();
    }
    store.failing = false;
    renewer.renewIfDue();

    assertEquals(5, f.metrics.databaseErrors.get());
    List<LogCapture.Event> warned =
        LogCapture.get()
            .matching(
                mark, e -> e.level().equals("WARN") && e.message().startsWith("Lease renewal"));
    assertEquals(1, warned.size(), warned::toString);
    List<LogCapture.Event> ended =
        LogCapture.get()
            .matching(
                mark,
                e ->
                    onTestThread(e)
                        && e.message().startsWith("Lease renewal succeeded again after 5"));
    assertEquals(1, ended.size());
  }

  /** Failed renewals whose records then settled end without a renewal: not said to succeed. */
  @Test
  void failedRenewalsWhoseRecordsSettledAreNotSaidToHaveSucceeded() {
    f.add("eu", "m1", "a");
    long token = f.claimIntoLedger().get(0).lease().token();
    time.sleep(2000);
    store.failing = true;
    renewer.renewIfDue();
    store.failing = false;
    f.ledger.resolve("m1", token); // acknowledged and written meanwhile
    long mark = LogCapture.get().mark();
    time.sleep(1000);
    renewer.taskPolled();

    renewer.renewIfDue();

    assertTrue(renewer.isHealthy());
    assertEquals(
        List.of(),
        LogCapture.get()
            .matching(mark, e -> onTestThread(e) && e.message().contains("succeeded again")));
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> onTestThread(e) && e.message().startsWith("No lease left"))
            .size());
  }

  @Test
  void aFailedRenewalPausesClaimingUntilOneSucceeds() {
    f.add("eu", "m1", "a");
    f.claimIntoLedger();
    time.sleep(2000);
    store.failing = true;
    renewer.renewIfDue();
    assertFalse(renewer.isHealthy());
    assertEquals(1, f.metrics.databaseErrors.get());
    assertEquals(time.hiResClockMs(), health.lastDatabaseErrorMs());
    assertEquals(1000, renewer.millisUntilDue(), "retried soon, not a whole interval later");

    store.failing = false;
    time.sleep(1000);
    renewer.taskPolled();
    f.wake.await(Duration.ZERO); // whatever woke the poll before
    renewer.renewIfDue();
    assertTrue(renewer.isHealthy());
    assertTrue(f.wake.isSignalled(), "a poll waiting since the failure claims now");
  }

  /**
   * Exactly once, a stopping task leaves its unacknowledged rows to the next instance's recovery,
   * which bumps their tokens: renewing them would report each as a lost claim, a false alarm on the
   * zombie signal. At least once, the leases are renewed through the stop's grace.
   */
  @Test
  void aStoppingTaskRenewsOnlyAtLeastOnce() {
    RuntimeFixture eos =
        new RuntimeFixture(
            Map.of("delivery.guarantee", "exactly-once", "exactly.once.support", "required"));
    LeaseRenewer eosRenewer =
        new LeaseRenewer(
            eos.store,
            eos.ledger,
            eos.metrics,
            eos.settings,
            time,
            new StoreHealth(eos.metrics, time),
            eos.wake);
    eos.add("eu", "m1", "a");
    eos.claimIntoLedger();
    eos.takeOverAfterExpiry("recovered"); // as the next instance's recovery would
    eosRenewer.taskStopping();
    eosRenewer.taskPolled();
    time.sleep(60_000);
    eosRenewer.renewIfDue();
    assertEquals(0, eos.metrics.claimLost.get(), "no false alarm");

    f.add("eu", "m1", "a");
    f.claimIntoLedger();
    Instant claimed = expiry("m1");
    renewer.taskStopping(); // and it polls no more
    f.clock.advance(Duration.ofSeconds(1));
    time.sleep(4001); // over half a lease without a poll or an acknowledgement
    renewer.renewIfDue();
    assertEquals(claimed.plusSeconds(1), expiry("m1"), "at least once: renewed while stopping");
  }

  /**
   * A lease found taken over is reported once and no longer renewed, but its record, which may
   * still wait in the producer, keeps its place in the in-flight budget until its outcome comes:
   * freed at once, it let the task claim a full budget beside records still buffered, and claim an
   * abandoned row "alone" beside them.
   */
  @Test
  void aLeaseFoundTakenOverIsALostClaimReportedOnceAndCountedUntilItsRecordIsSettled() {
    f.add("eu", "m1", "a");
    ClaimedMessage mine = f.claimIntoLedger().get(0);
    long bytes = f.ledger.bytes();
    f.takeOverAfterExpiry("other");
    time.sleep(2000);
    renewer.taskPolled();
    long mark = LogCapture.get().mark();

    renewer.renewIfDue();

    assertEquals(1, f.metrics.claimLost.get());
    assertEquals(1, f.metrics.leaseRenewalsLost.get());
    assertEquals(List.of(), f.ledger.heldLeases(), "not renewed again");
    assertFalse(f.ledger.isEmpty(), "its record is still awaited");
    assertEquals(1, f.ledger.size());
    assertEquals(bytes, f.ledger.bytes());
    time.sleep(2000);
    renewer.renewIfDue();
    assertEquals(1, f.metrics.claimLost.get(), "reported once");
    List<LogCapture.Event> said =
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.message().startsWith("Claim lost")
                        && e.message().contains("message_id=m1")
                        && e.message().contains("reason=LEASE_TAKEN_OVER")
                        && e.thread().equals(Thread.currentThread().getName()));
    assertEquals(1, said.size(), said::toString);

    assertEquals(mine.lease(), f.ledger.takeLost("m1", mine.lease().token()).orElseThrow().lease());
    assertTrue(f.ledger.isEmpty(), "settled by its record's outcome");
    assertEquals(0, f.ledger.bytes());
    assertEquals("other", f.store.find("m1").orElseThrow().leaseOwner());
  }

  /**
   * A row another session holds locked is skipped by the renewal, not taken for a lost claim (its
   * record would lose its outcome): counted at each renewal that skips it, logged once for as long
   * as it stays locked, and renewed once the lock is gone; the other leases are renewed all along.
   */
  @Test
  void aLeaseWhoseRowIsLockedIsSkippedNotLost() {
    f.add("eu", "m1", "a");
    f.add("eu", "m2", "b");
    f.claimIntoLedger();
    Instant m2Claimed = expiry("m2");
    store.lockedRows = Set.of("m2");
    long mark = LogCapture.get().mark();
    for (int renewal = 0; renewal < 2; renewal++) {
      f.clock.advance(Duration.ofSeconds(1));
      time.sleep(2000);
      renewer.taskPolled();
      renewer.renewIfDue();
      assertEquals(f.clock.now().plusSeconds(8), expiry("m1"), "the other lease is renewed");
    }

    assertEquals(m2Claimed, expiry("m2"), "skipped: its lease runs on");
    assertEquals(2, f.metrics.leaseRenewalsLocked.get(), "counted at each renewal");
    assertEquals(0, f.metrics.claimLost.get());
    assertEquals(2, f.ledger.heldLeases().size(), "still held, still renewed");
    List<LogCapture.Event> said =
        LogCapture.get()
            .matching(mark, e -> onTestThread(e) && e.message().contains("reason=ROW_LOCKED"));
    assertEquals(1, said.size(), "said once while it stays locked");
    assertTrue(said.get(0).message().contains("message_id=m2 instance_key=eu"), said.toString());

    store.lockedRows = Set.of();
    time.sleep(2000);
    renewer.taskPolled();
    renewer.renewIfDue();
    assertEquals(f.clock.now().plusSeconds(8), expiry("m2"), "renewed once the lock is gone");
    store.lockedRows = Set.of("m2");
    time.sleep(2000);
    renewer.taskPolled();
    renewer.renewIfDue();
    assertEquals(
        2,
        LogCapture.get()
            .matching(mark, e -> onTestThread(e) && e.message().contains("reason=ROW_LOCKED"))
            .size(),
        "locked again: said again");
  }

  /** A line of this test's renewer, which runs on the test thread: not another test's task's. */
  private static boolean onTestThread(LogCapture.Event e) {
    return e.thread().equals(Thread.currentThread().getName());
  }
}
