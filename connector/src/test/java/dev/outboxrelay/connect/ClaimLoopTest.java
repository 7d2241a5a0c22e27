package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.mapping.SourceOffsets;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.UnheldPage;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.SteppableTime;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The task's claim policy, with the task's clock moved by the test. */
class ClaimLoopTest {
  private static final Map<String, String> LEASE_8S =
      Map.of("lease.duration.ms", "8000", "lease.renewal.interval.ms", "2000");

  /** A negative start (Java allows one for {@code System.nanoTime}) is no "not yet". */
  private static final long NEGATIVE_CLOCK_NS = -3_600_000_000_000L;

  private MockTime time = new MockTime();

  private ClaimLoop loop(RuntimeFixture f) {
    return loop(f, new StoreHealth(f.metrics, time));
  }

  private ClaimLoop loop(RuntimeFixture f, StoreHealth health) {
    LeaseRenewer renewer =
        new LeaseRenewer(f.store, f.ledger, f.metrics, f.settings, time, health, f.wake);
    return new ClaimLoop(f.store, f.settings, f.ledger, renewer, health, f.metrics, time);
  }

  /** The loop over {@code store}, standing in for the fixture's own (one that fails or waits). */
  private ClaimLoop loop(RuntimeFixture f, OutboxStore store) {
    StoreHealth health = new StoreHealth(f.metrics, time);
    LeaseRenewer renewer =
        new LeaseRenewer(store, f.ledger, f.metrics, f.settings, time, health, f.wake);
    return new ClaimLoop(store, f.settings, f.ledger, renewer, health, f.metrics, time);
  }

  /**
   * The fixture's store, with {@code before} called with each method's name ahead of the call: it
   * counts calls, or throws to stand in for a failure.
   */
  private static OutboxStore intercepted(RuntimeFixture f, Consumer<String> before) {
    return intercepted(f, (name, args) -> before.accept(name));
  }

  /** The fixture's store, {@code before} told each call's method name and arguments first. */
  private static OutboxStore intercepted(RuntimeFixture f, BiConsumer<String, Object[]> before) {
    return (OutboxStore)
        Proxy.newProxyInstance(
            OutboxStore.class.getClassLoader(),
            new Class<?>[] {OutboxStore.class},
            (proxy, method, args) -> {
              before.accept(method.getName(), args);
              return method.invoke(f.store, args);
            });
  }

  private static List<String> ids(ClaimResult result) {
    return result.claimed().stream().map(ClaimedMessage::messageId).toList();
  }

  private static void handToConnect(RuntimeFixture f, ClaimResult result) {
    result.claimed().forEach(m -> f.ledger.add(m));
  }

  /**
   * Once the task stops no claim starts: one queued on the prefetch thread as the task stopped
   * leased rows that nobody would send, left to wait out their leases or the next instance's
   * recovery.
   */
  @Test
  void claimsNothingOnceTheTaskStops() {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    ClaimLoop loop = loop(f);

    loop.taskStopping();

    assertTrue(loop.next().isEmpty());
    assertEquals(MessageStatus.PENDING, f.store.find("m1").orElseThrow().status());
  }

  @Test
  void claimsNothingMoreWhileItHoldsItsInFlightBound() {
    RuntimeFixture f = new RuntimeFixture(Map.of("claim.batch.size", "2"));
    for (int i = 0; i < 10; i++) {
      f.add("eu", "m" + i, "a" + i);
    }
    ClaimLoop loop = loop(f);
    for (int batch = 0; batch < 4; batch++) {
      handToConnect(f, loop.next());
    }
    assertEquals(8, f.ledger.size(), "four batches in flight");
    assertTrue(loop.next().isEmpty());
  }

  /**
   * Large rows are claimed a few at a time: a batch of them would hold several times the producer's
   * buffer, so that a broker acknowledging nothing blocked the task thread in a send (and with it
   * lease renewal), and the heap would hold batches of large payloads. The first claim assumes rows
   * of payload.max.bytes; later ones, rows like the largest of the last claim.
   */
  @Test
  void largeRowsAreClaimedFewAtATimeWithinHalfTheProducersBuffer() {
    RuntimeFixture f = byteBudgetFixture();
    for (int i = 0; i < 30; i++) {
      // 3,999 bytes a record: payload, text fields (the message id, "order", the aggregate id,
      // "OrderPlaced") and the ledger's overhead
      String id = "large" + i;
      String aggregate = "a" + i;
      int text = id.length() + "order".length() + aggregate.length() + "OrderPlaced".length();
      f.add("eu", id, aggregate, new byte[3999 - 256 - text]);
    }
    ClaimLoop loop = loop(f);

    ClaimResult first = loop.next();
    assertEquals(3, first.claimed().size(), "20,000 bytes of room, rows of up to 5,256 assumed");
    assertEquals(3, loop.fullBatch(), "a full batch of what it asked for: a backlog, no trickle");
    handToConnect(f, first);
    ClaimResult second = loop.next();
    assertEquals(2, second.claimed().size(), "8,003 bytes of room, rows like the last claim's");
    assertEquals(2, loop.fullBatch());
    handToConnect(f, second);
    ClaimResult third = loop.next();
    assertEquals(1, third.claimed().size(), "at least one row while there is room");
    handToConnect(f, third);
    assertEquals(6 * 3999, f.ledger.bytes(), "never more than a row past the budget");
    assertTrue(loop.next().isEmpty(), "half the buffer held: nothing more");
  }

  /**
   * A payload over payload.max.bytes is never published, so the claim leaves it in the database: a
   * burst of such rows cannot fill the heap, and they are parked by their size alone.
   */
  @Test
  void aPayloadOverTheMaximumIsNotReadByTheClaim() {
    RuntimeFixture f = new RuntimeFixture(Map.of("payload.max.bytes", "500"));
    f.add("eu", "fits", "a", new byte[500]);
    f.add("eu", "huge", "b", new byte[501]);

    Map<String, ClaimedMessage> claimed = new java.util.HashMap<>();
    loop(f).next().claimed().forEach(m -> claimed.put(m.messageId(), m));

    assertEquals(500, claimed.get("fits").payload().length);
    assertTrue(claimed.get("huge").payloadOmitted());
    assertEquals(501, claimed.get("huge").payloadBytes());
  }

  /**
   * Rows that grew since the last claim (a burst of large payloads after small ones) would take the
   * records held far past the budget: the claim stops at the room left, counting their payloads,
   * and of the rows it took the task keeps those whose records fit, in seq order, and gives the
   * rest back at once, due again. Without the claim's bound it read all ten, a whole batch of large
   * rows (up to claim.batch.size × payload.max.bytes) in the heap to keep a few.
   */
  @Test
  void aClaimOfRowsLargerThanTheLastOnesKeepsWhatFitsAndGivesTheRestBack() {
    RuntimeFixture f = byteBudgetFixture();
    for (int i = 0; i < 3; i++) {
      f.add("eu", "small" + i, "s" + i, new byte[44]); // 300 bytes a record
    }
    List<ClaimRequest> requests = new ArrayList<>();
    List<ClaimResult> results = new ArrayList<>();
    ClaimLoop loop = loop(f, recordingClaims(f, requests, results));
    ClaimResult small = loop.next(); // sized for rows of 5,256 bytes: 3 of them
    assertEquals(List.of("small0", "small1", "small2"), ids(small));
    handToConnect(f, small);
    for (int i = 0; i < 10; i++) {
      f.add("eu", "large" + i, "l" + i, new byte[4000 - 256 - 2]); // about 4,000 bytes a record
    }

    long held = f.ledger.bytes();
    ClaimResult claimed = loop.next(); // sized for rows of 300 bytes: all 10 rows
    handToConnect(f, claimed);

    assertTrue(requests.get(1).limit() >= 10, "sized for rows like the last claim's");
    assertEquals(20_000 - held, requests.get(1).readRoom(), "the room the records held leave");
    assertEquals(5, results.get(1).claimed().size(), "5 × 3,742 bytes of payload fit, 6 do not");
    assertEquals(
        List.of("large0", "large1", "large2", "large3"),
        ids(claimed),
        "900 + 4 × 4,000 bytes fit in 20,000");
    assertTrue(f.ledger.bytes() <= 20_000);
    for (int i = 4; i < 10; i++) {
      assertEquals(MessageStatus.PENDING, f.store.find("large" + i).orElseThrow().status());
    }
    assertEquals(1, f.metrics.released.get(), "the one given back is counted released");
    assertEquals(1, f.metrics.claimed.get(), "and claimed (the kept ones are counted by poll)");
    ClaimResult next = loop.next();
    assertEquals(List.of("large4"), ids(next), "under the budget: one row, even past it");
    handToConnect(f, next);
    assertTrue(loop.next().isEmpty(), "the budget is held: nothing claimed");
  }

  /**
   * A row larger than the whole room is claimed alone when it comes first, and the claim after a
   * small one stops before it: the room bounds what a claim reads, whatever the last claim's rows.
   */
  @Test
  void aRowLargerThanTheRoomIsClaimedOnlyAsTheFirst() {
    RuntimeFixture f =
        new RuntimeFixture(
            Map.of(
                "ordering.enabled", "false",
                "claim.batch.size", "100",
                "payload.max.bytes", "50000",
                "producer.override.buffer.memory", "40000"));
    List<ClaimRequest> requests = new ArrayList<>();
    List<ClaimResult> results = new ArrayList<>();
    ClaimLoop loop = loop(f, recordingClaims(f, requests, results));
    for (int i = 0; i < 3; i++) {
      f.add("eu", "small" + i, "s" + i, new byte[44]); // 300 bytes a record
    }
    for (int i = 0; i < 10; i++) {
      f.add("eu", "large" + i, "l" + i, new byte[19_700]);
    }
    handToConnect(f, loop.next()); // sized for rows of payload.max.bytes: one

    ClaimResult claimed = loop.next(); // sized for rows of 300 bytes
    assertEquals(List.of("small1", "small2"), ids(claimed), "88 + 19,700 bytes past the room");
    handToConnect(f, claimed);
    ClaimResult large = loop.next();
    assertTrue(requests.get(2).limit() > 1, "sized for rows of 300 bytes again");
    assertEquals(List.of("large0"), ids(results.get(2)), "the first, alone");
    assertEquals(List.of("large0"), ids(large));
    assertEquals(0, f.metrics.released.get(), "nothing claimed to be given back");
  }

  /** The fixture's store, each claim's request and result recorded. */
  private static OutboxStore recordingClaims(
      RuntimeFixture f, List<ClaimRequest> requests, List<ClaimResult> results) {
    return (OutboxStore)
        Proxy.newProxyInstance(
            OutboxStore.class.getClassLoader(),
            new Class<?>[] {OutboxStore.class},
            (proxy, method, args) -> {
              Object result = method.invoke(f.store, args);
              if (method.getName().equals("claim")) {
                requests.add((ClaimRequest) args[0]);
                results.add((ClaimResult) result);
              }
              return result;
            });
  }

  /**
   * A claim that committed although its result never arrived (the connection lost at COMMIT) leases
   * rows the task never holds. They are released before the next claim and come first, in order;
   * without that, the next claim would take the later row of their aggregate (its owner's own rows
   * in flight do not block it) and send it first.
   */
  @Test
  void aClaimWhoseResultNeverArrivedIsReleasedBeforeTheNextClaim() {
    RuntimeFixture f = new RuntimeFixture(Map.of("claim.batch.size", "1"));
    f.add("eu", "held", "b");
    f.add("eu", "m1", "a");
    f.add("eu", "m2", "a");
    int[] lostResults = {0};
    int[] releasesFail = {0};
    int[] claims = {0};
    OutboxStore store =
        (OutboxStore)
            Proxy.newProxyInstance(
                OutboxStore.class.getClassLoader(),
                new Class<?>[] {OutboxStore.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("releaseUnheld") && releasesFail[0]-- > 0) {
                    throw new OutboxStoreException(
                        OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", "release");
                  }
                  if (method.getName().equals("claim")) {
                    claims[0]++;
                  }
                  Object result = method.invoke(f.store, args);
                  if (method.getName().equals("claim") && lostResults[0]-- > 0) {
                    throw new OutboxStoreException(
                        OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", "claim");
                  }
                  return result;
                });
    ClaimLoop loop = loop(f, store);
    ClaimResult first = loop.next();
    assertEquals(List.of("held"), ids(first));
    handToConnect(f, first);

    lostResults[0] = 1;
    long mark = LogCapture.get().mark();
    assertThrows(OutboxStoreException.class, loop::next);
    assertEquals(RuntimeFixture.OWNER, f.store.find("m1").orElseThrow().leaseOwner());

    releasesFail[0] = 1; // the database is still away: no claim before the release
    int claimsBefore = claims[0];
    assertThrows(OutboxStoreException.class, loop::next);
    assertEquals(claimsBefore, claims[0], "nothing claimed while the release failed");

    assertEquals(List.of("m1"), ids(loop.next()));
    assertEquals(1, f.metrics.unconfirmedReleased.get());
    assertEquals(
        RuntimeFixture.OWNER, f.store.find("held").orElseThrow().leaseOwner(), "held: kept");
    // Rows the lost claim may have parked are not found by the release: the line says where.
    assertEquals(
        1,
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.message().contains("may have parked EXHAUSTED")
                        && e.message().contains("list --instance-key <key> --status EXHAUSTED"))
            .size());
  }

  /**
   * A lost claim still ending on the server (its commit waiting for a standby): the next polls
   * claim nothing and read no page, a WARN says so once, and once it has ended its rows are
   * released and claimed first.
   */
  @Test
  void aLostClaimStillEndingHoldsEveryClaimBackUntilItHasEnded() {
    RuntimeFixture f = new RuntimeFixture(Map.of("claim.batch.size", "1"));
    f.add("eu", "m1", "a");
    f.add("eu", "m2", "a");
    int[] stillEnding = {0};
    List<String> calls = new ArrayList<>();
    OutboxStore store =
        losingAClaimsResult(
            f,
            new boolean[] {true},
            (name, args) -> calls.add(name),
            (name, args) ->
                name.equals("claimsEnded") && stillEnding[0]-- > 0 ? Boolean.FALSE : null);
    ClaimLoop loop = loop(f, store);
    assertThrows(OutboxStoreException.class, loop::next); // m1 leased, the result lost
    stillEnding[0] = 2;
    long mark = LogCapture.get().mark();
    calls.clear();

    assertTrue(loop.next().isEmpty());
    assertTrue(loop.next().isEmpty());
    assertEquals(List.of("claimsEnded", "claimsEnded"), calls, "no page read, nothing claimed");
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("is still ending on the server"))
            .size());

    assertEquals(List.of("m1"), ids(loop.next()));
    assertEquals(1, f.metrics.unconfirmedReleased.get());
  }

  /**
   * The release reads the backlog page by page (here one page per instance key): rows released by
   * the pages before one that fails are logged and counted at once, not when the release ends, and
   * the next attempt reads on from the failed page. A page that failed without a reply may have
   * committed, and what it released would go unlisted: a WARN says so.
   */
  @Test
  void rowsReleasedBeforeAFailedPageAreReportedAtOnce() {
    RuntimeFixture f = twoKeysBacklog();
    List<String> pagesRead = new ArrayList<>();
    OutboxStore store =
        losingTheFirstClaimsResult(
            f,
            (name, args) -> {
              if (name.equals("releaseUnheld")) {
                pagesRead.add((String) args[0]);
                if (pagesRead.size() == 2) {
                  throw new OutboxStoreException(
                      OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", "page");
                }
              }
            });
    ClaimLoop loop = loop(f, store);
    assertThrows(OutboxStoreException.class, loop::next); // all five leased, the result lost
    long mark = LogCapture.get().mark();

    assertThrows(OutboxStoreException.class, loop::next); // eu's page released, us's failed

    assertEquals(2, f.metrics.unconfirmedReleased.get(), "e1 and e2, counted at once");
    assertEquals(
        2,
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.message().contains("message_id=")
                        && e.message().contains("CLAIM_RESULT_LOST"))
            .size(),
        "and logged");
    assertEquals(
        1,
        LogCapture.get().matching(mark, e -> e.message().contains("are not listed")).size(),
        "the failed page had no reply: what it released, if it committed, is not listed");
    assertEquals(List.of("e1", "e2", "u1", "u2", "u3"), sorted(ids(loop.next())));
    assertEquals(List.of("eu", "us", "us"), pagesRead, "on from the failed page");
    assertEquals(5, f.metrics.unconfirmedReleased.get());
  }

  /**
   * Connect's stop() ends a release running on the task thread at its next page, so that poll()
   * returns (nothing claimed); the stop then reads on from there and releases the rest.
   */
  @Test
  void aStopEndsARunningReleaseAtItsNextPageAndTheStopReadsOn() {
    RuntimeFixture f = twoKeysBacklog();
    ClaimLoop[] loop = new ClaimLoop[1];
    int[] claims = {0};
    OutboxStore store =
        losingTheFirstClaimsResult(
            f,
            (name, args) -> {
              if (name.equals("releaseUnheld") && args[0].equals("eu")) {
                loop[0].taskStopping(); // Connect calls stop() while the first page runs
              }
              if (name.equals("claim")) {
                claims[0]++;
              }
            });
    loop[0] = loop(f, store);
    assertThrows(OutboxStoreException.class, loop[0]::next);

    assertTrue(loop[0].next().isEmpty(), "poll() returns");
    assertEquals(1, claims[0], "nothing claimed");
    assertEquals(MessageStatus.PENDING, f.store.find("e2").orElseThrow().status());
    assertEquals(MessageStatus.IN_FLIGHT, f.store.find("u1").orElseThrow().status());

    loop[0].giveBackAtStop();

    for (String id : List.of("u1", "u2", "u3")) {
      assertEquals(MessageStatus.PENDING, f.store.find(id).orElseThrow().status(), id);
    }
    assertEquals(5, f.metrics.unconfirmedReleased.get());
  }

  /**
   * A release reads a few pages per claim, not the whole backlog: Connect stops a task only once
   * poll() returned, and a release through millions of rows in one poll held the stop back past its
   * graceful timeout. The next claim reads on, and says so (no idle wait before it).
   */
  @Test
  void aReleaseReadsAFewPagesPerClaimAndTheNextReadsOn() {
    RuntimeFixture f = twoKeysBacklog();
    int[] pages = {0};
    OutboxStore store =
        losingAClaimsResult(
            f,
            new boolean[] {true},
            (name, args) -> {},
            (name, args) -> {
              if (name.equals("releaseUnheld") && args[0].equals("eu") && pages[0] < 10) {
                pages[0]++; // a backlog of ten full pages of eu's, none of them the claim's
                return new UnheldPage(List.of(), (Long) args[4], true); // where it began
              }
              return null;
            });
    ClaimLoop loop = loop(f, store);
    assertThrows(OutboxStoreException.class, loop::next); // all five leased, the result lost

    assertTrue(loop.next().isEmpty());
    assertEquals(ClaimLoop.RELEASE_PAGES_PER_CLAIM, pages[0], "a few pages, then poll() returns");
    assertTrue(loop.readsOnAtOnce());
    assertTrue(loop.next().isEmpty());
    assertEquals(2 * ClaimLoop.RELEASE_PAGES_PER_CLAIM, pages[0]);
    // A claim that reads no page (the ledger full) is no reason to claim again at once: polls
    // spun meanwhile, with no pause and no database call, for as long as it lasted.
    for (int i = 0; i < 20; i++) {
      f.add("eu", "x" + i, "x" + i);
    }
    // Held by the ledger, leased to another owner: none of the lost claim's rows.
    ClaimRequest other =
        new ClaimRequest("other", Set.of("eu"), 20, Duration.ofMinutes(5), 10, false);
    f.store.claim(other).claimed().forEach(m -> f.ledger.add(m));
    assertTrue(f.ledger.isFull(f.settings));
    assertTrue(loop.next().isEmpty());
    assertEquals(2 * ClaimLoop.RELEASE_PAGES_PER_CLAIM, pages[0], "no page read");
    assertFalse(loop.readsOnAtOnce(), "the poll waits");
    f.ledger.heldLeases().forEach(l -> f.ledger.resolve(l.messageId(), l.lease().token()));

    List<String> claimed = new ArrayList<>(ids(loop.next()));
    while (loop.readsOnAtOnce()) {
      claimed.addAll(ids(loop.next())); // the one that ends the release claims on
    }
    assertEquals(5, f.metrics.unconfirmedReleased.get(), "every row of the lost claim");
    assertEquals(List.of("e1", "e2", "u1", "u2", "u3"), sorted(claimed));
  }

  /**
   * Exactly once, a stop that forgot the batch claimed ahead (never handed to Connect) while the
   * next claim's result was lost gives back both: the batch ahead by its leases, the lost claim's
   * rows by reading the backlog. The backlog's reading ends at a claim's worth of rows, and the
   * batch ahead, read first (its key comes first), must not be taken for the lost claim's rows.
   */
  @Test
  void anExactlyOnceStopGivesBackTheBatchAheadAndTheLostClaimBoth() {
    RuntimeFixture f =
        new RuntimeFixture(
            Map.of(
                "delivery.guarantee", "exactly-once",
                "exactly.once.support", "required",
                "instance.keys", "eu,us",
                "claim.batch.size", "2"));
    f.add("eu", "e1", "a");
    f.add("eu", "e2", "b");
    f.add("us", "u1", "c");
    f.add("us", "u2", "d");
    boolean[] loseResult = {false};
    OutboxStore store = losingAClaimsResult(f, loseResult, (name, args) -> {});
    ExactlyOnceState exactlyOnce =
        new ExactlyOnceState(store, f.settings, () -> NO_OFFSETS, f.metrics, time);
    assertTrue(exactlyOnce.recover());
    StoreHealth health = new StoreHealth(f.metrics, time);
    LeaseRenewer renewer =
        new LeaseRenewer(store, f.ledger, f.metrics, f.settings, time, health, f.wake);
    ClaimLoop loop =
        new ClaimLoop(store, f.settings, f.ledger, renewer, health, f.metrics, time, exactlyOnce);
    assertEquals(List.of("e1", "e2"), ids(loop.next())); // ahead; the stop forgets it
    loseResult[0] = true;
    assertThrows(OutboxStoreException.class, loop::next); // u1 and u2 leased, the result lost
    assertEquals(MessageStatus.IN_FLIGHT, f.store.find("u2").orElseThrow().status());

    loop.giveBackAtStop();

    for (String id : List.of("e1", "e2", "u1", "u2")) {
      assertEquals(MessageStatus.PENDING, f.store.find(id).orElseThrow().status(), id);
    }
    assertEquals(2, f.metrics.unconfirmedReleased.get(), "u1 and u2");
  }

  /**
   * Exactly once, a stop that came while a batch's parks were written drops that batch after the
   * next one was claimed ahead: both were never Connect's, and both are given back, not only the
   * last claim (the first was left for the next instance's recovery, which takes its rows for
   * suspects).
   */
  @Test
  void anExactlyOnceStopGivesBackEveryBatchNeverHandedOver() {
    RuntimeFixture f = exactlyOnceRows(2, "r1", "r2", "r3", "r4", "r5");
    ExactlyOnceState exactlyOnce =
        new ExactlyOnceState(f.store, f.settings, () -> NO_OFFSETS, f.metrics, time);
    ClaimLoop loop = exactlyOnceLoop(f, exactlyOnce);
    assertEquals(List.of("r1", "r2"), ids(loop.next()));
    exactlyOnce.handedOver(
        List.of(
            new SourceRecord(
                Map.of(), Map.of(SourceOffsets.BATCH, exactlyOnce.batch()), "eu", null, null)));
    assertEquals(List.of("r3", "r4"), ids(loop.next())); // dropped by the stop
    assertEquals(List.of("r5"), ids(loop.next())); // claimed ahead meanwhile

    loop.giveBackAtStop();

    for (String id : List.of("r3", "r4", "r5")) {
      assertEquals(MessageStatus.PENDING, f.store.find(id).orElseThrow().status(), id);
    }
    for (String id : List.of("r1", "r2")) { // Connect's: settled from the committed offsets
      assertEquals(MessageStatus.IN_FLIGHT, f.store.find(id).orElseThrow().status(), id);
    }
    assertEquals(3, f.metrics.released.get());
  }

  /**
   * Exactly once, the claims remembered for a stop are bounded: a claim starts only once the batch
   * before it was handed over or parked whole, so batches before the previous claim's are
   * forgotten. Batches parked whole (no record to hand over) were remembered for ever.
   */
  @Test
  void anExactlyOnceStopRemembersNoBatchBeforeThePreviousClaims() {
    RuntimeFixture f = exactlyOnceRows(1, "r1", "r2", "r3", "r4");
    ClaimLoop loop =
        exactlyOnceLoop(
            f, new ExactlyOnceState(f.store, f.settings, () -> NO_OFFSETS, f.metrics, time));
    for (String id : List.of("r1", "r2", "r3", "r4")) {
      assertEquals(List.of(id), ids(loop.next())); // none handed over: as if each parked whole
    }

    loop.giveBackAtStop();

    assertEquals(MessageStatus.IN_FLIGHT, f.store.find("r1").orElseThrow().status());
    assertEquals(MessageStatus.IN_FLIGHT, f.store.find("r2").orElseThrow().status());
    assertEquals(MessageStatus.PENDING, f.store.find("r3").orElseThrow().status());
    assertEquals(MessageStatus.PENDING, f.store.find("r4").orElseThrow().status());
  }

  /** Exactly once, claims of {@code batchSize}: one row of its own aggregate per id, key eu. */
  private static RuntimeFixture exactlyOnceRows(int batchSize, String... ids) {
    RuntimeFixture f =
        new RuntimeFixture(
            Map.of(
                "delivery.guarantee", "exactly-once",
                "exactly.once.support", "required",
                "claim.batch.size", Integer.toString(batchSize)));
    for (String id : ids) {
      f.add("eu", id, "aggregate-" + id);
    }
    return f;
  }

  /** The fixture's claim loop with {@code exactlyOnce}, recovered (nothing to recover). */
  private ClaimLoop exactlyOnceLoop(RuntimeFixture f, ExactlyOnceState exactlyOnce) {
    assertTrue(exactlyOnce.recover());
    StoreHealth health = new StoreHealth(f.metrics, time);
    LeaseRenewer renewer =
        new LeaseRenewer(f.store, f.ledger, f.metrics, f.settings, time, health, f.wake);
    return new ClaimLoop(
        f.store, f.settings, f.ledger, renewer, health, f.metrics, time, exactlyOnce);
  }

  private static final org.apache.kafka.connect.storage.OffsetStorageReader NO_OFFSETS =
      new org.apache.kafka.connect.storage.OffsetStorageReader() {
        @Override
        public <T> Map<String, Object> offset(Map<String, T> partition) {
          return null;
        }

        @Override
        public <T> Map<Map<String, T>, Map<String, Object>> offsets(
            java.util.Collection<Map<String, T>> partitions) {
          return Map.of();
        }
      };

  /** eu's e1 and e2, us's u1, u2 and u3, claimed five at a time, unordered. */
  private static RuntimeFixture twoKeysBacklog() {
    RuntimeFixture f =
        new RuntimeFixture(
            Map.of("instance.keys", "eu,us", "claim.batch.size", "5", "ordering.enabled", "false"));
    f.add("eu", "e1", "a");
    f.add("eu", "e2", "b");
    f.add("us", "u1", "c");
    f.add("us", "u2", "d");
    f.add("us", "u3", "e");
    return f;
  }

  /** The fixture's store, whose first claim commits and loses its result (see below). */
  private static OutboxStore losingTheFirstClaimsResult(
      RuntimeFixture f, BiConsumer<String, Object[]> before) {
    return losingAClaimsResult(f, new boolean[] {true}, before);
  }

  /**
   * The fixture's store, {@code before} told each call first: while {@code lose[0]}, the next claim
   * commits and its result is lost (a connection lost at COMMIT), once.
   */
  private static OutboxStore losingAClaimsResult(
      RuntimeFixture f, boolean[] lose, BiConsumer<String, Object[]> before) {
    return losingAClaimsResult(f, lose, before, (name, args) -> null);
  }

  /** {@link #losingAClaimsResult}, a call answered by {@code answer} instead where not null. */
  private static OutboxStore losingAClaimsResult(
      RuntimeFixture f,
      boolean[] lose,
      BiConsumer<String, Object[]> before,
      BiFunction<String, Object[], Object> answer) {
    return losingAResultOf("claim", f, lose, before, answer);
  }

  /** As {@link #losingAClaimsResult}, for the claim method named {@code claim}. */
  private static OutboxStore losingAResultOf(
      String claim,
      RuntimeFixture f,
      boolean[] lose,
      BiConsumer<String, Object[]> before,
      BiFunction<String, Object[], Object> answer) {
    return (OutboxStore)
        Proxy.newProxyInstance(
            OutboxStore.class.getClassLoader(),
            new Class<?>[] {OutboxStore.class},
            (proxy, method, args) -> {
              before.accept(method.getName(), args);
              Object answered = answer.apply(method.getName(), args);
              if (answered != null) {
                return answered;
              }
              Object result = method.invoke(f.store, args);
              if (method.getName().equals(claim) && lose[0]) {
                lose[0] = false;
                throw new OutboxStoreException(
                    OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", "claim");
              }
              return result;
            });
  }

  private static List<String> sorted(List<String> ids) {
    return ids.stream().sorted().toList();
  }

  /**
   * A claim the server answered with an error (its statement timeout, on a backlog of tens of
   * millions of rows) rolled back: nothing to release before the next claim, whose release would
   * read the same backlog, time out the same way and hold every claim back. A claim without a reply
   * (no SQLState: an I/O failure) may have committed, and is released first.
   */
  @Test
  void onlyAClaimWithoutAReplyIsReleasedBeforeTheNextOne() {
    RuntimeFixture f = new RuntimeFixture(Map.of("claim.batch.size", "1"));
    f.add("eu", "m1", "a");
    f.add("eu", "m2", "b");
    String[] nextFailure = {null};
    int[] releases = {0};
    OutboxStore store =
        intercepted(
            f,
            name -> {
              if (name.equals("releaseUnheld")) {
                releases[0]++;
              }
              String state = nextFailure[0];
              // The due rows' claim (a cancelled probe for abandoned rows is said, not thrown).
              if (name.equals("claim") && state != null) {
                nextFailure[0] = null;
                throw new OutboxStoreException(
                    OutboxStoreException.Kind.TRANSIENT,
                    "DB_UNAVAILABLE",
                    state.isEmpty() ? null : state,
                    "claim");
              }
            });
    ClaimLoop loop = loop(f, store);

    nextFailure[0] = "57014"; // canceled by statement_timeout: rolled back
    assertThrows(OutboxStoreException.class, loop::next);
    handToConnect(f, loop.next());
    assertEquals(0, releases[0], "nothing to release after a claim the server rolled back");

    nextFailure[0] = ""; // no SQLState: the reply lost, the claim may have committed
    assertThrows(OutboxStoreException.class, loop::next);
    loop.next();
    assertEquals(1, releases[0], "released before the next claim");
  }

  /**
   * A claim that parks rows over a lowered max.attempts commits them EXHAUSTED whatever happens
   * next: when giving back its rows past the byte budget then fails (the database away), they are
   * still logged and counted, not dropped with the claim's result. The claim's leased rows are
   * given back by their seqs and leases before the next claim, not found by reading the backlog for
   * what the task does not hold (which a timeout there would have repeated before every claim).
   */
  @Test
  void rowsAClaimParkedAreCountedEvenWhenGivingBackRowsPastTheBudgetFails() {
    RuntimeFixture f = byteBudgetFixture();
    int[] giveBacksFail = {0};
    int[] releases = {0};
    OutboxStore store =
        intercepted(
            f,
            name -> {
              if (name.equals("releaseUnheld")) {
                releases[0]++;
              }
              if (name.equals("giveBack") && giveBacksFail[0]-- > 0) {
                throw new OutboxStoreException(
                    OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", "release");
              }
            });
    ClaimLoop loop = loop(f, store);
    for (int i = 0; i < 3; i++) {
      f.add("eu", "small" + i, "s" + i, new byte[44]); // 300 bytes a record
    }
    ClaimResult small = loop.next(); // sized for rows of 5,256 bytes: 3 of them
    assertEquals(List.of("small0", "small1", "small2"), ids(small));
    handToConnect(f, small);
    f.add("eu", "spent", "x");
    ClaimRequest earlier =
        new ClaimRequest("earlier", Set.of("eu"), 1, Duration.ofMinutes(1), 10, false);
    for (int i = 0; i < 3; i++) { // three attempts spent, the task's max.attempts
      ClaimedMessage m = f.store.claim(earlier).claimed().get(0);
      f.store.retryLater("spent", m.lease(), "DELIVERY_UNCONFIRMED", Duration.ZERO, 10);
    }
    for (int i = 0; i < 10; i++) {
      f.add("eu", "large" + i, "l" + i, new byte[4000 - 256 - 2]); // about 4,000 bytes a record
    }

    giveBacksFail[0] = 1;
    assertThrows(OutboxStoreException.class, loop::next); // sized for rows of 300 bytes

    assertEquals(MessageStatus.EXHAUSTED, f.store.find("spent").orElseThrow().status());
    assertEquals(1, f.metrics.exhausted.get(), "parked by the claim: counted once");
    ClaimResult again = loop.next(); // the unused claim's rows are given back, then claimed again
    assertEquals(1, f.metrics.exhausted.get(), "and not counted again");
    assertEquals(List.of("large0", "large1", "large2", "large3"), ids(again), "in order");
    assertEquals(0, releases[0], "given back by their leases, not by reading the backlog");
    assertEquals(5, f.metrics.released.get(), "the unused claim's 5 rows (the next one fits)");
  }

  /**
   * A row of an unused claim that another owner took over before the give-back (its lease expired
   * during the outage that failed the first give-back) is named, not silently left out of the rows
   * given back; not counted as a lost claim, which this task never sent.
   */
  @Test
  void aRowTakenOverBeforeItIsGivenBackIsNamed() {
    RuntimeFixture f = byteBudgetFixture();
    int[] giveBacksFail = {0};
    OutboxStore store =
        intercepted(
            f,
            name -> {
              if (name.equals("giveBack") && giveBacksFail[0]-- > 0) {
                throw new OutboxStoreException(
                    OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", "release");
              }
            });
    ClaimLoop loop = loop(f, store);
    for (int i = 0; i < 3; i++) {
      f.add("eu", "small" + i, "s" + i, new byte[44]); // 300 bytes a record
    }
    ClaimResult small = loop.next(); // sizes the next claim for rows of 300 bytes
    handToConnect(f, small);
    for (ClaimedMessage m : small.claimed()) { // published: not abandoned when leases expire
      f.store.markPublished(
          new PublishedAck(m.messageId(), m.seq(), m.lease(), new KafkaCoordinates("t", 0, 0)));
    }
    for (int i = 0; i < 10; i++) {
      f.add("eu", "large" + i, "l" + i, new byte[4000 - 256 - 2]); // about 4,000 bytes a record
    }
    giveBacksFail[0] = 1;
    assertThrows(OutboxStoreException.class, loop::next); // 5 claimed (the room), none given back
    f.clock.advance(Duration.ofHours(1));
    ClaimRequest other = new ClaimRequest("other", Set.of("eu"), 1, Duration.ofHours(2), 10, false);
    assertEquals(List.of("large0"), ids(f.store.claimAbandoned(other)));

    long mark = LogCapture.get().mark();

    loop.next();

    List<LogCapture.Event> named =
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.message().contains("message_id=large0")
                        && e.message().contains("reason=GIVE_BACK_UNMATCHED"));
    assertEquals(1, named.size(), () -> LogCapture.get().matching(mark, e -> true).toString());
    assertEquals(0, f.metrics.claimLost.get(), "never sent by this task");
    assertEquals(4, f.metrics.released.get(), "the other 4 given back");
  }

  /** Unordered claims of up to 100 rows under a byte budget of half a 40,000-byte buffer. */
  private static RuntimeFixture byteBudgetFixture() {
    return new RuntimeFixture(
        Map.of(
            "ordering.enabled", "false",
            "claim.batch.size", "100",
            "payload.max.bytes", "5000",
            "producer.override.buffer.memory", "40000"));
  }

  /**
   * A stop gives back a claim whose result was lost, never one still running on the task thread:
   * that claim's reply may yet arrive, and releasing its rows meanwhile would report them lost. The
   * stop says so, or the rows' wait for their leases would go unexplained.
   */
  @Test
  void aStopDuringAClaimReleasesNothing() throws Exception {
    RuntimeFixture f = new RuntimeFixture(Map.of());
    f.add("eu", "m1", "a");
    java.util.concurrent.CountDownLatch inClaim = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch finish = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.atomic.AtomicInteger releases =
        new java.util.concurrent.atomic.AtomicInteger();
    OutboxStore store =
        (OutboxStore)
            Proxy.newProxyInstance(
                OutboxStore.class.getClassLoader(),
                new Class<?>[] {OutboxStore.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("releaseUnheld")) {
                    releases.incrementAndGet();
                  }
                  if (method.getName().equals("claim")) {
                    inClaim.countDown();
                    finish.await();
                  }
                  return method.invoke(f.store, args);
                });
    ClaimLoop loop = loop(f, store);
    java.util.concurrent.CompletableFuture<ClaimResult> claim =
        java.util.concurrent.CompletableFuture.supplyAsync(loop::next);
    inClaim.await();
    long mark = LogCapture.get().mark();

    loop.giveBackAtStop();
    finish.countDown();

    assertEquals(List.of("m1"), ids(claim.get()));
    assertEquals(0, releases.get(), "nothing released while the claim ran");
    assertEquals(0, f.metrics.unconfirmedReleased.get());
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=CLAIM_RUNNING_AT_STOP"))
            .size(),
        "the stop says why it gave nothing back");
  }

  /** "lost", whose owner crashed and whose lease has run out, and "due", of another aggregate. */
  private static RuntimeFixture abandonedBesideADueRow() {
    RuntimeFixture f = new RuntimeFixture(LEASE_8S);
    f.add("eu", "lost", "a");
    f.store.claim(new ClaimRequest("crashed", Set.of("eu"), 1, Duration.ofSeconds(8), 3, true));
    f.add("eu", "due", "b");
    f.clock.advance(Duration.ofSeconds(9));
    return f;
  }

  @Test
  void anAbandonedRowIsReclaimedAloneOnlyWhenNothingElseIsHeld() {
    RuntimeFixture f = abandonedBesideADueRow();
    ClaimLoop loop = loop(f);

    ClaimResult first = loop.next();
    assertEquals(List.of("lost"), ids(first));
    handToConnect(f, first);
    assertTrue(loop.next().isEmpty(), "nothing beside an isolated claim");
    f.ledger.resolve("lost", first.claimed().get(0).lease().token());
    assertEquals(List.of("due"), ids(loop.next()), "no abandoned row left: due rows flow");
    assertEquals(1, f.metrics.abandonedReclaimed.get(), "a possible duplicate, counted once");
  }

  /**
   * The claim of an abandoned row takes one row: when its result is lost, the release before the
   * next claim stops at the page that finds that row, instead of reading every key's backlog for a
   * whole batch of rows that were never claimed.
   */
  @Test
  void theReleaseOfALostAbandonedRowsClaimStopsAtThePageThatFindsIt() {
    Map<String, String> config = new HashMap<>(LEASE_8S);
    config.put("instance.keys", "eu,us");
    RuntimeFixture f = new RuntimeFixture(config);
    f.add("eu", "lost", "a");
    f.store.claim(new ClaimRequest("crashed", Set.of("eu"), 1, Duration.ofSeconds(8), 3, true));
    f.add("us", "u1", "b");
    f.clock.advance(Duration.ofSeconds(9));
    List<String> pagesRead = new ArrayList<>();
    OutboxStore store =
        losingAResultOf(
            "claimAbandoned",
            f,
            new boolean[] {true},
            (name, args) -> {
              if (name.equals("releaseUnheld")) {
                pagesRead.add((String) args[0]);
              }
            },
            (name, args) -> null);
    ClaimLoop loop = loop(f, store);
    assertThrows(OutboxStoreException.class, loop::next);

    loop.next();

    assertEquals(List.of("eu"), pagesRead, "us's backlog is not read for it");
    assertEquals(1, f.metrics.unconfirmedReleased.get());
  }

  /**
   * Looking for abandoned rows holds nothing back: with batches in flight and none abandoned, the
   * task goes on claiming at each probe instead of first settling all it holds; once a row is
   * abandoned, the next probe does settle first, then takes it alone.
   */
  @Test
  void aProbeThatFindsNoAbandonedRowDoesNotWaitForTheBatchesInFlight() {
    RuntimeFixture f = new RuntimeFixture(LEASE_8S);
    for (int i = 0; i < 4; i++) {
      f.add("eu", "m" + i, "a" + i);
    }
    ClaimLoop loop = loop(f);
    ClaimResult first = loop.next();
    assertEquals(List.of("m0", "m1", "m2", "m3"), ids(first));
    handToConnect(f, first);

    f.add("eu", "m4", "a4");
    time.sleep(2000); // a probe interval is a quarter of the lease
    ClaimResult second = loop.next();
    assertEquals(List.of("m4"), ids(second), "nothing abandoned: claims go on");
    handToConnect(f, second);

    f.add("eu", "lost", "b");
    f.store.claim(new ClaimRequest("crashed", Set.of("eu"), 1, Duration.ofSeconds(1), 3, true));
    f.add("eu", "m5", "a5");
    f.clock.advance(Duration.ofSeconds(2)); // the crashed owner's lease ran out, not this task's
    time.sleep(2000);
    assertTrue(loop.next().isEmpty(), "an abandoned row: settle what is held first");
    for (ClaimedMessage m : first.claimed()) {
      f.ledger.resolve(m.messageId(), m.lease().token());
    }
    assertTrue(loop.next().isEmpty(), "m4 still held");
    f.ledger.resolve("m4", second.claimed().get(0).lease().token());
    assertEquals(List.of("lost"), ids(loop.next()), "alone");
  }

  /**
   * A probe for abandoned rows that the statement timeout cancels (no index serves it: on a backlog
   * of tens of millions it reads past the timeout) is said, and the poll claims due rows all the
   * same: it threw, and every probe interval the task thread spent the timeout on it again. The
   * next probe waits ten times as long as this one took, at most ten probe intervals; it is counted
   * with the database errors, but is no outage, which would hold the probe back. Holding rows, the
   * task looks first ({@code hasAbandoned}); holding none, it claims at once ({@code
   * claimAbandoned}).
   */
  @ParameterizedTest
  @ValueSource(strings = {"hasAbandoned", "claimAbandoned"})
  void aProbeCancelledByTheStatementTimeoutIsSaidAndSpacedOut(String probe) {
    RuntimeFixture f = new RuntimeFixture(LEASE_8S);
    f.add("eu", "m0", "a0");
    List<String> looks = new ArrayList<>();
    OutboxStore store =
        intercepted(
            f,
            name -> {
              if (name.equals("hasAbandoned") || name.equals("claimAbandoned")) {
                looks.add(name);
              }
              if (name.equals(probe) && looks.size() == 1) {
                time.sleep(30_000); // read the backlog up to statement.timeout.ms
                throw new OutboxStoreException(
                    OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "57014", name);
              }
            });
    StoreHealth health = new StoreHealth(f.metrics, time);
    LeaseRenewer renewer =
        new LeaseRenewer(store, f.ledger, f.metrics, f.settings, time, health, f.wake);
    ClaimLoop loop = new ClaimLoop(store, f.settings, f.ledger, renewer, health, f.metrics, time);
    if (probe.equals("hasAbandoned")) {
      handToConnect(f, loop.next()); // m0 held: the task looks before it settles
      looks.clear(); // holding nothing, that poll claimed abandoned rows at once
      time.sleep(2000); // a probe interval is a quarter of the lease
    }
    f.add("eu", "m1", "a1");
    long mark = LogCapture.get().mark();

    ClaimResult claimed = loop.next();

    assertEquals(List.of(probe), looks);
    assertEquals(probe.equals("hasAbandoned") ? List.of("m1") : List.of("m0", "m1"), ids(claimed));
    assertEquals(StoreHealth.NO_ERROR, health.lastDatabaseErrorMs(), "not an outage");
    assertEquals(1, f.metrics.databaseErrors.get(), "seen by the database-errors alert");
    assertEquals(
        1,
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.message().contains("reason=ABANDONED_PROBE_TIMED_OUT")
                        && e.message().contains("after 30000 ms")
                        && e.message().contains("in 20000 ms"))
            .size());
    handToConnect(f, claimed);
    time.sleep(19_999); // ten probe intervals, not ten times the 30 s the probe took
    loop.next();
    assertEquals(1, looks.size(), "not before the next probe is due");
    time.sleep(1);
    loop.next();
    assertEquals(List.of(probe, "hasAbandoned"), looks, "then probed again");
  }

  /**
   * A look that found a row another task then takes first: the task settles, its claim finds
   * nothing, and due rows flow again until the next probe interval, not a look per poll.
   */
  @Test
  void aRowFoundButTakenByAnotherTaskLetsDueRowsFlowAgain() {
    RuntimeFixture f = new RuntimeFixture(LEASE_8S);
    f.add("eu", "m0", "a0");
    ClaimLoop loop = loop(f);
    ClaimResult held = loop.next();
    assertEquals(List.of("m0"), ids(held));
    handToConnect(f, held);

    f.add("eu", "lost", "b");
    f.store.claim(new ClaimRequest("crashed", Set.of("eu"), 1, Duration.ofSeconds(1), 3, true));
    f.add("eu", "m1", "a1");
    f.clock.advance(Duration.ofSeconds(2));
    time.sleep(2000);
    assertTrue(loop.next().isEmpty(), "found: settle first");
    f.ledger.resolve("m0", held.claimed().get(0).lease().token());
    f.store.claimAbandoned(
        new ClaimRequest("faster", Set.of("eu"), 1, Duration.ofSeconds(8), 3, true));

    ClaimResult next = loop.next();
    assertEquals(List.of("m1"), ids(next), "taken elsewhere: due rows flow");
    handToConnect(f, next);
    f.add("eu", "m2", "a2");
    assertEquals(List.of("m2"), ids(loop.next()), "no look before the next interval");
    assertEquals(0, f.metrics.abandonedReclaimed.get());
  }

  /**
   * A database error while an isolated claim is in flight (a failed renewal or outcome write) gives
   * owners their probe interval again, but must not end the isolation: a batch claimed beside the
   * row would share the blame if the worker crashed on it.
   */
  @Test
  void aDatabaseErrorDoesNotEndAnIsolatedClaimsIsolation() {
    RuntimeFixture f = abandonedBesideADueRow();
    StoreHealth health = new StoreHealth(f.metrics, time);
    ClaimLoop loop = loop(f, health);
    ClaimResult isolated = loop.next();
    assertEquals(List.of("lost"), ids(isolated));
    handToConnect(f, isolated);

    health.databaseError(
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", "renew"));
    assertTrue(loop.next().isEmpty(), "still alone after the error");
    f.ledger.resolve("lost", isolated.claimed().get(0).lease().token());
    assertEquals(List.of("due"), ids(loop.next()), "settled: due rows flow");
  }

  /**
   * A loop whose store holds m1 under an expired lease of another owner ("owner"), just after a
   * database error of {@code operation}.
   */
  private ClaimLoop loopAfterADatabaseError(String operation) {
    RuntimeFixture f = new RuntimeFixture(LEASE_8S);
    f.add("eu", "m1", "a");
    f.store.claim(new ClaimRequest("owner", Set.of("eu"), 1, Duration.ofSeconds(8), 3, true));
    f.clock.advance(Duration.ofSeconds(9));
    StoreHealth health = new StoreHealth(f.metrics, time);
    ClaimLoop loop = loop(f, health);
    health.databaseError(
        new OutboxStoreException(
            OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", operation));
    return loop;
  }

  @Test
  void afterAClaimErrorAbandonedRowsWaitAProbeIntervalForTheirOwners() {
    ClaimLoop loop = loopAfterADatabaseError("claim");

    assertTrue(loop.next().isEmpty());
    time.sleep(1999); // a probe interval is a quarter of the lease
    assertTrue(loop.next().isEmpty());
    time.sleep(1);
    assertEquals(List.of("m1"), ids(loop.next()));
  }

  /**
   * A wall clock stepped back (an NTP correction) holds the probe back no longer than its interval
   * after an error: on it, abandoned rows waited for the wall clock to catch up again.
   */
  @Test
  void aWallClockSteppedBackAfterAnErrorDoesNotHoldTheProbeBack() {
    SteppableTime stepped = new SteppableTime();
    time = stepped;
    ClaimLoop loop = loopAfterADatabaseError("claim");
    assertTrue(loop.next().isEmpty(), "owners first");

    stepped.stepWallClock(Duration.ofHours(-1));
    time.sleep(2000); // a probe interval, by the monotonic clock
    assertEquals(List.of("m1"), ids(loop.next()));
  }

  /** Nor the next probe, once one found nothing. */
  @Test
  void aWallClockSteppedBackDoesNotHoldTheNextProbeBack() {
    SteppableTime stepped = new SteppableTime();
    time = stepped;
    RuntimeFixture f = new RuntimeFixture(LEASE_8S);
    ClaimLoop loop = loop(f);
    assertTrue(loop.next().isEmpty(), "probed: nothing abandoned, nothing due");
    f.add("eu", "lost", "a");
    f.store.claim(new ClaimRequest("crashed", Set.of("eu"), 1, Duration.ofSeconds(8), 3, true));
    f.add("eu", "due", "b");
    f.clock.advance(Duration.ofSeconds(9));

    stepped.stepWallClock(Duration.ofHours(-1));
    time.sleep(2000); // a probe interval, by the monotonic clock
    assertEquals(List.of("lost"), ids(loop.next()), "probed again, and reclaimed alone");
  }

  @Test
  void anOutcomeWriteErrorAlsoHoldsTheProbeBack() {
    ClaimLoop loop = loopAfterADatabaseError("markPublished");

    assertTrue(loop.next().isEmpty());
    time.sleep(2000);
    assertEquals(List.of("m1"), ids(loop.next()));
  }

  /** An aggregate of task {@code task}'s share of 2 (the in-memory store: hashCode mod 2). */
  /**
   * The loop over the fixture's store, each claim of any share's time since now added to {@code
   * atMs}.
   */
  private ClaimLoop recordingClaimsOfAnyShare(RuntimeFixture f, List<Long> atMs) {
    long start = time.hiResClockMs();
    return loop(
        f,
        intercepted(
            f,
            (name, args) -> {
              if (name.equals("claim") && ((ClaimRequest) args[0]).affinity() == null) {
                atMs.add(time.hiResClockMs() - start);
              }
            }));
  }

  /** A quarter of LEASE_8S's lease at least between two claims of any share. */
  private static void assertAtMostOnePerQuarterOfTheLease(List<Long> anyShareClaimsAtMs) {
    for (int j = 1; j < anyShareClaimsAtMs.size(); j++) {
      assertTrue(
          anyShareClaimsAtMs.get(j) - anyShareClaimsAtMs.get(j - 1) >= 2000,
          "at most one per quarter of the lease: " + anyShareClaimsAtMs);
    }
  }

  private static String aggregateOfShare(int task, int from) {
    for (int i = from; ; i++) {
      if (Math.floorMod(("agg-" + i).hashCode(), 2) == task) {
        return "agg-" + i;
      }
    }
  }

  @ParameterizedTest(name = "monotonic clock from {0} ns")
  @ValueSource(longs = {0, NEGATIVE_CLOCK_NS})
  void anOrderedTaskTakesOtherSharesOnlyAfterItsOwnStayedDry(long clockStartNs) {
    time = new MockTime(0, time.milliseconds(), clockStartNs);
    RuntimeFixture f = new RuntimeFixture(LEASE_8S, 0, 2);
    String other = aggregateOfShare(1, 0);
    f.add("eu", "theirs", other);
    ClaimLoop loop = loop(f);

    assertTrue(loop.next().isEmpty(), "its own share is dry: wait for the other task");
    time.sleep(1999); // the fallback delay is a quarter of the lease
    assertTrue(loop.next().isEmpty());
    time.sleep(1);
    assertEquals(List.of("theirs"), ids(loop.next()));
  }

  /**
   * A share whose task failed (Connect leaves it failed) must not wait for the other tasks' shares
   * to run dry: under steady load they never do. Once per quarter of a lease (2 s here), a task
   * whose own share keeps yielding claims from any share, oldest rows first: with own rows at every
   * claim (a stream), at every other, or just less often than that quarter of a lease (a trickle,
   * which never leaves the share dry for long enough either); never more often. The task claims
   * every 500 ms for 12 s; another row of the taskless share comes every 3 s.
   */
  @ParameterizedTest(name = "own rows every {0} ms, monotonic clock from {1} ns")
  @CsvSource({"500, 0", "1000, 0", "2500, 0", "500, " + NEGATIVE_CLOCK_NS})
  void anOrderedTaskWhoseShareNeverRunsDryStillTakesAShareWithoutATask(
      int everyMs, long clockStartNs) {
    time = new MockTime(0, time.milliseconds(), clockStartNs);
    RuntimeFixture f = new RuntimeFixture(LEASE_8S, 0, 2);
    List<Long> anyShareClaimsAtMs = new ArrayList<>();
    ClaimLoop loop = recordingClaimsOfAnyShare(f, anyShareClaimsAtMs);

    List<String> claimed = new ArrayList<>();
    int aggregate = 0;
    for (int atMs = 0; atMs < 12_000; atMs += 500) {
      if (atMs % 3000 == 0) {
        f.add("eu", "theirs-" + atMs, aggregateOfShare(1, atMs)); // an aggregate of its own
      }
      if (atMs % everyMs == 0) {
        String own = aggregateOfShare(0, aggregate);
        aggregate = Integer.parseInt(own.substring("agg-".length())) + 1;
        f.add("eu", "own-" + atMs, own);
      }
      claimed.addAll(ids(loop.next()));
      time.sleep(500);
    }

    assertEquals(2000, anyShareClaimsAtMs.get(0), "a quarter of the lease after the first rows");
    assertAtMostOnePerQuarterOfTheLease(anyShareClaimsAtMs);
    for (int atMs = 0; atMs < 9_000; atMs += 3000) {
      assertTrue(claimed.contains("theirs-" + atMs), atMs + ": " + claimed);
    }
  }

  /**
   * A share whose task failed, holding more rows than one batch per quarter of a lease moves: while
   * the task's own share yields short batches (a stream it keeps up with), every other claim is of
   * any share as long as those come back full. One batch per quarter of a lease (2 s here) let the
   * share fall behind without end: 15 batches in 30 s, not the 20 it holds.
   */
  @Test
  void aShareWithoutATaskIsDrainedWithTheRoomAStreamLeaves() {
    Map<String, String> props = new HashMap<>(LEASE_8S);
    props.put("claim.batch.size", "10");
    RuntimeFixture f = new RuntimeFixture(props, 0, 2);
    ClaimLoop loop = loop(f);
    List<String> theirs = new ArrayList<>();
    int aggregate = 0;
    for (int i = 0; i < 200; i++) {
      String other = aggregateOfShare(1, aggregate);
      aggregate = Integer.parseInt(other.substring("agg-".length())) + 1;
      f.add("eu", "theirs-" + i, other);
      theirs.add("theirs-" + i);
    }

    Set<String> claimed = new HashSet<>();
    int own = 0;
    for (int atMs = 0; atMs < 30_000; atMs += 500) {
      String mine = aggregateOfShare(0, own);
      own = Integer.parseInt(mine.substring("agg-".length())) + 1;
      f.add("eu", "own-" + atMs, mine);
      claimed.addAll(ids(loop.next()));
      time.sleep(500);
    }

    assertTrue(
        claimed.containsAll(theirs),
        theirs.size() - claimed.stream().filter(theirs::contains).count() + " left");
    for (int atMs = 0; atMs < 29_000; atMs += 500) {
      assertTrue(claimed.contains("own-" + atMs), "own rows wait one claim at most: " + atMs);
    }
  }

  /**
   * ... but not a live task's share: its rows are claimed by it within moments, so the other task's
   * claims of any share, full as they may come back (a batch of both shares' newest rows), take
   * none that existed a fallback delay before, and stay one per quarter of a lease. Taking them at
   * every other claim would take the earliest rows of the aggregates the live task works through.
   */
  @Test
  void aLiveTasksShareIsNotHelpedAtEveryOtherClaim() {
    Map<String, String> props = new HashMap<>(LEASE_8S);
    props.put("claim.batch.size", "10");
    RuntimeFixture f = new RuntimeFixture(props, 0, 2);
    List<Long> anyShareClaimsAtMs = new ArrayList<>();
    ClaimLoop loop = recordingClaimsOfAnyShare(f, anyShareClaimsAtMs);
    ClaimRequest peer =
        new ClaimRequest(
            "relay/task-1/peer",
            Set.of("eu"),
            10,
            Duration.ofSeconds(8),
            5,
            true,
            new dev.outboxrelay.store.AggregateAffinity(1, 2));
    int own = 0;
    int theirs = 0;
    for (int atMs = 0; atMs < 20_000; atMs += 500) {
      for (int i = 0; i < 7; i++) {
        String mine = aggregateOfShare(0, own);
        own = Integer.parseInt(mine.substring("agg-".length())) + 1;
        f.add("eu", "own-" + atMs + "-" + i, mine);
        String other = aggregateOfShare(1, theirs);
        theirs = Integer.parseInt(other.substring("agg-".length())) + 1;
        f.add("eu", "theirs-" + atMs + "-" + i, other);
      }
      loop.next();
      f.store.claim(peer); // the live task of share 1, whose rows wait moments
      time.sleep(500);
    }

    assertFalse(anyShareClaimsAtMs.isEmpty(), "its periodic claims of any share");
    assertAtMostOnePerQuarterOfTheLease(anyShareClaimsAtMs);
  }

  /**
   * A burst after a pause (a drain of a backlog that built up while the connector was paused)
   * starts with the task's own share: the other tasks' shares are theirs to work through.
   */
  @Test
  void aBurstAfterAPauseStartsWithTheOwnShare() {
    RuntimeFixture f = new RuntimeFixture(LEASE_8S, 0, 2);
    ClaimLoop loop = loop(f);
    f.add("eu", "own-0", aggregateOfShare(0, 0));
    assertEquals(List.of("own-0"), ids(loop.next()));
    time.sleep(10_000); // no claim meanwhile

    f.add("eu", "theirs", aggregateOfShare(1, 0));
    f.add("eu", "own-1", aggregateOfShare(0, 1_000));
    assertEquals(List.of("own-1"), ids(loop.next()));
  }
}
