package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.connect.PendingOutcome.Failed;
import dev.outboxrelay.connect.PendingOutcome.Published;
import dev.outboxrelay.connect.PendingOutcome.Released;
import dev.outboxrelay.connect.PendingOutcome.Unconfirmed;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.testing.SteppableTime;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.Stream;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.utils.MockTime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class OutcomeWriterTest {

  private static OutcomeWriter writer(RuntimeFixture f) {
    return new OutcomeWriter(
        f.store, f.ledger, f.metrics, f.settings, new MockTime(), f.wake, () -> {});
  }

  private static MessageStatus status(RuntimeFixture f, String id) {
    return f.store.find(id).orElseThrow().status();
  }

  private static Published published(ClaimedMessage m, long offset) {
    return new Published(m.messageId(), m.seq(), m.lease(), new KafkaCoordinates("t", 0, offset));
  }

  private static double latencyMax(Metrics registry) {
    return registry.metrics().entrySet().stream()
        .filter(e -> e.getKey().name().equals("outcome-write-latency-max-ms"))
        .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue())
        .findFirst()
        .orElseThrow();
  }

  @Test
  void writesEachKindSettlesTheLedgerAndCountsIt() {
    RuntimeFixture f = new RuntimeFixture(Map.of("ordering.enabled", "false"));
    for (int i = 1; i <= 4; i++) {
      f.add("eu", "m" + i, "a" + i);
    }
    List<ClaimedMessage> c = f.claimIntoLedger();
    List<PendingOutcome> batch =
        new ArrayList<>(
            List.of(
                published(c.get(0), 10),
                new Failed("m2", c.get(1).lease(), "PAYLOAD_TOO_LARGE", null),
                new Failed(
                    "m3", c.get(2).lease(), "PAYLOAD_TOO_LARGE", new KafkaCoordinates("dlq", 2, 5)),
                new Released("m4", c.get(3).lease())));

    writer(f).write(batch);

    assertTrue(batch.isEmpty(), "every outcome written");
    assertEquals(MessageStatus.PUBLISHED, status(f, "m1"));
    assertEquals(new KafkaCoordinates("t", 0, 10), f.store.find("m1").orElseThrow().kafka());
    assertEquals(MessageStatus.FAILED, status(f, "m2"));
    assertEquals(MessageStatus.FAILED, status(f, "m3"));
    assertEquals(null, f.store.find("m2").orElseThrow().kafka(), "no dead-letter copy");
    assertEquals(
        new KafkaCoordinates("dlq", 2, 5),
        f.store.find("m3").orElseThrow().kafka(),
        "where its dead-letter copy is");
    assertEquals(MessageStatus.PENDING, status(f, "m4"));
    assertEquals(1, f.metrics.published.get());
    assertEquals(1, f.metrics.failed.get());
    assertEquals(1, f.metrics.deadLettered.get());
    assertEquals(1, f.metrics.released.get());
    assertTrue(f.ledger.isEmpty());
    assertEquals(0, f.metrics.inFlight());
    assertTrue(f.wake.isSignalled(), "a freed slot wakes poll");
  }

  /** Full by bytes while holding records: an acknowledgement that makes room wakes poll. */
  @Test
  void anAcknowledgementThatFreesByteRoomWakesPoll() {
    RuntimeFixture f =
        new RuntimeFixture(
            Map.of("ordering.enabled", "false", "producer.override.buffer.memory", "16000"));
    for (int i = 1; i <= 4; i++) {
      f.add("eu", "m" + i, "a" + i, new byte[3000]);
    }
    List<ClaimedMessage> c = f.claimIntoLedger();
    assertTrue(f.ledger.isFull(f.settings), "4 records of over 3,000 bytes, of 8,000");
    f.wake.await(java.time.Duration.ZERO);

    writer(f).write(new ArrayList<>(List.of(published(c.get(0), 1))));
    assertTrue(f.ledger.isFull(f.settings), "still over the budget");
    assertFalse(f.wake.isSignalled(), "nothing to claim for yet");

    writer(f).write(new ArrayList<>(List.of(published(c.get(1), 2))));
    assertFalse(f.ledger.isEmpty());
    assertTrue(f.wake.isSignalled(), "room under the budget, with a record still held");
  }

  @Test
  void aStaleOutcomeIsALostClaimAndLeavesTheNewOwnersRowAndLedgerEntry() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    ClaimedMessage first = f.claimIntoLedger().get(0);
    ClaimedMessage again = f.takeOverAfterExpiry(RuntimeFixture.OWNER);
    f.ledger.add(again); // the same task reclaimed it under a new token
    List<PendingOutcome> batch = new ArrayList<>(List.of(published(first, 1)));

    writer(f).write(batch);

    assertEquals(1, f.metrics.claimLost.get());
    assertEquals(0, f.metrics.published.get());
    assertEquals(MessageStatus.IN_FLIGHT, status(f, "m1"));
    assertEquals(again.lease().token(), f.ledger.get("m1").orElseThrow().lease().token());
  }

  static Stream<Arguments> staleOutcomes() {
    Function<ClaimedMessage, PendingOutcome> retry =
        m -> new Unconfirmed("m1", m.lease(), Unconfirmed.NO_OFFSET);
    Function<ClaimedMessage, PendingOutcome> failed =
        m -> new Failed("m1", m.lease(), "POISON", null);
    Function<ClaimedMessage, PendingOutcome> deadLettered =
        m -> new Failed("m1", m.lease(), "POISON", new KafkaCoordinates("dlq", 0, 7));
    Function<ClaimedMessage, PendingOutcome> released = m -> new Released("m1", m.lease());
    Function<RelayMetrics, Long> retried = r -> r.retried.get();
    Function<RelayMetrics, Long> failures = r -> r.failed.get() + r.exhausted.get();
    Function<RelayMetrics, Long> copies = r -> r.deadLettered.get() + r.failed.get();
    Function<RelayMetrics, Long> releases = r -> r.released.get();
    return Stream.of(
        Arguments.of("retry", retry, retried),
        Arguments.of("failed", failed, failures),
        Arguments.of("dead-lettered", deadLettered, copies),
        Arguments.of("released", released, releases));
  }

  /**
   * Every outcome write under a taken-over lease, not only a publish, is a lost claim: counted and
   * reported as one, its own counter untouched, the new owner's row and ledger entry left alone.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("staleOutcomes")
  void everyStaleOutcomeIsALostClaimAndNotCountedAsItsKind(
      String kind,
      Function<ClaimedMessage, PendingOutcome> outcome,
      Function<RelayMetrics, Long> itsCounter) {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    ClaimedMessage first = f.claimIntoLedger().get(0);
    ClaimedMessage again = f.takeOverAfterExpiry(RuntimeFixture.OWNER);
    f.ledger.add(again);

    writer(f).write(new ArrayList<>(List.of(outcome.apply(first))));

    assertEquals(1, f.metrics.claimLost.get(), kind);
    assertEquals(0, itsCounter.apply(f.metrics), kind);
    assertEquals(MessageStatus.IN_FLIGHT, status(f, "m1"));
    assertEquals(0, f.store.find("m1").orElseThrow().attempts(), "not charged: " + kind);
    assertEquals(again.lease().token(), f.ledger.get("m1").orElseThrow().lease().token());
  }

  @Test
  void aStoreFailureLeavesTheUnwrittenOutcomesForTheRetry() {
    RuntimeFixture f = new RuntimeFixture(Map.of("ordering.enabled", "false"));
    f.add("eu", "m1", "a");
    f.add("eu", "m2", "b");
    List<ClaimedMessage> c = f.claimIntoLedger();
    OutboxSourceTaskTest.FailingStore failing = new OutboxSourceTaskTest.FailingStore(f.store);
    OutcomeWriter writer =
        new OutcomeWriter(
            failing, f.ledger, f.metrics, f.settings, new MockTime(), f.wake, () -> {});
    List<PendingOutcome> batch =
        new ArrayList<>(List.of(published(c.get(0), 1), new Released("m2", c.get(1).lease())));
    failing.failing = true;
    Metrics registry = new Metrics();
    f.metrics.register(
        () -> new PluginMetricsImpl(registry, Map.of("connector", "c", "task", "0")),
        false,
        "c",
        0);

    assertThrows(OutboxStoreException.class, () -> writer.write(batch));
    assertEquals(2, batch.size(), "nothing dropped");
    assertFalse(Double.isNaN(latencyMax(registry)), "the failed write is in the latency figures");
    f.metrics.unregister();
    registry.close();
    failing.failing = false;
    writer.write(batch);
    assertTrue(batch.isEmpty());
    assertEquals(MessageStatus.PUBLISHED, status(f, "m1"));
  }

  /**
   * The outcome-write latency is a duration on the monotonic clock: a wall clock stepped back (an
   * NTP correction) during a write recorded a latency of minus the step.
   */
  @Test
  void aWallClockSteppedBackDuringAWriteIsNotInItsLatency() {
    RuntimeFixture f = new RuntimeFixture(Map.of("ordering.enabled", "false"));
    f.add("eu", "m1", "a");
    f.add("eu", "m2", "b");
    List<ClaimedMessage> c = f.claimIntoLedger();
    SteppableTime time = new SteppableTime();
    OutboxStore stepping =
        (OutboxStore)
            Proxy.newProxyInstance(
                OutboxStore.class.getClassLoader(),
                new Class<?>[] {OutboxStore.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("markPublished")
                      || method.getName().equals("release")) {
                    time.stepWallClock(Duration.ofHours(-1));
                    time.sleep(7);
                  }
                  return method.invoke(f.store, args);
                });
    OutcomeWriter writer =
        new OutcomeWriter(stepping, f.ledger, f.metrics, f.settings, time, f.wake, () -> {});
    Metrics registry = new Metrics();
    f.metrics.register(
        () -> new PluginMetricsImpl(registry, Map.of("connector", "c", "task", "0")),
        false,
        "c",
        0);

    writer.write(
        new ArrayList<>(List.of(published(c.get(0), 1), new Released("m2", c.get(1).lease()))));

    assertEquals(MessageStatus.PUBLISHED, status(f, "m1"));
    assertEquals(MessageStatus.PENDING, status(f, "m2"));
    assertEquals(7.0, latencyMax(registry), "each write took 7 ms");
    f.metrics.unregister();
    registry.close();
  }

  @Test
  void anAckWithoutOffsetIsRetriedEvenWhenDroppedRecordsAreFailed() {
    RuntimeFixture f =
        new RuntimeFixture(Map.of("null.metadata.policy", "fail", "ordering.enabled", "false"));
    f.add("eu", "m1", "a");
    f.add("eu", "m2", "b");
    List<ClaimedMessage> c = f.claimIntoLedger();
    List<PendingOutcome> batch =
        new ArrayList<>(
            List.of(
                new Unconfirmed("m1", c.get(0).lease(), Unconfirmed.NO_METADATA),
                new Unconfirmed("m2", c.get(1).lease(), Unconfirmed.NO_OFFSET)));

    writer(f).write(batch);

    assertEquals(MessageStatus.FAILED, status(f, "m1"));
    assertEquals("DROPPED_OR_UNDELIVERED", f.store.find("m1").orElseThrow().lastFailureCode());
    assertEquals(MessageStatus.AMBIGUOUS, status(f, "m2"));
    assertEquals("ACK_WITHOUT_OFFSET", f.store.find("m2").orElseThrow().lastFailureCode());
    assertEquals(1, f.store.find("m2").orElseThrow().attempts());
    assertEquals(1, f.metrics.retried.get());
  }

  /**
   * A retry's clock is in the row: due again after the backoff's first delay, then its doubling
   * (less up to the jitter's share), never at once, which made an unconfirmed row due again at the
   * next claim.
   */
  @Test
  void aRetryIsDueAgainAfterTheBackoffNotAtOnce() {
    RuntimeFixture f =
        new RuntimeFixture(
            Map.of(
                "retry.backoff.initial.ms", "10000",
                "retry.backoff.max.ms", "600000",
                "retry.backoff.multiplier", "2.0",
                "retry.backoff.jitter", "0.2"));
    f.add("eu", "m1", "a");
    for (long full : new long[] {10_000, 20_000}) {
      ClaimedMessage m = f.claimIntoLedger().get(0);
      Instant failedAt = f.clock.now();
      writer(f)
          .write(new ArrayList<>(List.of(new Unconfirmed("m1", m.lease(), Unconfirmed.NO_OFFSET))));

      Duration delay = Duration.between(failedAt, f.store.find("m1").orElseThrow().nextAttemptAt());
      assertTrue(
          delay.toMillis() >= full * 8 / 10 && delay.toMillis() <= full,
          () -> "after attempt " + m.attempts() + ": " + delay);
      f.clock.advance(delay.minusMillis(1));
      assertTrue(f.claimIntoLedger().isEmpty(), "not due before its delay");
      f.clock.advance(Duration.ofMillis(1));
    }
  }

  @Test
  void aRetryThatSpendsTheLastAttemptIsCountedExhausted() {
    RuntimeFixture f = new RuntimeFixture(Map.of("max.attempts", "1"));
    f.add("eu", "m1", "a");
    ClaimedMessage m = f.claimIntoLedger().get(0);
    List<PendingOutcome> batch =
        new ArrayList<>(List.of(new Unconfirmed("m1", m.lease(), Unconfirmed.NO_METADATA)));

    writer(f).write(batch);

    assertEquals(MessageStatus.EXHAUSTED, status(f, "m1"));
    assertEquals(1, f.metrics.exhausted.get());
    assertEquals(0, f.metrics.retried.get());
  }

  @Test
  void anOutcomeOfAClaimAlreadyReportedLostIsNotCountedAgain() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    ClaimedMessage m = f.claimIntoLedger().get(0);
    f.ledger.markLost("m1", m.lease().token());
    f.takeOverAfterExpiry("other");

    writer(f).write(new ArrayList<>(List.of(published(m, 3))));

    assertEquals(0, f.metrics.claimLost.get(), "counted when the renewal found it lost");
    assertEquals(0, f.ledger.lostSize());
    assertTrue(f.ledger.isEmpty(), "its record settled, nothing is counted");
    assertEquals("other", leaseOwner(f, "m1"));
  }

  /**
   * A retried publish reads the published log after its batch (a second statement, each up to the
   * statement timeout): the leases still waiting are renewed between the two when due, as between
   * single writes, or two timeouts in a row could outlast them.
   */
  @Test
  void aRetriedPublishRenewsWhatIsDueBeforeReadingItsEarlierAttempt() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    ClaimedMessage m = f.claimIntoLedger().get(0);
    AtomicInteger renewals = new AtomicInteger();

    writer(f)
        .write(
            new ArrayList<>(List.of(published(m, 3))),
            true,
            renewals::incrementAndGet,
            false,
            new ArrayList<>(),
            new java.util.HashSet<>());

    assertEquals(1, renewals.get(), "once, before the read-back");
    assertEquals(MessageStatus.PUBLISHED, status(f, "m1"));
    writer(f)
        .write(
            new ArrayList<>(List.of()),
            true,
            renewals::incrementAndGet,
            false,
            new ArrayList<>(),
            new java.util.HashSet<>());
    assertEquals(1, renewals.get(), "no publish, no read-back");
  }

  /**
   * A publish that met a row lock (55P03 after the store's lock wait, nothing written) is sent
   * again at once skipping locked rows: the others are written and settled, the locked row's
   * outcome set aside, neither written nor settled. A single write that met one is set aside, and
   * so are the single writes after it, untried: one lock wait per call, not one per locked row.
   */
  @Test
  void outcomesWhoseRowsAreLockedAreSetAsideAndTheOthersWritten() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    for (String id : List.of("m1", "m2", "m3", "m4", "m5")) {
      f.add("eu", id, "agg-" + id);
    }
    List<ClaimedMessage> c = f.claimIntoLedger();
    OutboxSourceTaskTest.FailingStore store = new OutboxSourceTaskTest.FailingStore(f.store);
    store.lockedRows = java.util.Set.of("m1", "m3");
    OutcomeWriter writer =
        new OutcomeWriter(store, f.ledger, f.metrics, f.settings, new MockTime(), f.wake, () -> {});
    List<PendingOutcome> batch =
        new ArrayList<>(
            List.of(
                published(c.get(0), 1),
                published(c.get(1), 2),
                new Released("m3", c.get(2).lease()),
                new Released("m4", c.get(3).lease()),
                new Released("m5", c.get(4).lease())));
    List<PendingOutcome> setAside = new ArrayList<>();
    java.util.Set<String> foundLocked = new java.util.HashSet<>();

    writer.write(batch, false, () -> {}, false, setAside, foundLocked);

    assertTrue(batch.isEmpty(), "each outcome written or set aside");
    assertEquals(List.of("m1", "m4", "m5", "m3"), ids(setAside), "m3 last: m4, m5 go first next");
    assertEquals(1, store.skippingLockedCalls.get(), "the publish sent again, skipping m1");
    assertEquals(MessageStatus.PUBLISHED, status(f, "m2"));
    for (String id : List.of("m1", "m3", "m4", "m5")) {
      assertEquals(MessageStatus.IN_FLIGHT, status(f, id), id + " not written");
      assertTrue(f.ledger.get(id).isPresent(), id + " not settled");
    }
    assertEquals(1, f.metrics.published.get());
    assertEquals(0, f.metrics.claimLost.get());
    assertEquals(java.util.Set.of("m1", "m3"), foundLocked, "m4 and m5 untried, not locked");
    assertEquals(2, f.metrics.outcomesRowLocked.get());

    store.lockedRows = java.util.Set.of("m1");
    List<PendingOutcome> again = new ArrayList<>(setAside);
    setAside.clear();
    writer.write(again, false, () -> {}, true, setAside, new java.util.HashSet<>());
    assertEquals(List.of("m1"), ids(setAside), "tried again, skipping locked rows at once");
    assertEquals(1, store.publishCalls.get(), "no second lock wait for the publish");
    assertEquals(MessageStatus.PENDING, status(f, "m5"));
    assertEquals(3, f.metrics.released.get());
  }

  private static List<String> ids(List<PendingOutcome> outcomes) {
    return outcomes.stream().map(PendingOutcome::messageId).toList();
  }

  private static String leaseOwner(RuntimeFixture f, String id) {
    return f.store.find(id).orElseThrow().leaseOwner();
  }
}
