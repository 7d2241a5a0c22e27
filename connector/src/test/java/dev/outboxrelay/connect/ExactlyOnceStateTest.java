package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.testing.LogCapture;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.junit.jupiter.api.Test;

/**
 * Recovery and sweeps read page by page ({@link dev.outboxrelay.store.RecoveryPass}): at most
 * {@link ExactlyOnceState#PAGES_PER_CALL} pages per call, however large the backlog, each page's
 * rows settled as it commits, and a page that fails read again without the pages before it. Pages
 * of 2 rows here, so that 20 rows are a call's worth.
 */
class ExactlyOnceStateTest {
  private static final int PAGE_ROWS = 2;
  private static final int ROWS_PER_CALL = PAGE_ROWS * ExactlyOnceState.PAGES_PER_CALL;

  private final RuntimeFixture f =
      new RuntimeFixture(
          Map.of("delivery.guarantee", "exactly-once", "exactly.once.support", "required"));
  private final MockTime time = new MockTime();

  /** The afterSeq of every page asked for, in order. */
  private final List<Long> pagesAsked = new ArrayList<>();

  /** The page (counted from 0) that fails as in an outage; -1 for none. */
  private int failingPage = -1;

  @Test
  void aStartRecoveryReadsAFewPagesACallAndEndsOnceEveryPageIsRead() {
    List<String> rows = zombieRows(ROWS_PER_CALL + 5, 0);
    ExactlyOnceState state = state();

    assertFalse(state.recover(), "a call's worth of pages read; more follow");
    assertEquals(ROWS_PER_CALL, count(rows, MessageStatus.PENDING));
    assertEquals(5, count(rows, MessageStatus.IN_FLIGHT), "the last rows, on later pages");
    assertEquals(ROWS_PER_CALL, f.metrics.recoveredReleased.get(), "each page counted as it ends");

    assertTrue(state.recover());
    assertEquals(rows.size(), count(rows, MessageStatus.PENDING));
    assertEquals(rows.size(), f.metrics.recoveredReleased.get());
    assertTrue(state.recover(), "ended: nothing read again");
    assertEquals(ExactlyOnceState.PAGES_PER_CALL + 3, pagesAsked.size());
  }

  @Test
  void aPageThatFailsIsReadAgainAndThePagesBeforeItAreNot() {
    List<String> rows = zombieRows(9, 0);
    failingPage = 2;
    ExactlyOnceState state = state();

    assertThrows(OutboxStoreException.class, state::recover);
    assertEquals(4, count(rows, MessageStatus.PENDING), "the two pages before it settled");
    assertTrue(state.recover());

    assertEquals(rows.size(), count(rows, MessageStatus.PENDING));
    assertEquals(6, pagesAsked.size(), "5 pages of 9 rows, the failed one twice; none before it");
    assertEquals(pagesAsked.get(2), pagesAsked.get(3), "the failed page read again");
    List<Long> pages = new ArrayList<>(pagesAsked);
    pages.remove(3);
    assertEquals(pages.stream().sorted().distinct().toList(), pages, "each page after the last");
    assertEquals(rows.size(), f.metrics.recoveredReleased.get());
  }

  /**
   * Rows leased under a later epoch are reported once the pass has read every page: found on the
   * first page of a pass of two calls, counted and logged at its end, not forgotten by the second
   * call (which finds none).
   */
  @Test
  void rowsLeasedUnderALaterEpochAreReportedForTheWholePass() {
    ExactlyOnceState state = state();
    f.add("eu", "later", "agg-later");
    ClaimRequest restored =
        new ClaimRequest("restored", Set.of("eu"), 1, Duration.ofMinutes(1), 5, true)
            .exactlyOnce(Long.MAX_VALUE, 1, f.settings.buckets());
    assertEquals(1, f.store.claim(restored).claimed().size());
    List<String> rows = zombieRows(ROWS_PER_CALL, 0);
    f.clock.advance(Duration.ofMinutes(5)); // every lease ran out
    long mark = LogCapture.get().mark();

    assertFalse(state.recover());
    assertEquals(0, f.metrics.laterEpochRows.get(), "the pass has not ended");
    assertTrue(state.recover());

    assertEquals(1, f.metrics.laterEpochRows.get());
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=LEASED_UNDER_LATER_EPOCH"))
            .size());
    assertEquals(rows.size(), count(rows, MessageStatus.PENDING));
    assertEquals(MessageStatus.IN_FLIGHT, f.store.find("later").orElseThrow().status());
  }

  @Test
  void aSweepGoesOnFromWhereItStoppedAtTheNextClaimThenWaitsItsInterval() {
    ExactlyOnceState state = state();
    assertTrue(state.recover());
    List<String> rows = zombieRows(ROWS_PER_CALL + 3, 0); // a fenced instance that still claimed
    f.clock.advance(Duration.ofMinutes(5)); // their leases ran out
    time.sleep(f.settings.abandonedProbeInterval().toMillis()); // a sweep is due

    state.sweepIfDue();
    assertEquals(ROWS_PER_CALL, count(rows, MessageStatus.PENDING));
    state.sweepIfDue(); // the next claim: the sweep reads on, not due again
    assertEquals(rows.size(), count(rows, MessageStatus.PENDING));

    assertEquals(rows.size(), zombieClaims(rows.size()), "the zombie claims them all again");
    f.clock.advance(Duration.ofMinutes(5));
    int asked = pagesAsked.size();
    state.sweepIfDue();
    assertEquals(asked, pagesAsked.size(), "the next sweep waits its interval");
    assertEquals(rows.size(), count(rows, MessageStatus.IN_FLIGHT));
    time.sleep(f.settings.abandonedProbeInterval().toMillis());
    state.sweepIfDue();
    assertEquals(ROWS_PER_CALL, count(rows, MessageStatus.PENDING));
  }

  /**
   * A sweep pass that outlasts its interval (a backlog of many pages, read a few per claim) is
   * followed by a pause as long as itself, so that sweeping takes at most half of the claims' time.
   */
  @Test
  void aSweepLongerThanItsIntervalIsFollowedByAPauseAsLong() {
    ExactlyOnceState state = state();
    assertTrue(state.recover());
    zombieRows(ROWS_PER_CALL + 1, 0);
    f.clock.advance(Duration.ofMinutes(5));
    long interval = f.settings.abandonedProbeInterval().toMillis();
    time.sleep(interval);
    state.sweepIfDue(); // a call's worth of pages
    time.sleep(3 * interval); // claims, acknowledgements
    state.sweepIfDue(); // the pass ends, 3 intervals after it began
    int asked = pagesAsked.size();

    time.sleep(interval + 1);
    state.sweepIfDue();
    assertEquals(asked, pagesAsked.size(), "an interval is not enough after so long a pass");
    time.sleep(2 * interval);
    state.sweepIfDue();
    assertTrue(pagesAsked.size() > asked, "as long as the pass: the next one begins");
  }

  private ExactlyOnceState state() {
    ExactlyOnceState state =
        new ExactlyOnceState(
            recordingPages(f.store), f.settings, () -> NO_OFFSETS, f.metrics, time, PAGE_ROWS);
    state.takeEpoch();
    return state;
  }

  /** {@code n} rows, each of its own aggregate, claimed by an instance of a lower epoch. */
  private List<String> zombieRows(int n, int from) {
    List<String> ids = IntStream.range(from, from + n).mapToObj(i -> "m" + (1000 + i)).toList();
    ids.forEach(id -> f.add("eu", id, "agg-" + id));
    assertEquals(n, zombieClaims(n));
    return ids;
  }

  /** Claims up to {@code n} due rows as an instance of a lower epoch, fenced, that still claims. */
  private int zombieClaims(int n) {
    long lower = 0; // below every epoch taken
    ClaimRequest zombie =
        new ClaimRequest("zombie", Set.of("eu"), n, Duration.ofMinutes(1), 5, true)
            .exactlyOnce(lower, 1, f.settings.buckets());
    return f.store.claim(zombie).claimed().size();
  }

  private long count(List<String> ids, MessageStatus status) {
    return ids.stream().filter(id -> f.store.find(id).orElseThrow().status() == status).count();
  }

  /** The store, recording each page asked for, and failing {@link #failingPage}. */
  private OutboxStore recordingPages(OutboxStore delegate) {
    return (OutboxStore)
        Proxy.newProxyInstance(
            OutboxStore.class.getClassLoader(),
            new Class<?>[] {OutboxStore.class},
            (proxy, method, args) -> {
              if (method.getName().equals("recover")) {
                pagesAsked.add((Long) args[2]);
                if (pagesAsked.size() - 1 == failingPage) {
                  throw new OutboxStoreException(
                      OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", "recover");
                }
              }
              try {
                return method.invoke(delegate, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  private static final OffsetStorageReader NO_OFFSETS =
      new OffsetStorageReader() {
        @Override
        public <T> Map<String, Object> offset(Map<String, T> partition) {
          return null;
        }

        @Override
        public <T> Map<Map<String, T>, Map<String, Object>> offsets(
            Collection<Map<String, T>> partitions) {
          return Map.of();
        }
      };
}
