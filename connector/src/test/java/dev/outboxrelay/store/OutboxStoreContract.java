package dev.outboxrelay.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.memory.InMemoryOutboxStore.RowState;
import dev.outboxrelay.writer.EnqueueResult;
import dev.outboxrelay.writer.OutboxMessage;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The one contract every {@link OutboxStore} passes: the in-memory store, and the PostgreSQL store
 * on the relay's own table and on an adopted one. Time moves only through {@link #clock}.
 */
public abstract class OutboxStoreContract {
  protected static final String EU = "orders-eu";
  protected static final String US = "orders-us";
  protected static final Duration LEASE = Duration.ofSeconds(30);

  protected ManualClock clock;
  protected OutboxStore store;

  /**
   * {@link OutboxStore#claimAbandoned}, after asking {@link OutboxStore#hasAbandoned} the same: a
   * task settles all it holds before an abandoned claim only on that answer, so it must agree with
   * the claim in every scenario of this contract.
   */
  protected ClaimResult reclaim(ClaimRequest request) {
    boolean found = store.hasAbandoned(request);
    ClaimResult result = store.claimAbandoned(request);
    assertEquals(!result.isEmpty(), found, "hasAbandoned agrees with claimAbandoned");
    return result;
  }

  /** A fresh, empty store judged by {@code clock}. */
  protected abstract OutboxStore newStore(ManualClock clock);

  /**
   * Appends a message owned by {@code instanceKey}, as an application's writer would.
   *
   * @throws MessageIdTaken if a row of another instance key, or a legacy row, has its message id
   */
  protected abstract EnqueueResult enqueue(String instanceKey, OutboxMessage message);

  /** The writer refused a message id that a row of another instance key (or a legacy row) has. */
  protected static final class MessageIdTaken extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public MessageIdTaken(Throwable cause) {
      super(cause);
    }
  }

  /** Inserts a legacy row without an instance key (written before ownership existed). */
  protected abstract void insertLegacy(OutboxMessage message);

  /** The row's relay state as stored, or null when it does not exist. */
  protected abstract RowState state(String messageId);

  /**
   * Puts the row IN_FLIGHT under {@code lease} until {@code expiresAt} behind the store's back, as
   * a claim of another instance (or an older relay, for a legacy row) whose owner name collides.
   */
  protected abstract void holdElsewhere(String messageId, Lease lease, Instant expiresAt);

  /**
   * Parks the row FAILED for {@code reasonCode} under lease token {@code token} at claim position
   * ({@code epoch}, {@code batch}) behind the store's back, as another connector's exactly-once
   * task would, its dead-letter position not yet recorded.
   */
  protected abstract void parkElsewhere(
      String messageId, long token, long epoch, long batch, String reasonCode);

  /** Sets the row's creation time behind the store's back, as rows written long ago have it. */
  protected abstract void backdate(String messageId, Instant createdAt);

  /** Rejects a writer bound to this key before any connection or row exists. */
  protected abstract void createWriter(String instanceKey);

  @BeforeEach
  void freshStore() {
    clock = new ManualClock(Instant.now().truncatedTo(ChronoUnit.MILLIS));
    store = newStore(clock);
  }

  // ---------------------------------------------------------------- helpers

  protected static OutboxMessage message(String id, String aggregateId) {
    return message(id, aggregateId, ("{\"id\":\"" + id + "\"}").getBytes());
  }

  protected static OutboxMessage message(String id, String aggregateId, byte[] payload) {
    return OutboxMessage.builder()
        .messageId(id)
        .aggregateType("order")
        .aggregateId(aggregateId)
        .eventType("OrderPlaced")
        .payload(payload)
        .build();
  }

  protected String add(String key, String id, String aggregateId) {
    assertEquals(EnqueueResult.ENQUEUED, enqueue(key, message(id, aggregateId)));
    return id;
  }

  protected static ClaimRequest request(String owner, int limit, Set<String> keys) {
    return new ClaimRequest(owner, keys, limit, LEASE, 3, true);
  }

  protected static ClaimRequest request(String owner, int limit) {
    return request(owner, limit, Set.of(EU));
  }

  protected static List<String> ids(ClaimResult result) {
    return result.claimed().stream().map(ClaimedMessage::messageId).toList();
  }

  protected ClaimedMessage claimOne(String owner, String expectedId) {
    ClaimResult result = store.claim(request(owner, 1));
    assertEquals(List.of(expectedId), ids(result));
    return result.claimed().get(0);
  }

  /** Every row of EU that {@link OutboxStore#releaseUnheld} releases, read two rows a page. */
  private List<String> releaseUnheld(String owner, List<Long> heldSeqs, long handedThrough) {
    List<String> released = new ArrayList<>();
    UnheldPage page;
    long after = Long.MIN_VALUE;
    do {
      page = store.releaseUnheld(EU, owner, heldSeqs, handedThrough, after, 2);
      released.addAll(page.released());
      after = page.lastSeq();
    } while (page.full());
    released.sort(null);
    return released;
  }

  protected static PublishedAck ack(ClaimedMessage m, long offset) {
    return new PublishedAck(
        m.messageId(), m.seq(), m.lease(), new KafkaCoordinates("t", 0, offset));
  }

  private static Map<?, ?> parseJson(String json) {
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper().readValue(json, Map.class);
    } catch (java.io.IOException e) {
      throw new AssertionError("not JSON", e);
    }
  }

  // ---------------------------------------------------------------- writer

  @Test
  void writerBoundToMissingOrBlankKeyIsRejectedBeforeAnythingHappens() {
    assertThrows(IllegalArgumentException.class, () -> createWriter(null));
    assertThrows(IllegalArgumentException.class, () -> createWriter(""));
    assertThrows(IllegalArgumentException.class, () -> createWriter("   "));
  }

  @Test
  void sameMessageIdTwiceIsReportedAndWritesOneRow() {
    add(EU, "m1", "a");
    assertEquals(EnqueueResult.DUPLICATE, enqueue(EU, message("m1", "other")));
    List<ClaimedMessage> claimed = store.claim(request("w1", 10)).claimed();
    assertEquals(List.of("m1"), ids(new ClaimResult(claimed, List.of())));
    assertEquals("a", claimed.get(0).aggregateId(), "the first write wins");
  }

  @Test
  void messageIdOfAnotherKeyIsRefusedAndNothingIsWritten() {
    add(EU, "m1", "a");
    // Not DUPLICATE: that would tell the caller its message is already there, and lose it.
    assertThrows(MessageIdTaken.class, () -> enqueue(US, message("m1", "c")));
    assertEquals(List.of(), ids(store.claim(request("w1", 10, Set.of(US)))));
    List<ClaimedMessage> claimed = store.claim(request("w1", 10)).claimed();
    assertEquals(List.of("m1"), ids(new ClaimResult(claimed, List.of())));
    assertEquals("a", claimed.get(0).aggregateId(), "the row of the other key is untouched");
  }

  /**
   * A message id a legacy row (no instance key) holds: refused where the table keeps ids unique
   * across its rows, legacy ones included; see {@link #legacyRowsKeepTheirIdsUnique()}. Either way
   * the legacy row stays untouched.
   */
  @Test
  void aMessageIdOfALegacyRowIsRefusedWhereLegacyIdsAreUnique() {
    insertLegacy(message("legacy1", "b"));
    if (legacyRowsKeepTheirIdsUnique()) {
      assertThrows(MessageIdTaken.class, () -> enqueue(US, message("legacy1", "c")));
      assertEquals(List.of(), ids(store.claim(request("w1", 10, Set.of(US)))));
    } else {
      assertEquals(EnqueueResult.ENQUEUED, enqueue(US, message("legacy1", "c")));
      assertEquals(List.of("legacy1"), ids(store.claim(request("w1", 10, Set.of(US)))));
    }
  }

  /** Whether the store's table keeps message ids unique across legacy rows too. */
  protected boolean legacyRowsKeepTheirIdsUnique() {
    return true;
  }

  @Test
  void jsonPayloadIsSerializedWithJackson() {
    enqueue(
        EU,
        OutboxMessage.builder()
            .messageId("j1")
            .aggregateType("order")
            .aggregateId("a")
            .eventType("OrderPlaced")
            .jsonPayload(Map.of("total", 42))
            .header("traceparent", "00-abc")
            .correlationId("corr-1")
            .build());
    ClaimedMessage m = store.claim(request("w1", 1)).claimed().get(0);
    assertEquals("{\"total\":42}", new String(m.payload()));
    assertEquals(Map.of("traceparent", "00-abc"), parseJson(m.headersJson()));
    assertEquals("corr-1", m.correlationId());
  }

  /**
   * A row's headers come back as the jsonb column gives them: keys by length, then by their bytes,
   * whatever order they were written in (the relay adds them to the record in this order), with a
   * control character escaped as jsonb writes it.
   */
  @Test
  void headersComeBackInTheColumnsOrderAndText() {
    enqueue(
        EU,
        OutboxMessage.builder()
            .messageId("h1")
            .aggregateType("order")
            .aggregateId("a")
            .eventType("OrderPlaced")
            .payload(new byte[] {1})
            .header("tenant", "acme")
            .header("traceparent", "00-abc")
            .header("b", "tab\there")
            .header("a", "\u0001\"q\"")
            .build());
    ClaimedMessage m = store.claim(request("w1", 1)).claimed().get(0);
    assertEquals(
        "{\"a\": \"\\u0001\\\"q\\\"\", \"b\": \"tab\\there\", \"tenant\": \"acme\","
            + " \"traceparent\": \"00-abc\"}",
        m.headersJson());
  }

  @Test
  void aClaimJudgesEachDeadlineByTheStoresClock() {
    for (int i = 0; i < 3; i++) {
      enqueue(
          EU,
          OutboxMessage.builder()
              .messageId("d" + i)
              .aggregateType("order")
              .aggregateId("agg" + i)
              .eventType("OrderPlaced")
              .deliverBefore(clock.now().plusSeconds(10).plusMillis(i - 1))
              .build());
    }
    add(EU, "none", "agg-none");
    clock.advance(Duration.ofSeconds(10));
    Map<String, Boolean> expired = new HashMap<>();
    for (ClaimedMessage m : store.claim(request("w1", 10)).claimed()) {
      expired.put(m.messageId(), m.deadlineExpired());
    }
    assertEquals(Map.of("d0", true, "d1", true, "d2", false, "none", false), expired);

    // A reclaim judges it again, at its own time.
    clock.advance(LEASE);
    ClaimedMessage reclaimed = reclaim(request("w2", 10)).claimed().get(0);
    assertEquals("d0", reclaimed.messageId());
    assertTrue(reclaimed.deadlineExpired());
  }

  /**
   * A payload over the claim's read limit stays in the store: the row comes back with its size
   * only, so that rows too large to publish cannot fill the claimer's heap. A reclaim of an
   * abandoned row keeps to the limit too.
   */
  @Test
  void aPayloadOverTheClaimsReadLimitIsLeftOutAndItsSizeGiven() {
    for (String id : List.of("small", "limit", "large", "tombstone")) {
      byte[] payload = // JSON strings of 9, 10 and 11 bytes: an adopted table's payload is jsonb
          switch (id) {
            case "small" -> "\"1234567\"".getBytes();
            case "limit" -> "\"12345678\"".getBytes();
            case "large" -> "\"123456789\"".getBytes();
            default -> null;
          };
      enqueue(EU, message(id, id, payload));
    }
    Map<String, ClaimedMessage> claimed = new HashMap<>();
    for (ClaimedMessage m : store.claim(request("w1", 10).withPayloadReadLimit(10)).claimed()) {
      claimed.put(m.messageId(), m);
    }
    assertEquals(9, claimed.get("small").payload().length);
    assertEquals(10, claimed.get("limit").payload().length);
    assertEquals(10, claimed.get("limit").payloadBytes());
    assertEquals(11, claimed.get("large").payloadBytes());
    assertNull(claimed.get("large").payload());
    assertTrue(claimed.get("large").payloadOmitted());
    assertNull(claimed.get("tombstone").payload());
    assertFalse(claimed.get("tombstone").payloadOmitted(), "a null payload is not left out");

    clock.advance(LEASE);
    List<String> reclaimed = new java.util.ArrayList<>();
    for (int i = 0; i < 4; i++) {
      ClaimResult r = reclaim(request("w2", 10).withPayloadReadLimit(10));
      for (ClaimedMessage m : r.claimed()) {
        reclaimed.add(m.messageId());
        assertEquals(m.messageId().equals("large"), m.payloadOmitted(), m.messageId());
        store.markPublished(ack(m, i));
      }
    }
    assertTrue(reclaimed.contains("large"), reclaimed::toString);
  }

  /**
   * Headers whose text is over the claim's headers read limit stay in the store, as a payload over
   * its limit does: the row comes back marked, without them (a jsonb of headers has no bound of its
   * own, and a task read every byte of it before any check). A reclaim keeps to it too.
   */
  @Test
  void headersOverTheReadLimitAreLeftInTheStore() {
    // As jsonb text: {"h": "<value>"}, 9 bytes around the value.
    for (String id : List.of("small", "limit", "large", "none")) {
      OutboxMessage.Builder row =
          OutboxMessage.builder()
              .messageId(id)
              .aggregateType("order")
              .aggregateId(id)
              .eventType("OrderPlaced")
              .payload(new byte[] {1});
      switch (id) {
        case "small" -> row.header("h", "12");
        case "limit" -> row.header("h", "123");
        case "large" -> row.header("h", "1234");
        default -> {}
      }
      enqueue(EU, row.build());
    }
    Map<String, ClaimedMessage> claimed = new HashMap<>();
    for (ClaimedMessage m : store.claim(request("w1", 10).withHeadersReadLimit(12)).claimed()) {
      claimed.put(m.messageId(), m);
    }
    assertEquals("{\"h\": \"12\"}", claimed.get("small").headersJson());
    assertEquals("{\"h\": \"123\"}", claimed.get("limit").headersJson());
    assertFalse(claimed.get("limit").headersOmitted());
    assertNull(claimed.get("large").headersJson());
    assertTrue(claimed.get("large").headersOmitted());
    assertEquals(1, claimed.get("large").payload().length, "the payload is read all the same");
    assertNull(claimed.get("none").headersJson());
    assertFalse(claimed.get("none").headersOmitted(), "no headers are not left out");

    clock.advance(LEASE);
    List<String> reclaimed = new java.util.ArrayList<>();
    for (int i = 0; i < 4; i++) {
      ClaimResult r = reclaim(request("w2", 10).withHeadersReadLimit(12));
      for (ClaimedMessage m : r.claimed()) {
        reclaimed.add(m.messageId());
        assertEquals(m.messageId().equals("large"), m.headersOmitted(), m.messageId());
        store.markPublished(ack(m, i));
      }
    }
    assertTrue(reclaimed.contains("large"), reclaimed::toString);
  }

  /**
   * A claim takes its rows in seq order up to its read room, the first whatever its size: the rows
   * past it stay due for the next claim, so that a burst of large rows after small ones cannot
   * bring a whole batch of them into the claimer's heap. A payload over the read limit, never read,
   * takes nothing of it: "r2" after it is the first with bytes to read.
   */
  @Test
  void aClaimStopsAtItsReadRoomAndCountsNoPayloadItLeavesOut() {
    for (String id : List.of("over", "r2", "r3", "r4", "r5")) {
      String payload = id.equals("over") ? "\"1234567890\"" : "\"12345678\"";
      enqueue(EU, message(id, id, payload.getBytes()));
    }
    ClaimResult first = store.claim(request("w1", 10).withPayloadReadLimit(10).withReadRoom(5));
    assertEquals(List.of("over", "r2"), ids(first), "r2 over the room, the first with bytes");
    assertTrue(first.claimed().get(0).payloadOmitted());
    assertEquals(10, first.claimed().get(1).payload().length);
    for (String id : List.of("r3", "r4", "r5")) {
      assertEquals(MessageStatus.PENDING, state(id).status(), id);
      assertNull(state(id).leaseOwner(), id);
    }

    ClaimResult second = store.claim(request("w1", 10).withReadRoom(20));
    assertEquals(List.of("r3", "r4"), ids(second), "10 + 10 bytes fit in 20, 30 do not");
    assertEquals(List.of("r5"), ids(store.claim(request("w1", 10))), "unbounded by default");
  }

  /**
   * The read room cuts an ordered claim in seq order, so an aggregate's later row is never taken
   * without an earlier one it left out: "a1" fits, "b2" does not, and "a3" behind it stays too;
   * another owner then takes "b2", and not "a3", whose aggregate is in flight. With one key and
   * with two (the quota's form).
   */
  @ParameterizedTest(name = "{0} key(s)")
  @ValueSource(ints = {1, 2})
  void theReadRoomCutsAnOrderedClaimInSeqOrder(int keyCount) {
    Set<String> keys = keyCount == 1 ? Set.of(EU) : Set.of(EU, US);
    for (String id : List.of("a1", "b2", "a3")) {
      enqueue(EU, message(id, id.substring(0, 1), "\"12345678\"".getBytes())); // 10 bytes
    }
    assertEquals(List.of("a1"), ids(store.claim(request("w1", 10, keys).withReadRoom(15))));
    assertEquals(MessageStatus.PENDING, state("a3").status());
    assertEquals(List.of("b2"), ids(store.claim(request("w2", 10, keys))));
    assertEquals(MessageStatus.PENDING, state("a3").status());
  }

  // ---------------------------------------------------------------- claim and ownership

  /**
   * Claims racing from several threads never take one row twice, and together take every row: in
   * PostgreSQL by the claim's row locks (PostgresClaimRaceTest races them harder), in the in-memory
   * store by its monitor, which no other test needed.
   */
  @Test
  void concurrentClaimersNeverTakeARowTwice() throws Exception {
    int rows = 200;
    for (int i = 0; i < rows; i++) {
      add(EU, "r" + i, "agg-" + i);
    }
    int threads = 4;
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(threads);
    java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(threads);
    try {
      List<java.util.concurrent.Future<List<String>>> claimers = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        String owner = "w" + t;
        claimers.add(
            pool.submit(
                () -> {
                  start.await();
                  List<String> mine = new ArrayList<>();
                  List<String> batch;
                  do {
                    batch = ids(store.claim(request(owner, 7)));
                    mine.addAll(batch);
                  } while (!batch.isEmpty());
                  return mine;
                }));
      }
      List<String> all = new ArrayList<>();
      for (var claimer : claimers) {
        all.addAll(claimer.get(60, java.util.concurrent.TimeUnit.SECONDS));
      }
      assertEquals(rows, all.size(), "each row once");
      assertEquals(rows, Set.copyOf(all).size(), "no row twice");
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void claimSetsOwnerBumpedTokenAndBoundedExpiry() {
    add(EU, "m1", "a");
    ClaimedMessage m = claimOne("w1", "m1");
    assertEquals("w1", m.lease().owner());
    assertEquals(1, m.lease().token());
    RowState s = state("m1");
    assertEquals(MessageStatus.IN_FLIGHT, s.status());
    assertEquals("w1", s.leaseOwner());
    assertEquals(1, s.leaseToken());
    assertEquals(clock.now().plus(LEASE), s.leaseExpiresAt());
  }

  @Test
  void twoInstanceKeysShareOneTableAndLegacyRowsAreNeverTouched() {
    add(EU, "eu1", "a");
    add(US, "us1", "a");
    insertLegacy(message("legacy1", "a"));
    RowState legacyBefore = state("legacy1");

    assertEquals(List.of("eu1"), ids(store.claim(request("w-eu", 10, Set.of(EU)))));
    assertEquals(List.of("us1"), ids(store.claim(request("w-us", 10, Set.of(US)))));
    clock.advance(LEASE.multipliedBy(3));
    assertEquals(List.of(), ids(store.claim(request("w-eu2", 10, Set.of(EU)))));
    assertEquals(List.of("eu1"), ids(reclaim(request("w-eu2", 10, Set.of(EU)))));
    assertTrue(reclaim(request("w-eu3", 10, Set.of(EU))).isEmpty());

    BacklogSnapshot eu = store.inspect(Set.of(EU), true);
    assertEquals(1, eu.count(MessageStatus.IN_FLIGHT));
    assertEquals(0, eu.count(MessageStatus.PENDING));
    assertEquals(1, eu.countsByStatus().values().stream().mapToLong(Long::longValue).sum());
    assertEquals(legacyBefore, state("legacy1"));
    assertNull(state("legacy1").instanceKey());
  }

  /**
   * The lag alone is the lag the counts come with: the age of the oldest row of the keys awaiting
   * delivery (in flight included), by the store's clock; never another key's or a legacy row's;
   * zero for none. (Rows take their creation time from the database, not from the test's clock.)
   */
  @Test
  void theLagAloneIsTheInspectedLag() {
    Instant start = clock.now();
    insertLegacy(message("legacy1", "a"));
    backdate("legacy1", start.minus(Duration.ofHours(3)));
    add(US, "us1", "b");
    backdate("us1", start.minus(Duration.ofHours(2)));
    clock.advance(Duration.ofSeconds(10));
    assertEquals(Duration.ZERO, store.lag(Set.of(EU)), "nothing of eu awaits delivery");
    assertEquals(Duration.ZERO, store.inspect(Set.of(EU), false).lag());
    add(EU, "eu1", "c");
    backdate("eu1", start.minus(Duration.ofHours(1)));
    assertEquals(1, store.claim(request("w", 1, Set.of(EU))).claimed().size());
    add(EU, "eu2", "d");
    backdate("eu2", start.minus(Duration.ofMinutes(30)));
    clock.advance(Duration.ofSeconds(5));

    // The oldest row awaiting delivery, in flight or not; never the legacy row, nor us1.
    Duration lag = store.lag(Set.of(EU));
    assertEquals(Duration.ofHours(1).plusSeconds(15), lag, "eu1, in flight");
    assertEquals(lag, store.inspect(Set.of(EU), false).lag());
    assertEquals(Duration.ofHours(2).plusSeconds(15), store.lag(Set.of(EU, US)), "us1 is older");
  }

  @Test
  void anInstanceSeesOnlyItsOwnRowsInCountsAndCleanup() {
    ClaimedMessage eu = claimAfterAdd(EU, "eu1");
    ClaimedMessage us = claimAfterAdd(US, "us1");
    insertLegacy(message("legacy1", "a"));
    store.markPublished(ack(eu, 1));
    store.markPublished(ack(us, 2));
    clock.advance(Duration.ofHours(1));

    assertEquals(1, store.inspect(Set.of(EU), true).count(MessageStatus.PUBLISHED));
    assertEquals(0, store.inspect(Set.of(EU), false).count(MessageStatus.PUBLISHED));
    assertEquals(1, store.deletePublished(Set.of(EU), clock.now(), 100));
    assertNull(state("eu1"));
    assertEquals(MessageStatus.PUBLISHED, state("us1").status());
    assertEquals(MessageStatus.PENDING, state("legacy1").status());
  }

  /**
   * The parked rows alone: own keys only, by status, and nothing awaiting delivery or published.
   */
  @Test
  void countingParkedRowsCountsOnlyTheOwnKeysParkedRows() {
    ClaimedMessage failed = claimAfterAdd(EU, "eu-failed");
    assertEquals(Outcome.APPLIED, store.markFailed("eu-failed", failed.lease(), "POISON"));
    ClaimedMessage exhausted = claimAfterAdd(EU, "eu-exhausted");
    assertEquals(
        Outcome.EXHAUSTED,
        store.retryLater("eu-exhausted", exhausted.lease(), "X", Duration.ZERO, 1));
    ClaimedMessage published = claimAfterAdd(EU, "eu-published");
    store.markPublished(ack(published, 1));
    add(EU, "eu-pending", "p");
    ClaimedMessage us = claimAfterAdd(US, "us-failed");
    assertEquals(Outcome.APPLIED, store.markFailed("us-failed", us.lease(), "POISON"));
    insertLegacy(message("legacy1", "a"));

    assertEquals(
        Map.of(MessageStatus.FAILED, 1L, MessageStatus.EXHAUSTED, 1L),
        store.countParked(Set.of(EU)));
    assertEquals(Map.of(MessageStatus.FAILED, 1L), store.countParked(Set.of(US)));
    assertEquals(
        Map.of(MessageStatus.FAILED, 2L, MessageStatus.EXHAUSTED, 1L),
        store.countParked(Set.of(EU, US)));
    assertEquals(Map.of(), store.countParked(Set.of("nobody")));

    add(EU, "eu-later", "q"); // stays pending; eu-pending, claimed first, goes back ambiguous
    ClaimedMessage ambiguous = claimOne("w-EU", "eu-pending");
    assertEquals(
        Outcome.APPLIED,
        store.retryLater("eu-pending", ambiguous.lease(), "X", Duration.ofHours(1), 5));
    BacklogSnapshot eu = store.inspect(Set.of(EU), false);
    for (Map.Entry<MessageStatus, Long> expected :
        Map.of(
                MessageStatus.FAILED, 1L,
                MessageStatus.EXHAUSTED, 1L,
                MessageStatus.AMBIGUOUS, 1L,
                MessageStatus.PENDING, 1L,
                MessageStatus.IN_FLIGHT, 0L,
                MessageStatus.PUBLISHED, 0L)
            .entrySet()) {
      assertEquals(expected.getValue(), eu.count(expected.getKey()), expected.getKey().name());
    }
    assertEquals(1, store.inspect(Set.of(EU), true).count(MessageStatus.PUBLISHED));
    assertEquals(1, store.inspect(Set.of(US), false).count(MessageStatus.FAILED));
    assertEquals(0, store.inspect(Set.of(US), false).count(MessageStatus.EXHAUSTED));
  }

  /**
   * Rows held under another connector's live leases: only of the keys asked, only while the lease
   * lives, never a legacy row; with no owner prefix every owner is the asker's own.
   */
  @Test
  void rowsLeasedByAnotherConnectorAreCountedWhileTheirLeasesLive() {
    add(EU, "a", "agg-1");
    add(EU, "b", "agg-2");
    add(EU, "c", "agg-3");
    add(US, "u", "agg-4");
    insertLegacy(message("legacy", "agg-5"));
    claimOne("orders/task-0/1", "a");
    claimOne("other/task-0/2", "b");
    holdElsewhere("c", new Lease("other/task-1/3", 4), clock.now().minusSeconds(1)); // expired
    store.claim(request("other/task-0/2", 1, Set.of(US)));
    holdElsewhere("legacy", new Lease("other/task-0/2", 1), clock.now().plus(LEASE));

    assertEquals(1, store.countLeasedElsewhere(Set.of(EU), "orders/task-"));
    assertEquals(2, store.countLeasedElsewhere(Set.of(EU, US), "orders/task-"));
    assertEquals(0, store.countLeasedElsewhere(Set.of(EU), ""), "every owner its own");
    clock.advance(LEASE);
    assertEquals(0, store.countLeasedElsewhere(Set.of(EU, US), "orders/task-"), "all expired");
  }

  /**
   * "Now" is the store's clock, as every lease and due time is judged: retention's cutoff is
   * computed from it (Maintenance), so a row published an hour before it is deleted by it and one
   * published at it is not.
   */
  @Test
  void nowIsTheStoresClockAndRetentionCutsByIt() {
    assertEquals(clock.now(), store.now());
    ClaimedMessage old = claimAfterAdd(EU, "old");
    store.markPublished(ack(old, 1));
    clock.advance(Duration.ofHours(1));
    ClaimedMessage recent = claimAfterAdd(EU, "recent");
    store.markPublished(ack(recent, 2));

    assertEquals(clock.now(), store.now());
    assertEquals(1, store.deletePublished(Set.of(EU), store.now().minusSeconds(1), 100));
    assertNull(state("old"));
    assertEquals(MessageStatus.PUBLISHED, state("recent").status());
  }

  /** Retention deletes rows published before its cutoff, not one published at it. */
  @Test
  void retentionKeepsARowPublishedAtTheCutoff() {
    ClaimedMessage m = claimAfterAdd(EU, "at");
    store.markPublished(ack(m, 1));
    Instant publishedAt = store.now();
    clock.advance(Duration.ofMinutes(1));

    assertEquals(0, store.deletePublished(Set.of(EU), publishedAt, 10));
    assertEquals(MessageStatus.PUBLISHED, state("at").status());
    assertEquals(1, store.deletePublished(Set.of(EU), publishedAt.plusMillis(1), 10));
  }

  private ClaimedMessage claimAfterAdd(String key, String id) {
    add(key, id, "a");
    ClaimResult r = store.claim(request("w-" + key, 1, Set.of(key)));
    return r.claimed().get(0);
  }

  @Test
  void cleanupDeletesInBoundedBatchesAndOnlyRowsPublishedBeforeTheCutoff() {
    for (int i = 0; i < 5; i++) {
      add(EU, "m" + i, "agg" + i);
    }
    for (ClaimedMessage m : store.claim(request("w1", 5)).claimed()) {
      store.markPublished(ack(m, m.seq()));
    }
    Instant cutoff = clock.now().plusMillis(1);
    clock.advance(Duration.ofMinutes(1));
    add(EU, "late", "agg-late");
    ClaimedMessage late = store.claim(request("w1", 5)).claimed().get(0);
    store.markPublished(ack(late, 99));

    assertEquals(2, store.deletePublished(Set.of(EU), cutoff, 2));
    assertEquals(2, store.deletePublished(Set.of(EU), cutoff, 2));
    assertEquals(1, store.deletePublished(Set.of(EU), cutoff, 2));
    assertEquals(0, store.deletePublished(Set.of(EU), cutoff, 2));
    assertEquals(MessageStatus.PUBLISHED, state("late").status());
  }

  /**
   * Retention over several keys: a bounded batch takes each key's oldest entries first. Which key
   * it starts with is left open (PostgreSQL reads the keys in the order of an array made from a
   * set; the in-memory store takes the oldest over all keys).
   */
  @Test
  void cleanupOverSeveralKeysTakesEachKeysOldestEntriesFirst() {
    store.markPublished(ack(claimAfterAdd(EU, "eu1"), 1));
    store.markPublished(ack(claimAfterAdd(US, "us1"), 2));
    clock.advance(Duration.ofMinutes(1));
    store.markPublished(ack(claimAfterAdd(EU, "eu2"), 3));
    store.markPublished(ack(claimAfterAdd(US, "us2"), 4));
    clock.advance(Duration.ofMinutes(1));

    assertEquals(2, store.deletePublished(Set.of(EU, US), clock.now(), 2));
    assertTrue(state("eu2") != null || state("eu1") == null, "eu1 before eu2");
    assertTrue(state("us2") != null || state("us1") == null, "us1 before us2");
    assertEquals(2, store.deletePublished(Set.of(EU, US), clock.now(), 2));
    for (String id : List.of("eu1", "us1", "eu2", "us2")) {
      assertNull(state(id), id);
    }
  }

  @Test
  void aRowWithACorrelationIdLongerThanAnIndexEntryIsParked() {
    // Random hex, 7,200 characters: compressed or not, more than a btree entry holds (2,704 B).
    StringBuilder correlationId = new StringBuilder();
    while (correlationId.length() < 7_200) {
      correlationId.append(UUID.randomUUID().toString().replace("-", ""));
    }
    OutboxMessage message =
        OutboxMessage.builder()
            .messageId("m1")
            .aggregateType("order")
            .aggregateId("a")
            .eventType("OrderPlaced")
            .correlationId(correlationId.toString())
            .payload("{}".getBytes())
            .build();
    assertEquals(EnqueueResult.ENQUEUED, enqueue(EU, message));
    ClaimedMessage claimed = claimOne("w1", "m1");

    assertEquals(Outcome.APPLIED, store.markFailed("m1", claimed.lease(), "POISON"));
    assertEquals(MessageStatus.FAILED, state("m1").status());
  }

  /**
   * A dead-lettered row keeps where Kafka confirmed its copy; a row parked without one has no
   * position.
   */
  @Test
  void aParkedRowRecordsItsDeadLetterCopyOnlyWhenItHasOne() {
    add(EU, "m1", "a");
    add(EU, "m2", "b");
    ClaimedMessage copied = claimOne("w1", "m1");
    ClaimedMessage notCopied = claimOne("w1", "m2");

    assertEquals(
        Outcome.APPLIED,
        store.markFailed("m1", copied.lease(), "POISON", new KafkaCoordinates("dlq", 1, 9)));
    assertEquals(Outcome.APPLIED, store.markFailed("m2", notCopied.lease(), "POISON", null));

    assertEquals(new KafkaCoordinates("dlq", 1, 9), state("m1").kafka());
    assertEquals(MessageStatus.FAILED, state("m1").status());
    assertNull(state("m2").kafka());
  }

  @Test
  void aRowUnderAnActiveLeaseIsNotClaimableByAnotherOwner() {
    add(EU, "m1", "a");
    claimOne("w1", "m1");
    assertTrue(store.claim(request("w2", 10)).isEmpty());
    assertTrue(reclaim(request("w2", 10)).isEmpty());
    clock.advance(LEASE.minusMillis(1));
    assertTrue(reclaim(request("w2", 10)).isEmpty());
  }

  @Test
  void afterExpiryAnotherOwnerReclaimsAndTheFirstOwnersWritesAreLost() {
    add(EU, "m1", "a");
    ClaimedMessage first = claimOne("w1", "m1");
    clock.advance(LEASE);
    ClaimedMessage second = reclaim(request("w2", 10)).claimed().get(0);
    assertEquals(2, second.lease().token());
    RowState owned = state("m1");

    assertEquals(Outcome.CLAIM_LOST, store.markPublished(ack(first, 7)));
    assertEquals(List.of(Outcome.CLAIM_LOST), store.markPublished(List.of(ack(first, 7))));
    assertEquals(
        Outcome.CLAIM_LOST,
        store.retryLater("m1", first.lease(), "SEND_FAILED", Duration.ofSeconds(5), 3));
    assertEquals(Outcome.CLAIM_LOST, store.markFailed("m1", first.lease(), "POISON"));
    assertEquals(Outcome.CLAIM_LOST, store.release("m1", first.lease()));
    assertEquals(Renewal.lost(Set.of("m1")), store.renew(List.of(first.heldLease()), LEASE));
    assertEquals(owned, state("m1"), "a lost claim changes nothing of the new owner's row");

    assertEquals(Outcome.APPLIED, store.markPublished(ack(second, 8)));
  }

  @Test
  void anExpiredLeaseThatNobodyReclaimedStillBelongsToItsOwner() {
    add(EU, "m1", "a");
    ClaimedMessage m = claimOne("w1", "m1");
    clock.advance(LEASE.multipliedBy(2));
    assertEquals(Renewal.allRenewed(), store.renew(List.of(m.heldLease()), LEASE));
    assertEquals(clock.now().plus(LEASE), state("m1").leaseExpiresAt());
    assertEquals(Outcome.APPLIED, store.markPublished(ack(m, 1)));
  }

  @Test
  void sameOwnerWithAnotherTokenIsFencedToo() {
    add(EU, "m1", "a");
    ClaimedMessage m = claimOne("w1", "m1");
    Lease stale = new Lease("w1", m.lease().token() + 1);
    assertEquals(
        Outcome.CLAIM_LOST, store.markPublished(new PublishedAck("m1", m.seq(), stale, k(1))));
    assertEquals(MessageStatus.IN_FLIGHT, state("m1").status());
  }

  /** The token alone does not fence: another owner with the holder's token writes nothing. */
  @Test
  void anotherOwnerWithTheSameTokenIsFencedInEveryWrite() {
    add(EU, "m1", "a");
    ClaimedMessage m = claimOne("w1", "m1");
    Lease impostor = new Lease("w2", m.lease().token());
    RowState held = state("m1");

    assertEquals(
        Outcome.CLAIM_LOST, store.markPublished(new PublishedAck("m1", m.seq(), impostor, k(1))));
    assertEquals(
        List.of(Outcome.CLAIM_LOST),
        store.markPublished(List.of(new PublishedAck("m1", m.seq(), impostor, k(1)))));
    assertEquals(
        Outcome.CLAIM_LOST,
        store.retryLater("m1", impostor, "SEND_FAILED", Duration.ofSeconds(5), 3));
    assertEquals(Outcome.CLAIM_LOST, store.markFailed("m1", impostor, "POISON"));
    assertEquals(Outcome.CLAIM_LOST, store.release("m1", impostor));
    clock.advance(Duration.ofSeconds(1));
    assertEquals(
        Renewal.lost(Set.of("m1")),
        store.renew(List.of(new HeldLease("m1", m.seq(), impostor)), LEASE));
    assertEquals(List.of(), store.giveBack(List.of(new HeldLease("m1", m.seq(), impostor))));
    assertEquals(held, state("m1"), "the holder's row, unchanged");
    assertEquals(Outcome.APPLIED, store.markPublished(ack(m, 1)));
  }

  @Test
  void anAckWhoseSeqIsNotItsRowsIsALostClaimAndPublishesNothing() {
    add(EU, "m1", "a");
    add(EU, "m2", "b");
    ClaimResult both = store.claim(request("w1", 2));
    ClaimedMessage m1 = both.claimed().get(0);
    ClaimedMessage m2 = both.claimed().get(1);
    assertEquals(
        Outcome.CLAIM_LOST,
        store.markPublished(new PublishedAck("m1", m2.seq(), m1.lease(), k(1))));
    clock.advance(Duration.ofSeconds(1));
    Instant expiry = state("m1").leaseExpiresAt();
    assertEquals(
        Renewal.lost(Set.of("m1")),
        store.renew(List.of(new HeldLease("m1", m2.seq(), m1.lease())), LEASE));
    assertEquals(expiry, state("m1").leaseExpiresAt(), "a renewal naming another row's seq");
    assertEquals(MessageStatus.IN_FLIGHT, state("m1").status());
    assertEquals(MessageStatus.IN_FLIGHT, state("m2").status());
    assertEquals(Outcome.APPLIED, store.markPublished(ack(m1, 1)));
  }

  @Test
  void anAckWithASeqNoRowCanHaveIsALostClaimNotAnError() {
    add(EU, "m1", "a");
    ClaimedMessage m1 = claimOne("w1", "m1");
    for (long seq : new long[] {0, -1, Long.MIN_VALUE, Long.MAX_VALUE}) {
      PublishedAck ack = new PublishedAck("m1", seq, m1.lease(), k(1));
      assertEquals(Outcome.CLAIM_LOST, store.markPublished(ack), "seq " + seq);
      assertEquals(List.of(Outcome.CLAIM_LOST), store.markPublished(List.of(ack)), "seq " + seq);
    }
    assertEquals(MessageStatus.IN_FLIGHT, state("m1").status());
    assertEquals(Outcome.APPLIED, store.markPublished(ack(m1, 1)));
  }

  @Test
  void aLeaseNeverWritesARowOfAnotherInstanceKeyOrALegacyRow() {
    add(EU, "eu1", "a");
    ClaimedMessage eu1 = claimOne("w1", "eu1");
    Lease lease = eu1.lease();
    add(US, "us1", "a");
    insertLegacy(message("legacy1", "a"));
    for (String id : List.of("us1", "legacy1")) {
      holdElsewhere(id, lease, clock.now().plus(LEASE));
      RowState theirs = state(id);

      // An adopted table's legacy row has no seq (NULL): no ack can name it by one.
      long seq = theirs.seq() > 0 ? theirs.seq() : eu1.seq();
      PublishedAck ack = new PublishedAck(id, seq, lease, k(1));
      assertEquals(Outcome.CLAIM_LOST, store.markPublished(ack), id);
      assertEquals(List.of(Outcome.CLAIM_LOST), store.markPublished(List.of(ack)), id);
      assertEquals(
          Outcome.CLAIM_LOST, store.retryLater(id, lease, "SEND_FAILED", Duration.ZERO, 3), id);
      assertEquals(Outcome.CLAIM_LOST, store.markFailed(id, lease, "POISON"), id);
      assertEquals(Outcome.CLAIM_LOST, store.release(id, lease), id);
      HeldLease held = new HeldLease(id, seq, lease);
      assertEquals(List.of(), store.giveBack(List.of(held)), id);
      assertEquals(EndedLeases.ended(List.of()), store.expireLeases(List.of(held)), id);
      clock.advance(Duration.ofSeconds(1));
      assertEquals(
          Renewal.lost(Set.of(id)), store.renew(List.of(new HeldLease(id, seq, lease)), LEASE), id);
      assertEquals(theirs, state(id), id + " is not this store's to change");
    }
    assertEquals(
        Outcome.APPLIED, store.markPublished(new PublishedAck("eu1", eu1.seq(), lease, k(2))));
  }

  protected static KafkaCoordinates k(long offset) {
    return new KafkaCoordinates("t", 0, offset);
  }

  // ---------------------------------------------------------------- outcomes

  @Test
  void publishedRecordsCoordinatesAndReleasesTheLease() {
    add(EU, "m1", "a");
    ClaimedMessage m = claimOne("w1", "m1");
    assertEquals(
        Outcome.APPLIED,
        store.markPublished(
            new PublishedAck("m1", m.seq(), m.lease(), new KafkaCoordinates("x", 3, 42))));
    RowState s = state("m1");
    assertEquals(MessageStatus.PUBLISHED, s.status());
    assertEquals(new KafkaCoordinates("x", 3, 42), s.kafka());
    assertNull(s.leaseOwner());
    assertNull(s.leaseExpiresAt());
    assertEquals(1, s.leaseToken(), "the token is never reset");
    assertEquals(Outcome.CLAIM_LOST, store.markPublished(ack(m, 43)), "resolved once only");
  }

  @Test
  void batchPublishReportsEachRowSeparately() {
    add(EU, "m1", "a");
    add(EU, "m2", "b");
    add(EU, "m3", "c");
    List<ClaimedMessage> claimed = store.claim(request("w1", 3)).claimed();
    store.release("m3", claimed.get(2).lease());
    List<Outcome> outcomes =
        store.markPublished(claimed.stream().map(m -> ack(m, m.seq())).toList());
    assertEquals(List.of(Outcome.APPLIED, Outcome.APPLIED, Outcome.CLAIM_LOST), outcomes);
    assertEquals(MessageStatus.PUBLISHED, state("m2").status());
    assertEquals(MessageStatus.PENDING, state("m3").status());
  }

  @Test
  void aBatchJudgesEachAckByItsOwnLeaseEvenForOneRowAckedTwice() {
    add(EU, "m1", "a");
    add(EU, "m2", "b");
    List<ClaimedMessage> stale = store.claim(request("w1", 2)).claimed();
    stale.forEach(m -> store.release(m.messageId(), m.lease()));
    List<ClaimedMessage> current = store.claim(request("w1", 2)).claimed();

    List<Outcome> outcomes =
        store.markPublished(
            List.of(
                ack(current.get(0), 5),
                ack(stale.get(0), 4),
                ack(stale.get(1), 6),
                ack(current.get(1), 7),
                ack(current.get(1), 8)));
    assertEquals(
        List.of(
            Outcome.APPLIED,
            Outcome.CLAIM_LOST,
            Outcome.CLAIM_LOST,
            Outcome.APPLIED,
            Outcome.CLAIM_LOST),
        outcomes,
        "only the ack under the row's lease applies, and only once");
    assertEquals(k(5), state("m1").kafka());
    assertEquals(k(7), state("m2").kafka());
  }

  /**
   * With no row locked, a publish skipping locked rows judges each ack as a publish does: by its
   * own lease, once, and never a row of another key.
   */
  @Test
  void aPublishSkippingLockedRowsJudgesEachAckAsAPublishDoes() {
    add(EU, "m1", "a");
    add(EU, "m2", "b");
    add(US, "u1", "c");
    List<ClaimedMessage> stale = store.claim(request("w1", 2)).claimed();
    stale.forEach(m -> store.release(m.messageId(), m.lease()));
    List<ClaimedMessage> current = store.claim(request("w1", 2)).claimed();
    ClaimedMessage theirs = store.claim(request("w9", 1, Set.of(US))).claimed().get(0);

    List<Outcome> outcomes =
        store.markPublishedSkippingLocked(
            List.of(
                ack(current.get(0), 5),
                ack(stale.get(0), 4),
                ack(current.get(1), 7),
                ack(current.get(1), 8),
                new PublishedAck(
                    "u1", theirs.seq(), new Lease("w1", theirs.lease().token()), k(9))));
    assertEquals(
        List.of(
            Outcome.APPLIED,
            Outcome.CLAIM_LOST,
            Outcome.APPLIED,
            Outcome.CLAIM_LOST,
            Outcome.CLAIM_LOST),
        outcomes);
    assertEquals(k(5), state("m1").kafka());
    assertEquals(k(7), state("m2").kafka());
    assertEquals(MessageStatus.PUBLISHED, state("m2").status());
    assertEquals(MessageStatus.IN_FLIGHT, state("u1").status(), "another owner's: untouched");
  }

  @Test
  void aBatchAppliesTheRowsLeaseBesideAnAckOfAHigherTokenTheRowNeverHad() {
    add(EU, "m1", "a");
    ClaimedMessage m = claimOne("w1", "m1");
    Lease never = new Lease("w1", m.lease().token() + 1);
    assertEquals(
        List.of(Outcome.CLAIM_LOST, Outcome.APPLIED),
        store.markPublished(List.of(new PublishedAck("m1", m.seq(), never, k(1)), ack(m, 2))));
    assertEquals(k(2), state("m1").kafka());
  }

  @Test
  void retryChargesAnAttemptAndIsNotClaimableBeforeItIsDue() {
    add(EU, "m1", "a");
    ClaimedMessage m = claimOne("w1", "m1");
    assertEquals(
        Outcome.APPLIED,
        store.retryLater("m1", m.lease(), "SEND_FAILED", Duration.ofSeconds(10), 3));
    RowState s = state("m1");
    assertEquals(MessageStatus.AMBIGUOUS, s.status());
    assertEquals(1, s.attempts());
    assertEquals("SEND_FAILED", s.lastFailureCode());
    assertEquals(clock.now().plusSeconds(10), s.nextAttemptAt());
    assertNull(s.leaseOwner());

    clock.advance(Duration.ofSeconds(9));
    assertTrue(store.claim(request("w1", 10)).isEmpty());
    clock.advance(Duration.ofSeconds(1));
    assertEquals(List.of("m1"), ids(store.claim(request("w1", 10))));
  }

  @Test
  void theAttemptBudgetEndsInExhausted() {
    add(EU, "m1", "a");
    for (int attempt = 1; attempt <= 2; attempt++) {
      ClaimedMessage m = claimOne("w1", "m1");
      assertEquals(Outcome.APPLIED, store.retryLater("m1", m.lease(), "X", Duration.ZERO, 3));
    }
    ClaimedMessage m = claimOne("w1", "m1");
    assertEquals(Outcome.EXHAUSTED, store.retryLater("m1", m.lease(), "X", Duration.ZERO, 3));
    assertEquals(MessageStatus.EXHAUSTED, state("m1").status());
    assertEquals(3, state("m1").attempts());
    assertTrue(store.claim(request("w1", 10)).isEmpty());
    assertTrue(reclaim(request("w1", 10)).isEmpty());
  }

  @Test
  void failedIsPermanentWithAReasonCode() {
    add(EU, "m1", "a");
    ClaimedMessage m = claimOne("w1", "m1");
    assertEquals(Outcome.APPLIED, store.markFailed("m1", m.lease(), "PAYLOAD_TOO_LARGE"));
    assertEquals(MessageStatus.FAILED, state("m1").status());
    assertEquals("PAYLOAD_TOO_LARGE", state("m1").lastFailureCode());
    assertNull(state("m1").leaseOwner());
    clock.advance(Duration.ofDays(1));
    assertTrue(store.claim(request("w1", 10)).isEmpty());
  }

  @Test
  void reasonCodesAreCodesNotText() {
    add(EU, "m1", "a");
    ClaimedMessage m = claimOne("w1", "m1");
    assertThrows(
        IllegalArgumentException.class,
        () -> store.markFailed("m1", m.lease(), "connection to secret-host refused"));
    assertEquals(MessageStatus.IN_FLIGHT, state("m1").status());
  }

  /**
   * The rows an owner leased but does not hold (a claim whose result never arrived) are released,
   * and only those: not the rows it holds, nor another owner's, nor another instance key's. Due
   * again in order, no attempt charged, the lost claim's lease fenced off; a second release finds
   * nothing.
   */
  @Test
  void releasingWhatAnOwnerDoesNotHoldLeavesWhatItHolds() {
    String a = add(EU, "a", "agg-1");
    String b = add(EU, "b", "agg-1");
    String c = add(EU, "c", "agg-2");
    String o = add(EU, "o", "agg-3");
    String u = add(US, "u", "agg-4");
    ClaimedMessage held = store.claim(request("me", 1)).claimed().get(0);
    assertEquals(a, held.messageId());
    List<ClaimedMessage> lost = store.claim(request("me", 2)).claimed();
    assertEquals(List.of(b, c), lost.stream().map(ClaimedMessage::messageId).toList());
    store.claim(request("other", 1));
    store.claim(request("me", 1, Set.of(US)));

    assertEquals(List.of(b, c), releaseUnheld("me", List.of(held.seq()), 0));

    assertEquals(MessageStatus.PENDING, state(b).status());
    assertNull(state(b).leaseOwner());
    assertEquals(0, state(b).attempts(), "a release charges nothing");
    assertEquals(Outcome.CLAIM_LOST, store.markPublished(ack(lost.get(0), 1)), "fenced off");
    assertEquals("me", state(a).leaseOwner(), "held: untouched");
    assertEquals("other", state(o).leaseOwner(), "another owner's: untouched");
    assertEquals("me", state(u).leaseOwner(), "another instance key's: untouched");
    assertEquals(List.of(), releaseUnheld("me", List.of(held.seq()), 0));
    assertEquals(Outcome.APPLIED, store.markPublished(ack(held, 1)));
    assertEquals(List.of(b, c), ids(store.claim(request("me", 10))));
  }

  /**
   * A release reads one page of the key's rows awaiting delivery at a time, in seq order after the
   * seq given, and releases the owner's unheld rows among them only: another instance key's rows,
   * published and parked rows are neither read nor counted, and a page that read fewer rows than
   * allowed is the last.
   */
  @Test
  void releasingUnheldRowsReadsOnePageOfTheKeysBacklogAtATime() {
    String a = add(EU, "a", "agg-1");
    add(US, "u", "agg-2");
    String p = add(EU, "p", "agg-3");
    String b = add(EU, "b", "agg-4");
    String f = add(EU, "f", "agg-5");
    String c = add(EU, "c", "agg-6");
    String d = add(EU, "d", "agg-7");
    ClaimedMessage toPublish = claimOne("other", a);
    assertEquals(Outcome.APPLIED, store.markPublished(ack(toPublish, 1)));
    assertEquals(List.of(p, b), ids(store.claim(request("me", 2))));
    ClaimedMessage toPark = claimOne("other", f);
    assertEquals(Outcome.APPLIED, store.markFailed(f, toPark.lease(), "POISON"));
    assertEquals(List.of(c, d), ids(store.claim(request("me", 2))));
    store.claim(request("me", 1, Set.of(US)));
    long held = state(p).seq();

    UnheldPage first = store.releaseUnheld(EU, "me", List.of(held), 0, Long.MIN_VALUE, 2);
    assertEquals(List.of(b), first.released(), "p held; a published, u another key's: unread");
    assertEquals(state(b).seq(), first.lastSeq());
    assertTrue(first.full());
    assertEquals(MessageStatus.IN_FLIGHT, state(c).status(), "not on this page");

    UnheldPage second = store.releaseUnheld(EU, "me", List.of(held), 0, first.lastSeq(), 2);
    assertEquals(List.of(c, d), second.released(), "the parked row f is not read");
    assertEquals(state(d).seq(), second.lastSeq());
    assertTrue(second.full());

    UnheldPage last = store.releaseUnheld(EU, "me", List.of(held), 0, second.lastSeq(), 2);
    assertEquals(List.of(), last.released());
    assertEquals(second.lastSeq(), last.lastSeq(), "none read: it starts where it was asked to");
    assertFalse(last.full());
    assertEquals(MessageStatus.IN_FLIGHT, state(p).status());
    assertEquals("me", state("u").leaseOwner(), "another instance key's: untouched");
    assertEquals(List.of(b, c), ids(store.claim(request("me", 2))), "due again, in order");
  }

  /**
   * Exactly once, a recovery reads one page of a key's rows awaiting delivery at a time, in seq
   * order from where the last page ended: published rows and another key's are neither read nor
   * counted, a due row is read and left, rows of later pages stay leased, and a page that read
   * fewer rows than allowed is the last.
   */
  @Test
  void aRecoveryReadsOnePageOfTheKeysBacklogAtATime() {
    String p = add(EU, "p", "agg-0");
    assertEquals(Outcome.APPLIED, store.markPublished(ack(claimOne("other", p), 1)));
    String a = add(EU, "a", "agg-1");
    add(US, "u", "agg-2");
    String b = add(EU, "b", "agg-3");
    String c = add(EU, "c", "agg-4");
    String d = add(EU, "d", "agg-5");
    long old = store.newEpoch();
    assertEquals(
        List.of(a, b, c, d), ids(store.claim(exactlyOnce("old", 10, old, 1, ALL_BUCKETS))));
    store.claim(request("old", 1, Set.of(US)).exactlyOnce(old, 1, ALL_BUCKETS));
    String e = add(EU, "e", "agg-6"); // due, never claimed
    RecoveryRequest recovery =
        new RecoveryRequest(Set.of(EU), ALL_BUCKETS, store.newEpoch(), List.of(), false);

    RecoveryPage first = store.recover(recovery, EU, Long.MIN_VALUE, 2);
    assertEquals(
        List.of(a, b),
        first.settled().released().stream().sorted().toList(),
        "p published, u another key's");
    assertEquals(state(b).seq(), first.lastSeq());
    assertTrue(first.full());
    assertEquals(MessageStatus.IN_FLIGHT, state(c).status(), "not on this page");

    RecoveryPage second = store.recover(recovery, EU, first.lastSeq(), 2);
    assertEquals(List.of(c, d), second.settled().released().stream().sorted().toList());
    assertTrue(second.full());

    RecoveryPage third = store.recover(recovery, EU, second.lastSeq(), 2);
    assertTrue(third.settled().isEmpty(), "e read, due: left alone");
    assertEquals(state(e).seq(), third.lastSeq());
    assertFalse(third.full());

    RecoveryPage none = store.recover(recovery, EU, third.lastSeq(), 2);
    assertEquals(third.lastSeq(), none.lastSeq(), "none read: it starts where it was asked to");
    assertFalse(none.full());
    assertEquals("old", state("u").leaseOwner(), "another instance key's: untouched");
    assertEquals(
        "instance key '" + US + "' is not one of the recovery's keys",
        assertThrows(
                IllegalArgumentException.class,
                () -> store.recover(recovery, US, Long.MIN_VALUE, 2),
                "only a key of the request")
            .getMessage());
  }

  /**
   * Exactly once, rows of batches handed to Connect stay leased though not held (their PUBLISHED
   * write lost by the database after Kafka committed them: only recovery may settle them); rows of
   * later batches go back.
   */
  @Test
  void exactlyOnceReleasingLeavesTheRowsOfBatchesHandedToConnect() {
    String a = add(EU, "a", "agg-1");
    String b = add(EU, "b", "agg-2");
    long epoch = store.newEpoch();
    ClaimedMessage handed =
        store.claim(exactlyOnce("me", 1, epoch, 1, ALL_BUCKETS)).claimed().get(0);
    assertEquals(a, handed.messageId());
    assertEquals(List.of(b), ids(store.claim(exactlyOnce("me", 1, epoch, 2, ALL_BUCKETS))));

    assertEquals(List.of(b), releaseUnheld("me", List.of(), 1));

    assertEquals(MessageStatus.IN_FLIGHT, state(a).status(), "batch 1 was handed over");
    assertEquals("me", state(a).leaseOwner());
    assertEquals(MessageStatus.PENDING, state(b).status());
    assertEquals(List.of(a), releaseUnheld("me", List.of(), 0));
  }

  /**
   * Rows of a claim given back by their seqs and leases (past the task's byte budget): due again,
   * no attempt charged, the claim's lease fenced off; a row no longer under the lease given (taken
   * over, or already given back), another row of the same owner, and a seq that does not hold the
   * message id are left as they are.
   */
  @Test
  void givingBackTakesOnlyTheRowsNamedStillUnderTheirLease() {
    String a = add(EU, "a", "agg-1");
    String b = add(EU, "b", "agg-2");
    String c = add(EU, "c", "agg-3");
    List<ClaimedMessage> claimed = store.claim(request("me", 3)).claimed();
    ClaimedMessage rowA = claimed.get(0);
    ClaimedMessage rowB = claimed.get(1);
    ClaimedMessage rowC = claimed.get(2);
    assertEquals(List.of(a, b, c), claimed.stream().map(ClaimedMessage::messageId).toList());

    assertEquals(
        List.of(b),
        store.giveBack(
            List.of(
                new HeldLease(b, rowB.seq(), rowB.lease()),
                new HeldLease(c, rowC.seq(), new Lease("me", rowC.lease().token() + 1)),
                new HeldLease(a, rowC.seq(), rowA.lease()))));

    assertEquals(MessageStatus.PENDING, state(b).status());
    assertNull(state(b).leaseOwner());
    assertEquals(0, state(b).attempts(), "a give-back charges nothing");
    assertEquals(Outcome.CLAIM_LOST, store.markPublished(ack(rowB, 1)), "fenced off");
    assertEquals("me", state(a).leaseOwner(), "a seq that does not hold the id: untouched");
    assertEquals("me", state(c).leaseOwner(), "another token: untouched");
    assertEquals(List.of(), store.giveBack(List.of(new HeldLease(b, rowB.seq(), rowB.lease()))));
    assertEquals(Outcome.APPLIED, store.markPublished(ack(rowA, 1)));
    assertEquals(List.of(b), ids(store.claim(request("me", 10))));
  }

  /**
   * With nothing held, every row leased to the owner goes back; a legacy row (no instance key)
   * leased under the same owner's name is never touched.
   */
  @Test
  void releasingWithNothingHeldTakesEveryRowOfTheOwnerButNeverALegacyRow() {
    String a = add(EU, "a", "agg-1");
    insertLegacy(message("legacy", "agg-2"));
    store.claim(request("me", 10));
    holdElsewhere("legacy", new Lease("me", 1), clock.now().plus(LEASE));

    assertEquals(List.of(a), releaseUnheld("me", List.of(), 0));

    assertEquals(MessageStatus.PENDING, state(a).status());
    assertEquals("me", state("legacy").leaseOwner(), "a legacy row stays as it is");
  }

  /**
   * A stopping task's leases end now, and nothing else changes: the rows are abandoned rows at once
   * (reclaimed alone), their tokens kept (the store still accepts an acknowledgement, though the
   * stopping instance writes none after this). Only rows in flight under the lease named: another
   * owner's row, another instance key's and a legacy row named under leases they are not held under
   * are never touched.
   */
  @Test
  void expiringLeasesAbandonsTheirRowsAtOnceAndKeepsTheirTokens() {
    String a = add(EU, "a", "agg-1");
    String b = add(EU, "b", "agg-2");
    String o = add(EU, "o", "agg-3");
    String u = add(US, "u", "agg-4");
    insertLegacy(message("legacy", "agg-5"));
    List<ClaimedMessage> mine = store.claim(request("me", 2)).claimed();
    ClaimedMessage others = store.claim(request("other", 1)).claimed().get(0);
    ClaimedMessage otherKeys = store.claim(request("me", 1, Set.of(US))).claimed().get(0);
    holdElsewhere("legacy", new Lease("me", 1), clock.now().plus(LEASE));
    Lease notOthers = new Lease("me", others.lease().token());

    assertEquals(
        EndedLeases.ended(List.of(a, b)),
        store.expireLeases(
            List.of(
                mine.get(0).heldLease(),
                mine.get(1).heldLease(),
                new HeldLease(o, others.seq(), notOthers),
                new HeldLease(u, otherKeys.seq(), new Lease("me", otherKeys.lease().token() + 1)),
                new HeldLease("legacy", state("legacy").seq(), new Lease("me", 1)))));

    assertEquals(clock.now(), state(a).leaseExpiresAt());
    assertEquals(MessageStatus.IN_FLIGHT, state(a).status());
    assertEquals(mine.get(0).lease().token(), state(a).leaseToken(), "token kept");
    assertEquals(0, state(a).attempts());
    assertEquals(clock.now().plus(LEASE), state(o).leaseExpiresAt(), "another owner's: untouched");
    assertEquals(clock.now().plus(LEASE), state(u).leaseExpiresAt(), "another token: untouched");
    assertEquals(clock.now().plus(LEASE), state("legacy").leaseExpiresAt(), "legacy: untouched");
    assertEquals(
        EndedLeases.ended(List.of()),
        store.expireLeases(List.of(mine.get(0).heldLease(), mine.get(1).heldLease())),
        "idempotent");

    assertEquals(Outcome.APPLIED, store.markPublished(ack(mine.get(1), 1)), "a late ack counts");
    assertEquals(List.of(a), ids(reclaim(request("next", 10))), "reclaimed alone");
  }

  /**
   * Looking for abandoned rows changes nothing and sees only the request's own instance keys: an
   * expired lease of another key or of a legacy row is not one, nor a live lease, nor (ordered) a
   * row whose aggregate waits for an earlier row held elsewhere.
   */
  @Test
  void lookingForAbandonedRowsSeesOnlyOwnKeysAndChangesNothing() {
    String u = add(US, "u", "agg-1");
    insertLegacy(message("legacy", "agg-2"));
    store.claim(request("gone", 1, Set.of(US)));
    holdElsewhere("legacy", new Lease("gone", 1), clock.now().plus(LEASE));
    String held = add(EU, "held", "agg-3");
    store.claim(request("live", 1));
    String later = add(EU, "later", "agg-3");
    holdElsewhere(later, new Lease("gone", 7), clock.now().plus(LEASE));
    holdElsewhere(held, new Lease("live", 1), clock.now().plus(LEASE.multipliedBy(3)));
    clock.advance(LEASE.plusSeconds(1));

    RowState before = state(later);
    assertFalse(store.hasAbandoned(request("me", 10)), "waits for its aggregate's held row");
    assertEquals(before, state(later), "nothing changed");
    assertEquals(List.of(u), ids(reclaim(request("me", 10, Set.of(US)))), "another key's: its own");
    ClaimRequest unordered = new ClaimRequest("me", Set.of(EU), 10, LEASE, 3, false);
    assertTrue(store.hasAbandoned(unordered), "unordered: no aggregate to wait for");
    assertEquals(before, state(later), "a look that finds one changes nothing either");
    assertEquals(List.of(later), ids(reclaim(unordered)));
  }

  /**
   * An ordered look, like the claim, lets the asker's own live lease on an earlier row of the
   * aggregate pass (it is the asker's to send first), and no one else's.
   */
  @Test
  void anOrderedLookPassesOnlyTheAskersOwnEarlierRow() {
    String mine = add(EU, "mine", "agg-1");
    store.claim(request("me", 1));
    String later = add(EU, "later", "agg-1");
    holdElsewhere(later, new Lease("gone", 3), clock.now().plus(LEASE));
    holdElsewhere(mine, new Lease("me", 1), clock.now().plus(LEASE.multipliedBy(3)));
    clock.advance(LEASE.plusSeconds(1));

    assertFalse(store.hasAbandoned(request("other", 10)), "another owner's row comes first");
    assertEquals(List.of(later), ids(reclaim(request("me", 10))));
  }

  /**
   * A publish retried after its reply was lost finds its rows gone; the store tells which of them
   * were published under the ack's own lease and Kafka coordinates (by the earlier attempt) and
   * which otherwise (a lost claim).
   */
  @Test
  void aPublishedRowIsKnownByTheLeaseThatPublishedIt() {
    add(EU, "a", "agg-1");
    add(EU, "b", "agg-2");
    add(US, "u", "agg-3");
    ClaimedMessage a = claimOne("w1", "a");
    ClaimedMessage b = claimOne("w1", "b");
    ClaimedMessage u = store.claim(request("w1", 1, Set.of(US))).claimed().get(0);
    assertEquals(
        List.of(Outcome.APPLIED, Outcome.APPLIED),
        store.markPublished(List.of(ack(a, 1), ack(u, 3))));
    clock.advance(LEASE.plusSeconds(1));
    ClaimedMessage bAgain = reclaim(request("w2", 1)).claimed().get(0);
    assertEquals(Outcome.APPLIED, store.markPublished(ack(bAgain, 2)));

    assertEquals(
        Set.of("a"),
        store.publishedUnderOwnLease(List.of(ack(a, 1), ack(b, 2))),
        "b was published under w2's lease, not w1's");
    assertEquals(
        Set.of(),
        store.publishedUnderOwnLease(List.of(ack(a, 7))),
        "same lease, other Kafka coordinates: another owner's publish under a reused token");
    assertEquals(Set.of(), store.publishedUnderOwnLease(List.of()));
  }

  /** Exactly once, one epoch: a (claim batch 1) parked PAYLOAD_TOO_LARGE, b (batch 2) in flight. */
  private record ParkedAndInFlight(long epoch, ClaimedMessage parked, ClaimedMessage inFlight) {}

  private ParkedAndInFlight parkedAndInFlight() {
    add(EU, "a", "agg-1");
    add(EU, "b", "agg-2");
    long epoch = store.newEpoch();
    ClaimedMessage a = store.claim(exactlyOnce("w1", 1, epoch, 1, ALL_BUCKETS)).claimed().get(0);
    ClaimedMessage b = store.claim(exactlyOnce("w1", 1, epoch, 2, ALL_BUCKETS)).claimed().get(0);
    assertEquals(Outcome.APPLIED, store.markFailed("a", a.lease(), "PAYLOAD_TOO_LARGE"));
    return new ParkedAndInFlight(epoch, a, b);
  }

  /**
   * An exactly-once park retried after its reply was lost finds its row gone; the store tells
   * whether the row was parked under the park's own token, reason and claim position (by the
   * earlier attempt) or otherwise (a lost claim). The token alone is not enough: a claim lost in an
   * asynchronous failover is claimed again under the same token, by another instance's epoch.
   */
  @Test
  void aParkedRowIsKnownByTheLeaseReasonAndPositionThatParkedIt() {
    ParkedAndInFlight rows = parkedAndInFlight();
    long epoch = rows.epoch();
    ClaimedMessage a = rows.parked();
    ClaimedMessage b = rows.inFlight();
    String reason = "PAYLOAD_TOO_LARGE";
    Lease otherToken = new Lease("w1", a.lease().token() + 1);

    assertTrue(parkedUnderOwnLease("a", a.lease(), reason, epoch, 1));
    assertFalse(parkedUnderOwnLease("a", a.lease(), "TOPIC_NOT_ALLOWED", epoch, 1), "reason");
    assertFalse(parkedUnderOwnLease("a", otherToken, reason, epoch, 1), "another token");
    assertFalse(
        parkedUnderOwnLease("a", a.lease(), reason, epoch + 1, 1),
        "the same token under another instance's epoch");
    assertFalse(parkedUnderOwnLease("a", a.lease(), reason, epoch, 2), "another claim");
    assertFalse(parkedUnderOwnLease("b", b.lease(), reason, epoch, 2), "b is in flight");
    assertFalse(parkedUnderOwnLease("missing", a.lease(), reason, epoch, 1));
  }

  /**
   * Exactly once, a parked row's dead-letter record leaves in its batch's transaction: once Kafka
   * committed it, its position goes into the row as its park left it (token, claim position, no
   * position yet), never into a row that changed since or is still in flight.
   */
  @Test
  void aCommittedDeadLetterCopysPositionGoesOnlyIntoTheRowItsParkLeft() {
    ParkedAndInFlight rows = parkedAndInFlight();
    long epoch = rows.epoch();
    ClaimedMessage a = rows.parked();
    ClaimedMessage b = rows.inFlight();
    KafkaCoordinates copy = new KafkaCoordinates("dlq", 0, 17);
    long token = a.lease().token();

    assertFalse(recordDeadLetterCopy("a", token + 1, epoch, 1, copy), "another token");
    assertFalse(recordDeadLetterCopy("a", token, epoch + 1, 1, copy), "another epoch");
    assertFalse(recordDeadLetterCopy("a", token, epoch, 2, copy), "another claim");
    assertFalse(recordDeadLetterCopy("b", b.lease().token(), epoch, 2, copy), "b is in flight");
    assertNull(state("a").kafka());

    assertTrue(recordDeadLetterCopy("a", token, epoch, 1, copy));
    assertEquals(copy, state("a").kafka());
    assertEquals(MessageStatus.FAILED, state("a").status());
    assertFalse(
        recordDeadLetterCopy("a", token, epoch, 1, new KafkaCoordinates("dlq", 0, 18)),
        "recorded once");
    assertEquals(copy, state("a").kafka());
    assertNull(state("b").kafka());
  }

  /**
   * ... also several in one statement, each judged on its own, answered in the order asked: a
   * position for a row under another seq than its own, or a second one for a row, is not recorded.
   */
  @Test
  void deadLetterPositionsAreRecordedTogetherEachOnlyWhereItsParkLeftItsRow() {
    ParkedAndInFlight rows = parkedAndInFlight();
    long epoch = rows.epoch();
    ClaimedMessage a = rows.parked();
    ClaimedMessage b = rows.inFlight();
    KafkaCoordinates copy = new KafkaCoordinates("dlq", 0, 17);
    KafkaCoordinates another = new KafkaCoordinates("dlq", 0, 18);
    long token = a.lease().token();

    List<Boolean> recorded =
        store.recordDeadLetterCopies(
            List.of(
                new DeadLetterCopy("b", b.seq(), b.lease().token(), epoch, 2, copy),
                new DeadLetterCopy("a", b.seq(), token, epoch, 1, copy),
                new DeadLetterCopy("a", a.seq(), token, epoch, 1, copy),
                new DeadLetterCopy("a", a.seq(), token, epoch, 1, another)));

    assertEquals(List.of(false, false), recorded.subList(0, 2), "in flight; another row's seq");
    assertEquals(1, recorded.stream().filter(r -> r).count(), "once: " + recorded);
    assertEquals(recorded.get(2) ? copy : another, state("a").kafka());
    assertNull(state("b").kafka());
    assertEquals(List.of(), store.recordDeadLetterCopies(List.of()));
  }

  /**
   * Two rows parked by one claim share its token (tokens count per row), epoch and batch: a
   * position is recorded only in the row its message id and seq both name.
   */
  @Test
  void aDeadLetterPositionGoesIntoTheRowItsIdNamesNotAnotherOfTheSameClaim() {
    add(EU, "a", "agg-1");
    add(EU, "c", "agg-2");
    long epoch = store.newEpoch();
    List<ClaimedMessage> claimed =
        store.claim(exactlyOnce("w1", 2, epoch, 1, ALL_BUCKETS)).claimed();
    assertEquals(2, claimed.size());
    for (ClaimedMessage row : claimed) {
      assertEquals(Outcome.APPLIED, store.markFailed(row.messageId(), row.lease(), "POISON"));
    }
    ClaimedMessage c = claimed.get(1);
    assertEquals(claimed.get(0).lease().token(), c.lease().token(), "the same token");
    KafkaCoordinates copy = new KafkaCoordinates("dlq", 0, 17);

    assertEquals(
        List.of(false, false),
        store.recordDeadLetterCopies(
            List.of(
                new DeadLetterCopy("a", c.seq(), c.lease().token(), epoch, 1, copy),
                new DeadLetterCopy("missing", c.seq(), c.lease().token(), epoch, 1, copy))));
    assertNull(state("a").kafka());
    assertNull(state("c").kafka());
  }

  /**
   * A parked row of another instance key is never taken for one this store parked, nor given a
   * dead-letter position, though its token, claim position and reason are the store's own; the same
   * park on an own key's row is. (A legacy row, without a key, cannot be parked at all: the table's
   * constraint refuses any change to it.)
   */
  @Test
  void anotherKeysParkedRowIsNeitherKnownAsParkedHereNorGivenAPosition() {
    add(EU, "mine", "agg-1");
    long epoch = store.newEpoch();
    store.claim(exactlyOnce("w1", 1, epoch, 1, ALL_BUCKETS)); // the store claims EU only
    add(EU, "ours", "agg-2");
    add(US, "theirs", "agg-3");
    String reason = "PAYLOAD_TOO_LARGE";
    Lease lease = new Lease("w1", 7);
    KafkaCoordinates copy = new KafkaCoordinates("dlq", 0, 3);
    parkElsewhere("ours", 7, epoch, 1, reason);
    parkElsewhere("theirs", 7, epoch, 1, reason);

    assertFalse(parkedUnderOwnLease("theirs", lease, reason, epoch, 1), "another key's");
    assertFalse(recordDeadLetterCopy("theirs", 7, epoch, 1, copy), "another key's");
    assertNull(state("theirs").kafka());

    assertTrue(parkedUnderOwnLease("ours", lease, reason, epoch, 1), "an own key's");
    assertTrue(recordDeadLetterCopy("ours", 7, epoch, 1, copy), "an own key's");
    assertEquals(copy, state("ours").kafka());
  }

  /**
   * A row that spent an attempt goes back AMBIGUOUS (its delivery may have happened), its attempts
   * kept, whichever way its lease is given up unsent: released, given back, or released as unheld.
   */
  @Test
  void aRowThatSpentAnAttemptGoesBackAmbiguousWhicheverWayItIsReleased() {
    add(EU, "m1", "a");
    ClaimedMessage first = claimOne("w1", "m1");
    assertEquals(
        Outcome.APPLIED, store.retryLater("m1", first.lease(), "SEND_FAILED", Duration.ZERO, 5));

    ClaimedMessage again = claimOne("w1", "m1");
    assertEquals(Outcome.APPLIED, store.release("m1", again.lease()));
    assertEquals(MessageStatus.AMBIGUOUS, state("m1").status(), "released");
    again = claimOne("w1", "m1");
    assertEquals(List.of("m1"), store.giveBack(List.of(again.heldLease())));
    assertEquals(MessageStatus.AMBIGUOUS, state("m1").status(), "given back");
    claimOne("w1", "m1");
    assertEquals(List.of("m1"), releaseUnheld("w1", List.of(), 0));
    assertEquals(MessageStatus.AMBIGUOUS, state("m1").status(), "released as unheld");
    assertEquals(1, state("m1").attempts(), "none charged by giving back");
    assertNull(state("m1").leaseOwner());
  }

  @Test
  void releaseGivesBackWithoutSpendingAnAttempt() {
    add(EU, "m1", "a");
    ClaimedMessage m = claimOne("w1", "m1");
    assertEquals(Outcome.APPLIED, store.release("m1", m.lease()));
    RowState s = state("m1");
    assertEquals(MessageStatus.PENDING, s.status());
    assertEquals(0, s.attempts());
    assertNull(s.leaseOwner());
    assertEquals(List.of("m1"), ids(store.claim(request("w2", 10))));
    assertEquals(2, state("m1").leaseToken());
  }

  @Test
  void renewalExtendsHeldLeasesAndReportsLostOnes() {
    add(EU, "m1", "a");
    add(EU, "m2", "b");
    List<ClaimedMessage> claimed = store.claim(request("w1", 2)).claimed();
    store.release("m2", claimed.get(1).lease());
    clock.advance(Duration.ofSeconds(20));
    Renewal renewal = store.renew(claimed.stream().map(ClaimedMessage::heldLease).toList(), LEASE);
    assertEquals(Renewal.lost(Set.of("m2")), renewal);
    assertEquals(clock.now().plus(LEASE), state("m1").leaseExpiresAt());
    clock.advance(Duration.ofSeconds(20));
    assertTrue(reclaim(request("w2", 10)).isEmpty(), "renewed lease still held");
  }

  // ---------------------------------------------------------------- attempts: poison vs outage

  @Test
  void aRowThatKeepsKillingItsWorkerEndsExhausted() {
    add(EU, "poison", "a");
    claimOne("w1", "poison");
    int reclaims = 0;
    while (true) {
      clock.advance(LEASE); // the worker died holding it
      ClaimResult r = reclaim(request("w" + (++reclaims + 1), 10));
      if (!r.exhausted().isEmpty()) {
        assertEquals(
            List.of(new ExhaustedMessage("poison", EU, "ABANDONED_IN_ISOLATION")), r.exhausted());
        break;
      }
      assertEquals(List.of("poison"), ids(r));
      assertTrue(reclaims < 10, "must end EXHAUSTED instead of crash-looping forever");
    }
    RowState s = state("poison");
    assertEquals(MessageStatus.EXHAUSTED, s.status());
    assertEquals("ABANDONED_IN_ISOLATION", s.lastFailureCode());
    assertEquals(3, s.attempts());
    assertNull(s.leaseOwner());
    // The first abandonment was not charged (a batch lost in a crash); three isolated ones were.
    assertEquals(4, reclaims);
  }

  @Test
  void workerOutagesNeverExhaustHealthyRows() {
    for (int i = 0; i < 4; i++) {
      add(EU, "m" + i, "agg" + i);
    }
    // Twenty crashes in a row, each losing a whole batch; budget 3.
    for (int crash = 0; crash < 20; crash++) {
      assertEquals(4, store.claim(request("batch" + crash, 10)).claimed().size());
      clock.advance(LEASE);
      // The restarted worker reclaims each row in isolation and delivers it.
      for (int i = 0; i < 4; i++) {
        ClaimResult r = reclaim(request("solo" + crash + "-" + i, 10));
        assertEquals(List.of(), r.exhausted());
        ClaimedMessage m = r.claimed().get(0);
        assertEquals(
            Outcome.APPLIED, store.release(m.messageId(), m.lease()), "isolated and survived");
      }
    }
    for (int i = 0; i < 4; i++) {
      assertEquals(0, state("m" + i).attempts(), "outages charge nothing");
      assertEquals(MessageStatus.PENDING, state("m" + i).status());
    }
    List<ClaimedMessage> last = store.claim(request("final", 10)).claimed();
    assertEquals(4, last.size());
    for (ClaimedMessage m : last) {
      assertEquals(Outcome.APPLIED, store.markPublished(ack(m, m.seq())));
    }
  }

  /**
   * A row parked by a claim (over a lowered budget) or by an exactly-once batch park counts as
   * parked as one parked by an outcome write does: the stores decide it differently (the parking
   * time against the status), so each way of parking is held to both counts here.
   */
  @Test
  void rowsParkedByAClaimOrABatchParkCountAsParked() {
    add(EU, "over-budget", "A");
    chargeTwoAttempts(EU, "over-budget", Duration.ZERO);
    assertEquals(1, store.claim(loweredBudget("w1", 1, false)).exhausted().size());
    add(EU, "poison", "B");
    long epoch = store.newEpoch();
    ClaimedMessage poison =
        store.claim(exactlyOnce("w2", 10, epoch, 1, ALL_BUCKETS)).claimed().get(0);
    assertEquals("poison", poison.messageId());
    assertEquals(
        List.of(Outcome.APPLIED),
        store.park(
            List.of(new ParkRequest("poison", poison.seq(), poison.lease(), "POISON", epoch, 1))));

    assertEquals(
        Map.of(MessageStatus.FAILED, 1L, MessageStatus.EXHAUSTED, 1L),
        store.countParked(Set.of(EU)));
    BacklogSnapshot eu = store.inspect(Set.of(EU), false);
    assertEquals(1, eu.count(MessageStatus.FAILED));
    assertEquals(1, eu.count(MessageStatus.EXHAUSTED));
  }

  /** Charges the oldest due row of {@code key} two retries under a budget of 10. */
  private void chargeTwoAttempts(String key, String id, Duration lastDelay) {
    ClaimRequest generous = new ClaimRequest("charger", Set.of(key), 1, LEASE, 10, true);
    ClaimedMessage first = store.claim(generous).claimed().get(0);
    assertEquals(id, first.messageId());
    store.retryLater(id, first.lease(), "DELIVERY_UNCONFIRMED", Duration.ZERO, 10);
    ClaimedMessage second = store.claim(generous).claimed().get(0);
    assertEquals(id, second.messageId());
    store.retryLater(id, second.lease(), "DELIVERY_UNCONFIRMED", lastDelay, 10);
  }

  private static ClaimRequest loweredBudget(String owner, int maxAttempts, boolean ordered) {
    return new ClaimRequest(owner, Set.of(EU), 10, LEASE, maxAttempts, ordered);
  }

  private void assertParkedForALoweredBudget(String id, int attempts, long token) {
    RowState s = state(id);
    assertEquals(MessageStatus.EXHAUSTED, s.status());
    assertEquals(ReasonCodes.ATTEMPTS_BUDGET_LOWERED, s.lastFailureCode());
    assertEquals(attempts, s.attempts(), "parking charges nothing");
    assertEquals(token, s.leaseToken(), "the token moves on, fencing any earlier lease");
    assertNull(s.leaseOwner());
    assertNull(s.leaseExpiresAt());
  }

  @Test
  void aLoweredBudgetParksOverBudgetRowsWhenDueAndTheirAggregateMovesOn() {
    add(EU, "a1", "A");
    chargeTwoAttempts(EU, "a1", Duration.ofSeconds(10));
    add(EU, "a2", "A");
    add(EU, "b1", "B");
    add(US, "us1", "A");
    chargeTwoAttempts(US, "us1", Duration.ZERO);
    RowState otherInstance = state("us1");

    // max.attempts lowered from 10 to 2: a1 has spent its budget. Until it is due it waits like
    // any retry, and its aggregate waits behind it.
    ClaimResult early = store.claim(loweredBudget("w1", 2, true));
    assertEquals(List.of("b1"), ids(early));
    assertEquals(List.of(), early.exhausted());

    clock.advance(Duration.ofSeconds(10));
    ClaimResult due = store.claim(loweredBudget("w2", 2, true));
    assertEquals(
        List.of(new ExhaustedMessage("a1", EU, ReasonCodes.ATTEMPTS_BUDGET_LOWERED)),
        due.exhausted());
    assertEquals(List.of("a2"), ids(due), "its successor is no longer blocked");
    assertParkedForALoweredBudget("a1", 2, 3);
    assertEquals(otherInstance, state("us1"), "another instance's row is never touched");

    assertTrue(store.claim(loweredBudget("w3", 10, true)).isEmpty(), "parked for good");
    clock.advance(LEASE.multipliedBy(2));
    assertEquals(List.of("a2"), ids(reclaim(loweredBudget("w3", 10, true))));
  }

  @Test
  void aLoweredBudgetParksOverBudgetRowsOfUnorderedClaimsToo() {
    add(EU, "a1", "A");
    chargeTwoAttempts(EU, "a1", Duration.ZERO);
    add(EU, "a2", "A");
    add(US, "us1", "A");
    chargeTwoAttempts(US, "us1", Duration.ZERO);
    RowState otherInstance = state("us1");

    ClaimResult r = store.claim(loweredBudget("w1", 1, false));
    assertEquals(
        List.of(new ExhaustedMessage("a1", EU, ReasonCodes.ATTEMPTS_BUDGET_LOWERED)),
        r.exhausted());
    assertEquals(List.of("a2"), ids(r));
    assertParkedForALoweredBudget("a1", 2, 3);
    assertEquals(otherInstance, state("us1"));
  }

  /**
   * An abandoned row already at or over a lowered budget is parked by the claim that would reclaim
   * it, as a claim parks a due one, not sent once more: charged nothing (it was not isolated).
   */
  @Test
  void aLoweredBudgetParksAnAbandonedRowToo() {
    add(EU, "a1", "A");
    chargeTwoAttempts(EU, "a1", Duration.ZERO);
    add(US, "us1", "A");
    chargeTwoAttempts(US, "us1", Duration.ZERO);
    RowState otherInstance = state("us1");
    assertEquals(List.of("a1"), ids(store.claim(loweredBudget("w1", 10, true))));
    clock.advance(LEASE.multipliedBy(2)); // its holder vanished

    ClaimResult r = reclaim(loweredBudget("w2", 2, true));

    assertEquals(List.of(), ids(r));
    assertEquals(
        List.of(new ExhaustedMessage("a1", EU, ReasonCodes.ATTEMPTS_BUDGET_LOWERED)),
        r.exhausted());
    assertParkedForALoweredBudget("a1", 2, 4);
    assertEquals(otherInstance, state("us1"));
    assertTrue(reclaim(loweredBudget("w3", 10, true)).isEmpty(), "parked for good");
  }

  /**
   * A claim for several instance keys takes the oldest due rows of them all, in seq order, whatever
   * their key (the PostgreSQL store reads each key's rows by its index, then keeps the first of
   * all); an aggregate that the limit cuts goes on, in order, with a later claim of its holder, and
   * waits for it in anyone else's. The abandoned-row claim takes the oldest expired row of them
   * all.
   */
  @Test
  void aClaimForSeveralKeysTakesTheOldestRowsOfThemAllInOrder() {
    add(US, "us1", "A");
    add(EU, "eu1", "A");
    add(US, "us2", "A");
    add(EU, "eu2", "B");
    add(US, "us3", "A");
    add(EU, "eu3", "A");
    Set<String> both = Set.of(EU, US);

    assertEquals(List.of("us1", "eu1", "us2"), ids(store.claim(request("w1", 3, both))));
    assertEquals(List.of("eu2"), ids(store.claim(request("w2", 3, both))));
    assertEquals(List.of("us3", "eu3"), ids(store.claim(request("w1", 3, both))));

    clock.advance(LEASE);
    assertEquals(List.of("us1"), ids(reclaim(request("w3", 10, both))));
    assertEquals(List.of("eu1"), ids(reclaim(request("w3", 10, both))));
  }

  /**
   * A claim over several keys whose oldest due rows wait for an earlier row of their aggregate
   * (held by another owner) still takes a full batch of the other key's rows: the PostgreSQL store
   * sizes each key's read by how many of the oldest claimable rows it has, and a quota counting the
   * held-back rows gave the other key only a margin (one row here).
   */
  @Test
  void aClaimForSeveralKeysWhoseOldestRowsAreHeldBackFillsItsBatchWithTheOthers() {
    add(EU, "a1", "A");
    add(EU, "a2", "A");
    add(EU, "a3", "A");
    add(EU, "a4", "A");
    add(EU, "a5", "A");
    add(US, "u1", "U1");
    add(US, "u2", "U2");
    add(US, "u3", "U3");
    add(US, "u4", "U4");
    claimOne("w1", "a1");

    assertEquals(
        List.of("u1", "u2", "u3", "u4"), ids(store.claim(request("w2", 4, Set.of(EU, US)))));
  }

  /**
   * Keys are sent to PostgreSQL as a text array: a key an array literal would read otherwise (NULL,
   * quotes, braces, a backslash, inner spaces) claims its own rows and only those, beside a key it
   * could be mistaken for.
   */
  @Test
  void keysThatAnArrayLiteralWouldMisreadClaimOnlyTheirOwnRows() {
    String nullWord = "NULL";
    String quoted = "a\"b {c} d\\";
    add(nullWord, "n1", "A");
    add(quoted, "q1", "A");
    add("a", "other1", "A");
    add("a\"b", "other2", "A");
    add("null", "other3", "A");

    assertEquals(
        List.of("n1", "q1"), ids(store.claim(request("w1", 10, Set.of(nullWord, quoted)))));
    assertEquals(List.of(), ids(store.claim(request("w1", 10, Set.of(nullWord, quoted)))));
    clock.advance(LEASE);
    assertEquals(List.of("n1"), ids(reclaim(request("w2", 10, Set.of(nullWord)))));
    assertEquals(List.of("q1"), ids(reclaim(request("w2", 10, Set.of(quoted)))));
  }

  @Test
  void normalClaimsNeverTakeAbandonedRows() {
    add(EU, "m1", "a");
    claimOne("w1", "m1");
    clock.advance(LEASE);
    assertTrue(store.claim(request("w2", 10)).isEmpty());
    assertEquals(List.of("m1"), ids(reclaim(request("w2", 10))));
  }

  // ---------------------------------------------------------------- per-aggregate order

  @Test
  void rowsOfOneAggregateAreClaimedTogetherInOrder() {
    add(EU, "a1", "A");
    add(EU, "b1", "B");
    add(EU, "a2", "A");
    add(EU, "a3", "A");
    assertEquals(List.of("a1", "b1", "a2", "a3"), ids(store.claim(request("w1", 10))));
  }

  @Test
  void aSuccessorWaitsWhileItsPredecessorIsHeldByAnotherOwner() {
    add(EU, "a1", "A");
    add(EU, "a2", "A");
    add(EU, "b1", "B");
    claimOne("w1", "a1");
    assertEquals(List.of("b1"), ids(store.claim(request("w2", 10))));
    // The same owner may pipeline: a2 follows a1 through the same producer.
    assertEquals(List.of("a2"), ids(store.claim(request("w1", 10))));
  }

  /**
   * An owner's lease that ends now no longer lets its successor through: held means a lease that
   * runs past now, in both stores, to the millisecond.
   */
  @Test
  void anOwnersLeaseEndingNowNoLongerPassesItsSuccessor() {
    add(EU, "a1", "A");
    claimOne("w1", "a1");
    add(EU, "a2", "A");
    clock.advance(LEASE.minusMillis(1));
    assertEquals(List.of("a2"), ids(store.claim(request("w1", 10))), "a1 still held");
    add(EU, "a3", "A");
    clock.advance(Duration.ofMillis(1)); // a1's lease ends now
    assertTrue(store.claim(request("w1", 10)).isEmpty(), "a3 waits: a1 no longer held");
  }

  @Test
  void aSuccessorWaitsForItsPredecessorsRetry() {
    add(EU, "a1", "A");
    add(EU, "a2", "A");
    ClaimedMessage a1 = claimOne("w1", "a1");
    store.retryLater("a1", a1.lease(), "SEND_FAILED", Duration.ofSeconds(10), 3);
    assertTrue(store.claim(request("w1", 10)).isEmpty(), "a2 waits behind the retry");
    clock.advance(Duration.ofSeconds(10));
    assertEquals(List.of("a1", "a2"), ids(store.claim(request("w2", 10))));
  }

  @Test
  void aSuccessorWaitsForAnAbandonedPredecessor() {
    add(EU, "a1", "A");
    add(EU, "a2", "A");
    claimOne("w1", "a1");
    clock.advance(LEASE);
    assertTrue(store.claim(request("w2", 10)).isEmpty());
    assertTrue(reclaim(request("w2", 10)).claimed().size() == 1);
    assertEquals(List.of("a2"), ids(store.claim(request("w2", 10))));
  }

  /**
   * Aggregate A's a1 due again (released), a2 waiting for its retry, a3 due; b1 of B due. The same
   * in the two tests below.
   */
  private void aDueHeadThenARetryInItsAggregate() {
    add(EU, "a1", "A");
    add(EU, "a2", "A");
    add(EU, "a3", "A");
    add(EU, "b1", "B");
    List<ClaimedMessage> held = store.claim(request("w1", 2)).claimed();
    assertEquals(List.of("a1", "a2"), ids(new ClaimResult(held, List.of())));
    store.retryLater("a2", held.get(1).lease(), "SEND_FAILED", Duration.ofSeconds(10), 3);
    assertEquals(Outcome.APPLIED, store.release("a1", held.get(0).lease()));
  }

  @Test
  void aDueEarlierRowInTheBatchDoesNotLiftABlockBehindIt() {
    aDueHeadThenARetryInItsAggregate();
    // a1 is due again, a2 waits for its retry, a3 is due: a3 must wait for a2, though a1 goes.
    assertEquals(List.of("a1", "b1"), ids(store.claim(request("w2", 10))));
  }

  /**
   * The same, with a claim no longer than the candidates: a3 takes a place in the claim's window
   * (its aggregate's first active row, a1, is due) and is dropped from it after, as a2 still blocks
   * it; nothing takes its place, so the batch comes out short and b1 waits for the next claim. Both
   * stores take it so (the in-memory one models PostgreSQL's window).
   */
  @Test
  void aCandidateDroppedForAnEarlierRowLeavesTheBatchShort() {
    aDueHeadThenARetryInItsAggregate();

    assertEquals(List.of("a1"), ids(store.claim(request("w2", 2))));
    assertEquals(List.of("b1"), ids(store.claim(request("w2", 2))));
  }

  @Test
  void aFailedOrExhaustedPredecessorNoLongerBlocks() {
    add(EU, "a1", "A");
    add(EU, "a2", "A");
    add(EU, "a3", "A");
    ClaimedMessage a1 = claimOne("w1", "a1");
    store.markFailed("a1", a1.lease(), "POISON");
    ClaimedMessage a2 = claimOne("w2", "a2");
    assertEquals(Outcome.EXHAUSTED, store.retryLater("a2", a2.lease(), "X", Duration.ZERO, 1));
    assertEquals(List.of("a3"), ids(store.claim(request("w3", 10))));
  }

  // ---------------------------------------------------------------- aggregate affinity

  private static ClaimRequest inShare(String owner, int limit, int slot, int slots) {
    return new ClaimRequest(
        owner, Set.of(EU), limit, LEASE, 3, true, new AggregateAffinity(slot, slots));
  }

  // ---------------------------------------------------------------- exactly-once

  protected static ClaimRequest exactlyOnce(
      String owner, int limit, long epoch, long batch, BucketShare share) {
    return request(owner, limit).exactlyOnce(epoch, batch, share);
  }

  protected static final BucketShare ALL_BUCKETS = new BucketShare(4, 0, 1);

  /** The committed position of {@code row}: the last record of its bucket in a transaction. */
  protected static CommittedPosition committedAt(ClaimedMessage row, long epoch, long batch) {
    return new CommittedPosition(
        row.instanceKey(), ALL_BUCKETS.bucketOf(row.aggregateHash()), epoch, batch, row.seq());
  }

  @Test
  void epochsIncrease() {
    long first = store.newEpoch();
    long second = store.newEpoch();
    assertTrue(second > first, first + " then " + second);
  }

  @Test
  void exactlyOnceSharesSplitTheBucketsIntoDisjointSetsThatCoverEveryRow() {
    for (int i = 0; i < 40; i++) {
      add(EU, "m" + i, "agg-" + i);
    }
    long epoch = store.newEpoch();
    Set<String> seen = new java.util.HashSet<>();
    for (int task = 0; task < 3; task++) {
      BucketShare share = new BucketShare(8, task, 3);
      ClaimResult result = store.claim(exactlyOnce("task-" + task, 100, epoch, 1, share));
      for (ClaimedMessage row : result.claimed()) {
        assertTrue(share.owns(share.bucketOf(row.aggregateHash())), row.messageId());
        assertTrue(seen.add(row.messageId()), "claimed twice: " + row.messageId());
      }
    }
    assertEquals(40, seen.size());
  }

  @Test
  void recoveryRecordsCoveredRowsPublishedAndReleasesTheRest() {
    String a = add(EU, "a", "agg-1");
    String b = add(EU, "b", "agg-1");
    String other = add(US, "u", "agg-1");
    long old = store.newEpoch();
    List<ClaimedMessage> claimed =
        store.claim(exactlyOnce("old", 10, old, 1, ALL_BUCKETS)).claimed();
    ClaimedMessage first = claimed.get(0);
    ClaimedMessage second = claimed.get(1);
    assertEquals(List.of(a, b), List.of(first.messageId(), second.messageId()));
    store.claim(
        new ClaimRequest("old", Set.of(US), 10, LEASE, 3, true)
            .exactlyOnce(old, 1, ALL_BUCKETS)); // another instance key's row, same epoch

    long next = store.newEpoch();
    Recovery recovery =
        Recoveries.whole(
            store,
            new RecoveryRequest(
                Set.of(EU), ALL_BUCKETS, next, List.of(committedAt(first, old, 1)), false));

    assertEquals(List.of(a), recovery.published());
    assertEquals(List.of(b), recovery.released());
    RowState published = state(a);
    assertEquals(MessageStatus.PUBLISHED, published.status());
    assertEquals(ReasonCodes.RECOVERED_FROM_OFFSETS, published.lastFailureCode());
    assertEquals(MessageStatus.PENDING, state(b).status());
    assertNull(state(b).leaseOwner());
    assertEquals(0, state(b).attempts(), "a release charges nothing");
    assertEquals(MessageStatus.IN_FLIGHT, state(other).status(), "other instance keys untouched");
    // The previous holder is fenced off on both rows.
    assertEquals(Outcome.CLAIM_LOST, store.markPublished(ack(first, 1)));
    assertEquals(Outcome.CLAIM_LOST, store.markPublished(ack(second, 2)));
    // The released row is due again, in order.
    assertEquals(List.of(b), ids(store.claim(exactlyOnce("new", 10, next, 1, ALL_BUCKETS))));
  }

  @Test
  void aPositionCoversOnlyItsOwnEpochAndWhatCameBeforeIt() {
    String a = add(EU, "a", "agg-1");
    String b = add(EU, "b", "agg-1");
    long old = store.newEpoch();
    ClaimedMessage first = store.claim(exactlyOnce("old", 1, old, 1, ALL_BUCKETS)).claimed().get(0);
    ClaimedMessage second =
        store.claim(exactlyOnce("old", 1, old, 2, ALL_BUCKETS)).claimed().get(0);
    assertEquals(List.of(a, b), List.of(first.messageId(), second.messageId()));
    long next = store.newEpoch();

    // Another epoch's position covers nothing of this one.
    CommittedPosition foreign = committedAt(second, old - 1, 9);
    Recovery none =
        Recoveries.whole(
            store, new RecoveryRequest(Set.of(EU), ALL_BUCKETS, next, List.of(foreign), false));
    assertEquals(List.of(), none.published());
    assertEquals(List.of(a, b), none.released());
  }

  /**
   * Rows leased under a later epoch than the recovering instance's (a database restored with rows
   * in flight restarts transaction ids lower) are left alone, and reported at start and by every
   * sweep once their leases have expired: nothing else will ever recover them. Not while a lease is
   * live (a successor's), and never rows of another instance key.
   */
  @Test
  void recoveryReportsRowsLeasedUnderALaterEpochAndLeavesThem() {
    String a = add(EU, "a", "agg-1");
    add(US, "u", "agg-1");
    long restored = store.newEpoch(); // the lower epoch a restored database hands out
    long before = store.newEpoch();
    ClaimedMessage held =
        store.claim(exactlyOnce("before", 1, before, 1, ALL_BUCKETS)).claimed().get(0);
    store.claim(
        new ClaimRequest("before", Set.of(US), 1, LEASE, 3, true)
            .exactlyOnce(before, 1, ALL_BUCKETS));

    Recovery live =
        Recoveries.whole(
            store, new RecoveryRequest(Set.of(EU), ALL_BUCKETS, restored, List.of(), false));
    assertEquals(Recovery.NONE, live, "a live lease of a later epoch is a successor's");

    clock.advance(LEASE.plusSeconds(1)); // nobody renews it
    Recovery start =
        Recoveries.whole(
            store, new RecoveryRequest(Set.of(EU), ALL_BUCKETS, restored, List.of(), false));
    assertEquals(List.of(a), start.laterEpoch());
    assertEquals(List.of(), start.released());
    assertEquals(MessageStatus.IN_FLIGHT, state(a).status(), "left alone");
    assertEquals(held.lease().token(), state(a).leaseToken());

    Recovery sweep =
        Recoveries.whole(
            store, new RecoveryRequest(Set.of(EU), ALL_BUCKETS, restored, List.of(), true));
    assertEquals(
        new Recovery(List.of(), List.of(), List.of(a), List.of(), List.of()),
        sweep,
        "a sweep finds it too");
    assertEquals(held.lease().token(), state(a).leaseToken(), "and leaves it alone");
  }

  @Test
  void aLaterBatchCoversAnEarlierOneOfItsBucket() {
    add(EU, "a", "agg-1");
    add(EU, "b", "agg-1");
    add(EU, "c", "agg-1");
    long old = store.newEpoch();
    store.claim(exactlyOnce("old", 1, old, 1, ALL_BUCKETS));
    ClaimedMessage second =
        store.claim(exactlyOnce("old", 1, old, 2, ALL_BUCKETS)).claimed().get(0);
    store.claim(exactlyOnce("old", 1, old, 3, ALL_BUCKETS));
    long next = store.newEpoch();
    Recovery recovery =
        Recoveries.whole(
            store,
            new RecoveryRequest(
                Set.of(EU), ALL_BUCKETS, next, List.of(committedAt(second, old, 2)), false));
    assertEquals(List.of("a", "b"), recovery.published());
    assertEquals(List.of("c"), recovery.released());
  }

  /**
   * A position covers its own bucket's rows only: rows of other buckets claimed in the same batch,
   * before it, were committed with positions of their own buckets, or not at all.
   */
  @Test
  void aPositionCoversNoRowOfAnotherBucket() {
    for (int i = 0; i < 12; i++) {
      add(EU, "m" + i, "agg-" + i);
    }
    long old = store.newEpoch();
    List<ClaimedMessage> claimed =
        store.claim(exactlyOnce("old", 100, old, 1, ALL_BUCKETS)).claimed();
    ClaimedMessage last = claimed.get(claimed.size() - 1);
    int bucket = ALL_BUCKETS.bucketOf(last.aggregateHash());
    List<String> ofItsBucket = new ArrayList<>();
    List<String> ofOthers = new ArrayList<>();
    for (ClaimedMessage row : claimed) {
      (ALL_BUCKETS.bucketOf(row.aggregateHash()) == bucket ? ofItsBucket : ofOthers)
          .add(row.messageId());
    }
    assertFalse(ofOthers.isEmpty(), "rows of other buckets, claimed before the last");

    Recovery recovery =
        Recoveries.whole(
            store,
            new RecoveryRequest(
                Set.of(EU),
                ALL_BUCKETS,
                store.newEpoch(),
                List.of(committedAt(last, old, 1)),
                false));

    assertEquals(ofItsBucket, recovery.published());
    assertEquals(ofOthers, recovery.released());
  }

  @Test
  void recoveryNeverTouchesRowsOfItsOwnOrAHigherEpochNorOtherBuckets() {
    for (int i = 0; i < 12; i++) {
      add(EU, "m" + i, "agg-" + i);
    }
    long mine = store.newEpoch();
    long newer = store.newEpoch();
    BucketShare share0 = new BucketShare(4, 0, 2);
    BucketShare share1 = new BucketShare(4, 1, 2);
    List<String> mineIds = ids(store.claim(exactlyOnce("mine", 100, mine, 1, share0)));
    List<String> newerIds = ids(store.claim(exactlyOnce("newer", 100, newer, 1, share1)));
    assertFalse(mineIds.isEmpty());
    assertFalse(newerIds.isEmpty());

    // "mine" recovers its buckets: its own rows stay; "newer"'s rows are in other buckets.
    assertTrue(
        Recoveries.whole(store, new RecoveryRequest(Set.of(EU), share0, mine, List.of(), false))
            .isEmpty());
    // A zombie of a lower epoch owning share1 must not take the newer owner's rows; it reports
    // them, as rows nothing it could do recovers.
    // A live successor's rows are not reported either: that is what a fenced instance starting late
    // sees.
    assertTrue(
        Recoveries.whole(store, new RecoveryRequest(Set.of(EU), share1, mine, List.of(), false))
            .isEmpty());
    for (String id : newerIds) {
      assertEquals("newer", state(id).leaseOwner());
    }
  }

  /**
   * Two connectors on one instance key: a recovery leaves the live leases of the other connector's
   * tasks alone, whatever their epoch (lower or higher than its own: epochs of two connectors say
   * nothing of each other; an at-least-once one's has none), and reports them, at start and at a
   * sweep; it releases its own connector's. Releasing them, each exactly-once start sent the other
   * connector's rows twice. Once such a lease has expired (at its expiry on the dot) it is released
   * like any, a later epoch's too, which is no restored database's row.
   */
  @Test
  void aRecoveryLeavesAnotherConnectorsLiveLeasesAlone() {
    String own = add(EU, "own", "agg-1");
    String theirs = add(EU, "theirs", "agg-2");
    String theirsUnfenced = add(EU, "theirs-unfenced", "agg-3");
    String theirsLater = add(EU, "theirs-later", "agg-4");
    long old = store.newEpoch();
    store.claim(exactlyOnce("orders/task-0/aaaa", 1, old, 1, ALL_BUCKETS));
    long other = store.newEpoch(); // the other connector's, yet below the recovering one's
    store.claim(exactlyOnce("payments/task-0/bbbb", 1, other, 1, ALL_BUCKETS));
    store.claim(request("orders-al/task-1/cccc", 1)); // a name this one's begins with
    long mine = store.newEpoch();
    store.claim(exactlyOnce("payments/task-1/dddd", 1, store.newEpoch(), 1, ALL_BUCKETS));
    long theirToken = state(theirs).leaseToken();
    List<String> foreign = List.of(theirs, theirsUnfenced, theirsLater);

    Recovery start = Recoveries.whole(store, ownedBy("orders/task-", mine, false));

    assertEquals(List.of(own), start.released());
    assertEquals(List.of(), start.foreignReleased(), "its own connector's row");
    assertEquals(foreign, start.foreign());
    assertEquals(List.of(), start.laterEpoch(), "a later epoch of another connector's");
    assertEquals("payments/task-0/bbbb", state(theirs).leaseOwner(), "left to its connector");
    assertEquals(theirToken, state(theirs).leaseToken());
    assertEquals("orders-al/task-1/cccc", state(theirsUnfenced).leaseOwner());
    assertEquals("payments/task-1/dddd", state(theirsLater).leaseOwner());
    Recovery live = Recoveries.whole(store, ownedBy("orders/task-", mine, true));
    assertEquals(foreign, live.foreign(), "a sweep finds them too");
    assertEquals(List.of(), live.released());

    clock.advance(LEASE); // nobody renews them: expired on the dot
    Recovery sweep = Recoveries.whole(store, ownedBy("orders/task-", mine, true));
    assertEquals(foreign, sweep.released(), "expired: anyone's to take");
    assertEquals(foreign, sweep.foreignReleased(), "named: that connector may have sent them");
    assertEquals(List.of(), sweep.foreign());
    assertEquals(List.of(), sweep.laterEpoch());
  }

  /**
   * A committed offset of this connector never records another connector's row PUBLISHED: epochs of
   * two connectors say nothing of each other, and an offset kept from before a database was
   * restored (a documented limit) can name the epoch and batch another connector's task took since.
   * Its expired row is released, which at worst sends it twice; recorded, it was lost.
   */
  @Test
  void aCommittedOffsetNamingAnotherConnectorsEpochDoesNotRecordItsRow() {
    String theirs = add(EU, "theirs", "agg-1");
    long other = store.newEpoch();
    ClaimedMessage claimed =
        store.claim(exactlyOnce("payments/task-0/bbbb", 1, other, 3, ALL_BUCKETS)).claimed().get(0);
    long mine = store.newEpoch();
    clock.advance(LEASE); // the other connector's task crashed before its commit

    Recovery sweep =
        Recoveries.whole(
            store,
            new RecoveryRequest(
                Set.of(EU),
                ALL_BUCKETS,
                mine,
                List.of(committedAt(claimed, other, 3)), // a restored history's stale offset
                true,
                ClaimRequest.UNLIMITED_ATTEMPTS,
                "orders/task-"));

    assertEquals(List.of(theirs), sweep.released());
    assertEquals(List.of(), sweep.published());
    assertEquals(MessageStatus.PENDING, state(theirs).status());
  }

  private static RecoveryRequest ownedBy(String ownOwners, long epoch, boolean expiredOnly) {
    return new RecoveryRequest(
        Set.of(EU),
        ALL_BUCKETS,
        epoch,
        List.of(),
        expiredOnly,
        ClaimRequest.UNLIMITED_ATTEMPTS,
        ownOwners);
  }

  @Test
  void laterRecoveriesReleaseOnlyExpiredLeasesOfLowerEpochs() {
    add(EU, "z", "agg-1");
    long zombie = store.newEpoch();
    long owner = store.newEpoch();
    store.claim(exactlyOnce("zombie", 10, zombie, 1, ALL_BUCKETS));
    RecoveryRequest sweep = new RecoveryRequest(Set.of(EU), ALL_BUCKETS, owner, List.of(), true);

    assertTrue(Recoveries.whole(store, sweep).isEmpty(), "a live lease is left alone");
    clock.advance(LEASE.plusMillis(1));
    assertEquals(List.of("z"), Recoveries.whole(store, sweep).released());
  }

  /**
   * A sweep releases a lower epoch's lease that expires exactly now (expired means not after now).
   */
  @Test
  void aSweepReleasesALeaseExpiredOnTheDot() {
    add(EU, "z", "agg-1");
    long zombie = store.newEpoch();
    long owner = store.newEpoch();
    store.claim(exactlyOnce("zombie", 10, zombie, 1, ALL_BUCKETS));
    RecoveryRequest sweep = new RecoveryRequest(Set.of(EU), ALL_BUCKETS, owner, List.of(), true);
    clock.advance(LEASE.minusMillis(1));
    assertTrue(Recoveries.whole(store, sweep).isEmpty(), "a millisecond to go");

    clock.advance(Duration.ofMillis(1));
    assertEquals(List.of("z"), Recoveries.whole(store, sweep).released());
  }

  /**
   * A recovery over two instance keys settles each key's rows, the pass moving from one key to the
   * next page by page (pages of one row here).
   */
  @Test
  void aRecoveryOverTwoKeysSettlesEachKeysRows() {
    add(EU, "e1", "agg-1");
    add(EU, "e2", "agg-2");
    add(US, "u1", "agg-3");
    add(US, "u2", "agg-4");
    long first = store.newEpoch();
    ClaimResult claimed =
        store.claim(request("first", 10, Set.of(EU, US)).exactlyOnce(first, 1, ALL_BUCKETS));
    assertEquals(4, claimed.claimed().size());
    long second = store.newEpoch();

    Recovery recovery =
        Recoveries.whole(
            store, new RecoveryRequest(Set.of(EU, US), ALL_BUCKETS, second, List.of(), false), 1);
    List<String> released = new ArrayList<>(recovery.released());
    released.sort(null);
    assertEquals(List.of("e1", "e2", "u1", "u2"), released);
    for (String id : List.of("e1", "e2", "u1", "u2")) {
      assertEquals(MessageStatus.PENDING, state(id).status(), id);
    }
  }

  /**
   * An unordered exactly-once claim over two keys takes only its share's buckets, of each key, in
   * insertion order; the other share takes the rest.
   */
  @Test
  void anUnorderedExactlyOnceClaimTakesOnlyItsBucketsAcrossKeys() {
    for (int i = 0; i < 20; i++) {
      add(i % 2 == 0 ? EU : US, "m" + i, "agg-" + i);
    }
    long epoch = store.newEpoch();
    Set<String> seen = new java.util.HashSet<>();
    for (int task = 0; task < 2; task++) {
      BucketShare share = new BucketShare(4, task, 2);
      ClaimResult result =
          store.claim(
              new ClaimRequest("task-" + task, Set.of(EU, US), 100, LEASE, 3, false)
                  .exactlyOnce(epoch, 1, share));
      long lastSeq = Long.MIN_VALUE;
      for (ClaimedMessage row : result.claimed()) {
        assertTrue(share.owns(share.bucketOf(row.aggregateHash())), row.messageId());
        assertTrue(seen.add(row.messageId()), "claimed twice: " + row.messageId());
        assertTrue(row.seq() > lastSeq, "in insertion order");
        lastSeq = row.seq();
      }
    }
    assertEquals(20, seen.size(), "every row, by one share or the other");
  }

  /**
   * A row whose instances ended twice without Kafka committing it may be why (a record that fails
   * its task aborts its whole batch's transaction): released as a suspect and claimed alone;
   * released again after that, it is charged, and past the budget parked EXHAUSTED instead of
   * failing every restarted task for ever. Its batch's other rows, once sent alone, are not
   * charged.
   */
  @Test
  void aRowReleasedAgainAfterItWasClaimedAloneIsChargedThenExhausted() {
    String a = add(EU, "a", "agg-1");
    String b = add(EU, "b", "agg-2");
    long first = store.newEpoch();
    store.claim(exactlyOnce("first", 10, first, 1, ALL_BUCKETS)); // a and b: its transaction aborts
    long second = store.newEpoch();
    Recovery once = recoverAt(second, 2);
    assertEquals(List.of(a, b), once.released());
    assertEquals(List.of(), once.suspects(), "one end without a commit: a crash, not a suspect");
    assertEquals(1, state(a).abandonedClaims());
    store.claim(exactlyOnce("second", 10, second, 1, ALL_BUCKETS)); // a and b again: aborted again

    long third = store.newEpoch();
    Recovery twice = recoverAt(third, 2);
    assertEquals(List.of(a, b), twice.released());
    assertEquals(List.of(seq(a), seq(b)), twice.suspects());
    assertEquals(0, state(a).attempts(), "released twice with others: charged nothing");
    assertEquals(2, state(a).abandonedClaims());

    ClaimResult alone = store.claim(suspect("third", third, 1, twice.suspects()));
    assertEquals(List.of(a), ids(alone), "one row, the first suspect");
    long fourth = store.newEpoch(); // a failed its task again, alone
    Recovery again = recoverAt(fourth, 2);
    assertEquals(List.of(a), again.released());
    assertEquals(List.of(seq(a)), again.suspects());
    assertEquals(1, state(a).attempts(), "released again after it was claimed alone: charged");
    assertEquals(MessageStatus.AMBIGUOUS, state(a).status());
    assertEquals(Outcome.CLAIM_LOST, store.markPublished(ack(alone.claimed().get(0), 1)));

    assertEquals(List.of(a), ids(store.claim(suspect("fourth", fourth, 1, List.of(seq(a))))));
    long fifth = store.newEpoch();
    Recovery exhausted = recoverAt(fifth, 2);
    assertEquals(List.of(a), exhausted.exhausted());
    assertEquals(List.of(), exhausted.released());
    assertEquals(List.of(), exhausted.suspects());
    RowState parked = state(a);
    assertEquals(MessageStatus.EXHAUSTED, parked.status());
    assertEquals(ReasonCodes.ABANDONED_IN_ISOLATION, parked.lastFailureCode());
    assertEquals(2, parked.attempts());
    assertNull(parked.leaseOwner());

    // b, still a suspect, goes alone and is published: never charged.
    ClaimResult next = store.claim(suspect("fifth", fifth, 1, List.of(seq(a), seq(b))));
    assertEquals(List.of(b), ids(next));
    assertEquals(0, state(b).attempts());
    assertEquals(Outcome.APPLIED, store.markPublished(ack(next.claimed().get(0), 3)));
    assertTrue(store.claim(suspect("fifth", fifth, 2, List.of(seq(a), seq(b)))).isEmpty());
  }

  @Test
  void aSuspectIsClaimedAloneOnlyWhenNoEarlierRowOfItsAggregateIsActive() {
    String a = add(EU, "a", "agg-1");
    String b = add(EU, "b", "agg-1");
    List<Long> suspects = releasedTwice(2);
    assertEquals(List.of(seq(a), seq(b)), suspects);
    long epoch = store.newEpoch(); // recoverAt took the ones before

    // b alone would overtake a, which is due: not claimable until a is settled or held.
    assertTrue(store.claim(suspect("owner", epoch, 1, List.of(seq(b)))).isEmpty());
    assertEquals(List.of(a), ids(store.claim(suspect("owner", epoch, 2, suspects))));
    // Held by the claimer, a no longer blocks b.
    assertEquals(List.of(b), ids(store.claim(suspect("owner", epoch, 3, List.of(seq(b))))));
    // Not a suspect, not due, or another key's: never taken.
    String c = add(EU, "c", "agg-3");
    String u = add(US, "u", "agg-4");
    assertTrue(
        store.claim(suspect("owner", epoch, 4, List.of(seq(a), seq(b), seq(c), seq(u)))).isEmpty());
  }

  /**
   * A suspect whose claim alone never returned (its reply lost), released before the next claim,
   * stays a suspect: claimed alone again, not in a batch it could fail unblamed.
   */
  @Test
  void aSuspectReleasedAfterItsClaimWasLostIsClaimedAloneAgain() {
    String a = add(EU, "a", "agg-1");
    add(EU, "b", "agg-2");
    List<Long> suspects = releasedTwice(2);
    long epoch = store.newEpoch();
    assertEquals(List.of(a), ids(store.claim(suspect("owner", epoch, 1, suspects))));

    assertEquals(List.of(a), releaseUnheld("owner", List.of(), 0), "its result never arrived");
    assertEquals(List.of(a), ids(store.claim(suspect("owner", epoch, 2, suspects))), "alone");
  }

  @Test
  void aSuspectClaimedWithDueRowsIsNotCharged() {
    String a = add(EU, "a", "agg-1");
    assertEquals(List.of(seq(a)), releasedTwice(2));
    long epoch = store.newEpoch();
    store.claim(exactlyOnce("owner", 10, epoch, 1, ALL_BUCKETS)); // with due rows, not alone
    Recovery recovery = recoverAt(store.newEpoch(), 2);
    assertEquals(List.of(a), recovery.released());
    assertEquals(0, state(a).attempts(), "it was not alone: not charged");
    assertEquals(3, state(a).abandonedClaims());
  }

  /** Every due row claimed and released by a recovery, twice: the seqs of the suspects. */
  private List<Long> releasedTwice(int maxAttempts) {
    store.claim(exactlyOnce("first", 10, store.newEpoch(), 1, ALL_BUCKETS));
    recoverAt(store.newEpoch(), maxAttempts);
    store.claim(exactlyOnce("second", 10, store.newEpoch(), 1, ALL_BUCKETS));
    return recoverAt(store.newEpoch(), maxAttempts).suspects();
  }

  protected Recovery recoverAt(long epoch, int maxAttempts) {
    return Recoveries.whole(
        store, new RecoveryRequest(Set.of(EU), ALL_BUCKETS, epoch, List.of(), false, maxAttempts));
  }

  protected static ClaimRequest suspect(String owner, long epoch, long batch, List<Long> seqs) {
    return request(owner, 10).isolatingSuspect(epoch, batch, ALL_BUCKETS, seqs);
  }

  protected long seq(String messageId) {
    return state(messageId).seq();
  }

  /**
   * Whether the store knows the row {@code messageId} (found by its seq, -1 for a row that does not
   * exist) as parked under this lease, reason and claim position.
   */
  private boolean parkedUnderOwnLease(
      String messageId, Lease lease, String reason, long epoch, long batch) {
    long seq = messageId.equals("missing") ? -1 : seq(messageId);
    return store
        .parkedUnderOwnLease(List.of(new ParkRequest(messageId, seq, lease, reason, epoch, batch)))
        .contains(messageId);
  }

  /** {@link OutboxStore#recordDeadLetterCopies} of one position, for the row by its own seq. */
  private boolean recordDeadLetterCopy(
      String messageId, long token, long epoch, long batch, KafkaCoordinates copy) {
    return store
        .recordDeadLetterCopies(
            List.of(new DeadLetterCopy(messageId, seq(messageId), token, epoch, batch, copy)))
        .get(0);
  }

  private static ParkRequest park(ClaimedMessage row, String reason, long epoch, long batch) {
    return new ParkRequest(row.messageId(), row.seq(), row.lease(), reason, epoch, batch);
  }

  /**
   * Exactly once, a batch's unpublishable rows are parked in one statement, each judged by its own
   * lease as a single park is: FAILED with its own reason, no Kafka position, the lease released
   * and the token and claim position kept (by which a retried park knows its own); a row whose
   * claim was lost, or a seq that names another row, is a lost claim and changes nothing.
   */
  @Test
  void parksOfABatchAreWrittenTogetherEachUnderItsOwnLease() {
    add(EU, "a", "agg-1");
    add(EU, "b", "agg-2");
    add(EU, "c", "agg-3");
    add(EU, "d", "agg-4");
    long epoch = store.newEpoch();
    List<ClaimedMessage> rows = store.claim(exactlyOnce("w1", 4, epoch, 1, ALL_BUCKETS)).claimed();
    assertEquals(4, rows.size());
    ClaimedMessage a = rows.get(0);
    ClaimedMessage b = rows.get(1);
    ClaimedMessage c = rows.get(2);
    ClaimedMessage d = rows.get(3);
    ParkRequest staleB =
        new ParkRequest(
            b.messageId(), b.seq(), new Lease("w1", b.lease().token() + 1), "POISON", epoch, 1);
    ParkRequest wrongSeq = new ParkRequest(c.messageId(), d.seq(), c.lease(), "POISON", epoch, 1);

    List<Outcome> outcomes =
        store.park(
            List.of(
                park(a, "PAYLOAD_TOO_LARGE", epoch, 1),
                staleB,
                wrongSeq,
                park(d, "TOPIC_NOT_ALLOWED", epoch, 1)));

    assertEquals(
        List.of(Outcome.APPLIED, Outcome.CLAIM_LOST, Outcome.CLAIM_LOST, Outcome.APPLIED),
        outcomes);
    assertEquals(MessageStatus.FAILED, state(a.messageId()).status());
    assertEquals("PAYLOAD_TOO_LARGE", state(a.messageId()).lastFailureCode());
    assertNull(state(a.messageId()).leaseOwner(), "the lease is released");
    assertNull(state(a.messageId()).kafka());
    assertEquals("TOPIC_NOT_ALLOWED", state(d.messageId()).lastFailureCode());
    assertEquals(MessageStatus.IN_FLIGHT, state(b.messageId()).status(), "a lost claim");
    assertEquals(MessageStatus.IN_FLIGHT, state(c.messageId()).status(), "another row's seq");
    assertEquals(
        Set.of(a.messageId(), d.messageId()),
        store.parkedUnderOwnLease(
            List.of(
                park(a, "PAYLOAD_TOO_LARGE", epoch, 1),
                park(b, "POISON", epoch, 1),
                park(d, "TOPIC_NOT_ALLOWED", epoch, 1))),
        "parked under their tokens and claim position");
    assertEquals(
        List.of(Outcome.CLAIM_LOST), store.park(List.of(park(a, "PAYLOAD_TOO_LARGE", epoch, 1))));
    assertEquals(List.of(), store.park(List.of()));
  }

  /** A batch of parks never touches a row of another instance key, whatever its lease. */
  @Test
  void parksOfABatchLeaveAnotherKeysRowsAlone() {
    add(US, "theirs", "agg-1");
    long epoch = store.newEpoch();
    Lease lease = new Lease("w1", 7);
    holdElsewhere("theirs", lease, clock.now().plus(LEASE));

    assertEquals(
        List.of(Outcome.CLAIM_LOST),
        store.park(List.of(new ParkRequest("theirs", seq("theirs"), lease, "POISON", epoch, 1))));
    assertEquals(MessageStatus.IN_FLIGHT, state("theirs").status());
  }

  @Test
  void anAtLeastOnceClaimForgetsTheExactlyOncePosition() {
    String a = add(EU, "a", "agg-1");
    long old = store.newEpoch();
    ClaimedMessage eos = store.claim(exactlyOnce("old", 1, old, 1, ALL_BUCKETS)).claimed().get(0);
    assertEquals(Outcome.APPLIED, store.release(a, eos.lease()));
    ClaimedMessage alo = claimOne("alo", a);
    long next = store.newEpoch();
    Recovery recovery =
        Recoveries.whole(
            store,
            new RecoveryRequest(
                Set.of(EU), ALL_BUCKETS, next, List.of(committedAt(eos, old, 1)), false));
    assertEquals(List.of(a), recovery.released(), "leased by at-least-once: not covered");
    assertEquals(Outcome.CLAIM_LOST, store.markPublished(ack(alo, 1)));
  }

  /**
   * Likewise an at-least-once reclaim of an exactly-once row whose lease ran out (the connector
   * switched modes with rows in flight): kept, the old position would let a later exactly-once
   * recovery record the row PUBLISHED from the old epoch's committed offsets, though the
   * at-least-once task had not sent it.
   */
  @Test
  void anAtLeastOnceReclaimOfAnAbandonedRowForgetsTheExactlyOncePosition() {
    String a = add(EU, "a", "agg-1");
    long old = store.newEpoch();
    ClaimedMessage eos = store.claim(exactlyOnce("old", 1, old, 1, ALL_BUCKETS)).claimed().get(0);
    clock.advance(LEASE.plusSeconds(1)); // its instance is gone
    ClaimedMessage alo = reclaim(request("alo", 10)).claimed().get(0);
    assertEquals(a, alo.messageId());
    Recovery recovery =
        Recoveries.whole(
            store,
            new RecoveryRequest(
                Set.of(EU),
                ALL_BUCKETS,
                store.newEpoch(),
                List.of(committedAt(eos, old, 1)),
                false));
    assertEquals(List.of(), recovery.published(), "leased by at-least-once: not covered");
  }

  /** Where each store keeps it: the exactly-once claim position and isolation of a row. */
  @Test
  void aClaimWritesItsPositionOnARowItParksAndAnAbandonedReclaimIsolatesAndForgetsIt() {
    String a = add(EU, "a", "agg-1");
    chargeTwoAttempts(EU, "a", Duration.ZERO);
    long epoch = store.newEpoch();
    ClaimRequest lowered =
        new ClaimRequest("eos", Set.of(EU), 10, LEASE, 1, true).exactlyOnce(epoch, 7, ALL_BUCKETS);
    assertEquals(1, store.claim(lowered).exhausted().size());
    RowState parked = state(a);
    assertEquals(MessageStatus.EXHAUSTED, parked.status());
    assertEquals(epoch, parked.leaseEpoch());
    assertEquals(7L, parked.claimBatch());
    assertFalse(parked.isolated());

    String b = add(EU, "b", "agg-2");
    store.claim(exactlyOnce("old", 10, epoch, 8, ALL_BUCKETS));
    assertEquals(8L, state(b).claimBatch());
    clock.advance(LEASE.plusSeconds(1));
    assertEquals(b, reclaim(request("alo", 10)).claimed().get(0).messageId());
    RowState reclaimed = state(b);
    assertTrue(reclaimed.isolated());
    assertNull(reclaimed.leaseEpoch());
    assertNull(reclaimed.claimBatch());
  }

  @Test
  void aPageOfFewerThanOneRowIsRefused() {
    RecoveryRequest request =
        new RecoveryRequest(Set.of(EU), ALL_BUCKETS, store.newEpoch(), List.of(), false);
    assertThrows(IllegalArgumentException.class, () -> store.recover(request, EU, 0, 0));
    assertThrows(
        IllegalArgumentException.class,
        () -> store.releaseUnheld(EU, "me", List.of(), 0, Long.MIN_VALUE, -1));
  }

  @Test
  void legacyRowsAreNeverRecovered() {
    insertLegacy(message("legacy", "agg-1"));
    holdElsewhere("legacy", new Lease("old", 1), clock.now().minusSeconds(1));
    long epoch = store.newEpoch();
    assertTrue(
        Recoveries.whole(
                store, new RecoveryRequest(Set.of(EU), ALL_BUCKETS, epoch, List.of(), false))
            .isEmpty());
    assertEquals("old", state("legacy").leaseOwner());
  }

  @Test
  void affinitiesSplitTheAggregatesIntoDisjointSharesThatCoverEveryRow() {
    Map<String, String> aggregateOf = new HashMap<>();
    for (int i = 0; i < 120; i++) {
      String aggregate = "agg-" + (i % 40);
      aggregateOf.put(add(EU, "m" + i, aggregate), aggregate);
    }
    add(US, "us-1", "agg-1");
    Map<String, Integer> shareOfAggregate = new HashMap<>();
    List<String> claimed = new ArrayList<>();
    for (int slot = 0; slot < 3; slot++) {
      ClaimResult result = store.claim(inShare("w" + slot, 1000, slot, 3));
      List<String> share = ids(result);
      assertFalse(share.isEmpty(), "share " + slot + " of 40 aggregates is empty");
      for (ClaimedMessage row : result.claimed()) {
        // The share is the hash each claimed row carries, as task code may compute it.
        assertEquals(slot, row.aggregateHash() % 3, row::messageId);
      }
      assertEquals(
          share.stream().sorted(java.util.Comparator.comparingInt(id -> seqOf(id))).toList(),
          share,
          "a share is claimed in insertion order");
      for (String id : share) {
        Integer before = shareOfAggregate.put(aggregateOf.get(id), slot);
        assertTrue(before == null || before == slot, "aggregate in two shares: " + id);
      }
      claimed.addAll(share);
    }
    assertEquals(120, claimed.size());
    assertEquals(aggregateOf.keySet(), Set.copyOf(claimed), "every row in exactly one share");
    assertEquals(
        MessageStatus.PENDING, state("us-1").status(), "another instance's row is untouched");
  }

  private static int seqOf(String id) {
    return Integer.parseInt(id.substring(1));
  }

  @Test
  void anAffinityTakesOnlyItsShareThoughOlderRowsOfOtherSharesWait() {
    for (int i = 0; i < 40; i++) {
      add(EU, "m" + i, "agg-" + i);
    }
    ClaimResult first = store.claim(inShare("w0", 1, 0, 2));
    ClaimResult other = store.claim(inShare("w1", 1, 1, 2));
    assertEquals(1, first.claimed().size());
    assertEquals(1, other.claimed().size());
    String mine = first.claimed().get(0).messageId();
    String theirs = other.claimed().get(0).messageId();
    // Each share takes its own oldest row, so the oldest row of all went to one of them.
    assertEquals(0, Math.min(seqOf(mine), seqOf(theirs)));
    // Without an affinity, every remaining row, in insertion order, whatever its share.
    List<String> rest = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      if (!List.of(mine, theirs).contains("m" + i)) {
        rest.add("m" + i);
      }
    }
    assertEquals(rest, ids(store.claim(request("w2", 1000))));
  }

  @Test
  void anAffinityDoesNotLiftOrdering() {
    for (int i = 0; i < 20; i++) {
      add(EU, "p" + i, "agg-" + i);
    }
    for (int i = 0; i < 20; i++) {
      add(EU, "s" + i, "agg-" + i);
    }
    // Another owner holds every first row; no share may take a successor.
    assertEquals(20, store.claim(request("holder", 20)).claimed().size());
    assertTrue(store.claim(inShare("w0", 100, 0, 2)).isEmpty());
    assertTrue(store.claim(inShare("w1", 100, 1, 2)).isEmpty());
    // The holder pipelines its own aggregates whatever the share.
    assertEquals(20, store.claim(request("holder", 100)).claimed().size());
  }

  @Test
  void anAffinityNeedsOrderedClaims() {
    assertThrows(
        IllegalArgumentException.class,
        () -> new ClaimRequest("w", Set.of(EU), 1, LEASE, 3, false, new AggregateAffinity(0, 2)));
    assertThrows(IllegalArgumentException.class, () -> new AggregateAffinity(0, 1));
    assertThrows(IllegalArgumentException.class, () -> new AggregateAffinity(2, 2));
  }

  @Test
  void withOrderingOffRowsFlowIndependently() {
    add(EU, "a1", "A");
    add(EU, "a2", "A");
    ClaimedMessage a1 = claimOne("w1", "a1");
    store.retryLater("a1", a1.lease(), "SEND_FAILED", Duration.ofSeconds(10), 3);
    ClaimRequest unordered = new ClaimRequest("w2", Set.of(EU), 10, LEASE, 3, false);
    assertEquals(List.of("a2"), ids(store.claim(unordered)));
  }

  @Test
  void firstClaimsFollowInsertionOrderUnderRandomInterleavings() {
    Random random = new Random(20261129L);
    int aggregates = 5;
    List<String> inserted = new ArrayList<>();
    Map<String, String> aggregateOf = new HashMap<>();
    for (int i = 0; i < 60; i++) {
      String agg = "agg" + random.nextInt(aggregates);
      String id = "m" + i;
      add(EU, id, agg);
      inserted.add(id);
      aggregateOf.put(id, agg);
    }
    List<String> owners = new ArrayList<>(List.of("w1", "w2", "w3"));
    Map<String, List<ClaimedMessage>> held = new HashMap<>();
    owners.forEach(o -> held.put(o, new ArrayList<>()));
    List<String> firstClaims = new ArrayList<>();
    Set<String> everClaimed = new java.util.HashSet<>();

    for (int step = 0; step < 2000 && !allResolved(inserted); step++) {
      int slot = random.nextInt(owners.size());
      String owner = owners.get(slot);
      List<ClaimedMessage> mine = held.get(owner);
      switch (random.nextInt(7)) {
        case 0, 1 -> {
          ClaimResult r =
              store.claim(
                  new ClaimRequest(owner, Set.of(EU), 1 + random.nextInt(4), LEASE, 1000, true));
          record(r, mine, firstClaims, everClaimed);
        }
        case 2 -> {
          if (mine.isEmpty()) {
            record(
                reclaim(new ClaimRequest(owner, Set.of(EU), 1, LEASE, 1000, true)),
                mine,
                firstClaims,
                everClaimed);
          }
        }
        case 3 -> { // acks arrive in send order
          if (!mine.isEmpty()) {
            ClaimedMessage m = mine.remove(0);
            store.markPublished(ack(m, m.seq()));
          }
        }
        case 4 -> {
          if (!mine.isEmpty()) {
            ClaimedMessage m = mine.remove(0);
            store.retryLater(
                m.messageId(),
                m.lease(),
                "SEND_FAILED",
                Duration.ofSeconds(random.nextInt(20)),
                1000);
            // A failed send fails the task: the rest of this owner's pipeline is given back.
            mine.forEach(x -> store.release(x.messageId(), x.lease()));
            mine.clear();
          }
        }
        case 5 -> clock.advance(Duration.ofSeconds(random.nextInt(15)));
        default -> { // the owner crashes, losing its pipeline; it restarts as a new owner
          if (random.nextInt(10) == 0) {
            String restarted = owner + "'";
            owners.set(slot, restarted);
            held.put(restarted, new ArrayList<>());
          }
        }
      }
    }
    Map<String, List<Integer>> firstClaimPositions = new HashMap<>();
    for (String id : firstClaims) {
      firstClaimPositions
          .computeIfAbsent(aggregateOf.get(id), a -> new ArrayList<>())
          .add(inserted.indexOf(id));
    }
    firstClaimPositions.forEach(
        (agg, positions) ->
            assertEquals(
                positions.stream().sorted().collect(Collectors.toList()),
                positions,
                "first claims of " + agg + " follow insertion order"));
    assertTrue(firstClaims.size() > 30, "the simulation made progress: " + firstClaims.size());
  }

  private void record(
      ClaimResult r, List<ClaimedMessage> mine, List<String> firstClaims, Set<String> everClaimed) {
    for (ClaimedMessage m : r.claimed()) {
      mine.add(m);
      if (everClaimed.add(m.messageId())) {
        firstClaims.add(m.messageId());
      }
    }
  }

  private boolean allResolved(List<String> ids) {
    return ids.stream().allMatch(id -> !state(id).status().isActive());
  }
}
