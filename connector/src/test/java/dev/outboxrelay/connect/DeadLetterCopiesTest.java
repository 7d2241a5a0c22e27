package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.SteppableTime;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class DeadLetterCopiesTest {
  private final RuntimeFixture f = new RuntimeFixture(Map.of());
  private final OutboxSourceTaskTest.FailingStore store =
      new OutboxSourceTaskTest.FailingStore(f.store);
  private final SteppableTime time = new SteppableTime();
  private final RelayMetrics metrics = new RelayMetrics();
  private final StoreHealth health = new StoreHealth(metrics, time);
  private final DeadLetterCopies copies = new DeadLetterCopies(store, health, metrics, time);
  private static final KafkaCoordinates COPY = new KafkaCoordinates("dlq", 0, 5);

  /** A row parked under an exactly-once claim of epoch {@code epoch}, batch 1. */
  private ClaimedMessage parked(String id, long epoch) {
    f.add("eu", id, "agg-" + id);
    ClaimedMessage row =
        store
            .claim(
                new ClaimRequest("w", Set.of("eu"), 1, Duration.ofSeconds(30), 5, false)
                    .exactlyOnce(epoch, 1, new dev.outboxrelay.store.BucketShare(4, 0, 1)))
            .claimed()
            .get(0);
    assertEquals(Outcome.APPLIED, store.markFailed(id, row.lease(), "PAYLOAD_TOO_LARGE"));
    return row;
  }

  /**
   * One transaction may commit more dead letters than {@link DeadLetterCopies#MAX_PENDING} (a task
   * with a large claim.batch.size holds up to 4 batches and a claim): a healthy database must not
   * have any of their positions dropped (and logged as if it were away) before the next poll.
   */
  @Test
  void oneTransactionsPositionsAreKeptWhateverItsSize() {
    int inOneTransaction = DeadLetterCopies.MAX_PENDING + 500;
    DeadLetterCopies large = new DeadLetterCopies(store, health, metrics, time, inOneTransaction);
    long mark = LogCapture.get().mark();

    for (int i = 0; i < inOneTransaction; i++) {
      large.committed("m-" + i, i, 1, 1, 1, COPY);
    }

    assertEquals(inOneTransaction, large.pending());
    assertEquals(
        List.of(),
        LogCapture.get().matching(mark, e -> e.message().contains("not recorded")),
        "none dropped");
  }

  /**
   * The database away: the positions wait, said once and counted, tried again only after {@link
   * DeadLetterCopies#RETRY_AFTER_MS} (a write that waits out the statement timeout must not hold
   * every poll), and are then written.
   */
  @Test
  void positionsWaitWhileTheDatabaseIsAwayAndAreWrittenOnceItIsBack() {
    long epoch = store.newEpoch();
    ClaimedMessage a = parked("a", epoch);
    copies.committed("a", a.seq(), a.lease().token(), epoch, 1, COPY);
    long mark = LogCapture.get().mark();
    store.failing = true;

    copies.record();
    time.sleep(DeadLetterCopies.RETRY_AFTER_MS - 1);
    copies.record(); // not tried: no second error
    time.sleep(1);
    copies.record();

    assertEquals(1, copies.pending());
    assertEquals(2, metrics.databaseErrors.get());
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("dead-letter positions failed"))
            .size(),
        "said once");
    assertNull(f.store.find("a").orElseThrow().kafka());

    store.failing = false;
    copies.record();
    assertEquals(1, copies.pending(), "not before the retry is due");
    time.sleep(DeadLetterCopies.RETRY_AFTER_MS);
    copies.record();

    assertEquals(0, copies.pending());
    assertEquals(COPY, f.store.find("a").orElseThrow().kafka());
  }

  /** A wall clock stepped back (an NTP correction) does not hold the retry back. */
  @Test
  void aWallClockSteppedBackDoesNotHoldTheRetryBack() {
    long epoch = store.newEpoch();
    ClaimedMessage a = parked("a", epoch);
    copies.committed("a", a.seq(), a.lease().token(), epoch, 1, COPY);
    store.failing = true;
    copies.record();
    store.failing = false;

    time.stepWallClock(Duration.ofHours(-1));
    time.sleep(DeadLetterCopies.RETRY_AFTER_MS);
    copies.record();
    assertEquals(0, copies.pending());
    assertEquals(COPY, f.store.find("a").orElseThrow().kafka());
  }

  /** One that retrying cannot fix is dropped: the row stays parked without its position. */
  @Test
  void aWriteEveryPositionWouldFailFailsTheTaskAtTheFirst() {
    long epoch = store.newEpoch();
    ClaimedMessage a = parked("a", epoch);
    ClaimedMessage b = parked("b", epoch);
    copies.committed("a", a.seq(), a.lease().token(), epoch, 1, COPY);
    copies.committed("b", b.seq(), b.lease().token(), epoch, 1, COPY);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.PERMISSION, "DB_PERMISSION_DENIED", "42501", "record");
    store.failing = true;
    long mark = LogCapture.get().mark();

    copies.record();

    assertNull(f.store.find("a").orElseThrow().kafka());
    assertEquals(1, metrics.databaseErrors.get(), "one failing write, not one per position");
    assertEquals(
        "42501", health.fatalStoreError().sqlState(), "the task fails, as at any other write");
    assertEquals(
        1,
        LogCapture.get()
            .matching(
                mark, e -> e.message().contains("reason=DB_PERMISSION_DENIED, sqlState=42501"))
            .size(),
        "said with its own reason");
    copies.stop();
    assertEquals(
        2,
        LogCapture.get().matching(mark, e -> e.message().contains("(reason=TASK_STOPPED;")).size(),
        "each said at the stop");
  }

  /**
   * A refusal of one row's write alone (a trigger or a check of an adopted table) drops that
   * position, counted, and the others are written: it does not fail the task.
   */
  @Test
  void aRefusalOfOneRowsWriteDropsItsPositionOnly() {
    long epoch = store.newEpoch();
    ClaimedMessage a = parked("a", epoch);
    ClaimedMessage b = parked("b", epoch);
    copies.committed("a", a.seq(), a.lease().token(), epoch, 1, COPY);
    copies.committed("b", b.seq(), b.lease().token(), epoch, 1, COPY);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.INVALID_DATA, "DB_INVALID_DATA", "23514", "record");
    store.refusedDeadLetterCopy = "a";
    AtomicInteger statements = new AtomicInteger();
    store.beforeDeadLetterCopy = statements::incrementAndGet;

    copies.record();

    assertEquals(0, copies.pending());
    assertNull(f.store.find("a").orElseThrow().kafka(), "refused");
    assertEquals(COPY, f.store.find("b").orElseThrow().kafka(), "written");
    assertEquals(1, metrics.databaseErrors.get());
    assertNull(health.fatalStoreError(), "the task goes on");
    assertEquals(3, statements.get(), "both together, then each alone");

    ClaimedMessage c = parked("c", epoch);
    copies.committed("c", c.seq(), c.lease().token(), epoch, 1, COPY);
    copies.record();
    assertEquals(4, statements.get(), "the next together again");
    assertEquals(COPY, f.store.find("c").orElseThrow().kafka());
  }

  /**
   * A poll's positions go in one statement (one each took the poll's second for about a thousand,
   * in a storm of unpublishable rows), the positions of rows changed since they were parked left
   * out.
   */
  @Test
  void aPollsPositionsAreWrittenInOneStatement() {
    long epoch = store.newEpoch();
    List<String> ids = List.of("a", "b", "c", "d", "e");
    for (String id : ids) {
      ClaimedMessage row = parked(id, epoch);
      copies.committed(id, row.seq(), row.lease().token(), epoch, 1, COPY);
    }
    copies.committed("gone", 999, 1, epoch, 1, COPY);
    AtomicInteger statements = new AtomicInteger();
    store.beforeDeadLetterCopy = statements::incrementAndGet;
    long mark = LogCapture.get().mark();

    copies.record();

    assertEquals(1, statements.get());
    assertEquals(0, copies.pending());
    for (String id : ids) {
      assertEquals(COPY, f.store.find(id).orElseThrow().kafka(), id);
    }
    assertEquals(
        1,
        LogCapture.get()
            .matching(
                mark,
                e ->
                    e.message().contains("message_id=gone")
                        && e.message().contains("reason=PARKED_ROW_CHANGED"))
            .size());
  }

  /**
   * A statement retried after its reply was lost finds every position of it recorded: one line says
   * so, naming the first rows and counting the rest, not a line per row (a thousand for one event).
   */
  @Test
  void rowsChangedSinceTheyWereParkedAreReportedInOneLinePerStatement() {
    long epoch = store.newEpoch();
    int rows = DeadLetterCopies.NAMED_PER_LINE + 15;
    List<dev.outboxrelay.store.DeadLetterCopy> earlierAttempt = new java.util.ArrayList<>();
    for (int i = 0; i < rows; i++) {
      ClaimedMessage row = parked("m-" + i, epoch);
      copies.committed(row.messageId(), row.seq(), row.lease().token(), epoch, 1, COPY);
      earlierAttempt.add(
          new dev.outboxrelay.store.DeadLetterCopy(
              row.messageId(), row.seq(), row.lease().token(), epoch, 1, COPY));
    }
    f.store.recordDeadLetterCopies(earlierAttempt); // its reply lost
    long mark = LogCapture.get().mark();

    copies.record();

    assertEquals(0, copies.pending());
    List<String> lines =
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=PARKED_ROW_CHANGED"))
            .stream()
            .map(e -> e.message())
            .toList();
    assertEquals(1, lines.size(), lines.toString());
    String line = lines.get(0);
    assertTrue(line.contains(rows + " row(s)"), line);
    assertTrue(line.contains("message_id=m-0,") && line.contains("message_id=m-9 and"), line);
    assertFalse(line.contains("message_id=m-10"), line);
    assertTrue(line.contains(" and 15 more "), line);
  }

  /**
   * The task stops with positions waiting (the last transaction's, which no poll will write): each
   * is dropped with its line, and so is one Kafka acknowledges after the stop.
   */
  @Test
  void positionsStillWaitingAtTheStopAreEachSaidDropped() {
    long epoch = store.newEpoch();
    ClaimedMessage a = parked("a", epoch);
    ClaimedMessage b = parked("b", epoch);
    copies.committed("a", a.seq(), a.lease().token(), epoch, 1, COPY);
    long mark = LogCapture.get().mark();

    copies.stop();
    copies.committed("b", b.seq(), b.lease().token(), epoch, 1, COPY);
    copies.record();

    assertEquals(0, copies.pending());
    assertEquals(
        List.of("a", "b"),
        LogCapture.get().matching(mark, e -> e.message().contains("(reason=TASK_STOPPED;")).stream()
            .map(e -> e.message().replaceAll(".*message_id=(\\S+) .*", "$1"))
            .toList());
    assertNull(f.store.find("a").orElseThrow().kafka(), "nothing written after the stop");
  }

  /**
   * One poll writes positions for {@link DeadLetterCopies#WRITING_PER_POLL_MS} at most, and the
   * next poll goes on: Connect stops a task only once its poll returns, within 5 s for the whole
   * stop. (Here a position a statement.)
   */
  @Test
  void aPollWritesPositionsForABoundedTimeAndTheNextGoesOn() {
    DeadLetterCopies alone =
        new DeadLetterCopies(store, health, metrics, time, DeadLetterCopies.MAX_PENDING, 1);
    long epoch = store.newEpoch();
    List<String> ids = List.of("a", "b", "c", "d", "e");
    for (String id : ids) {
      ClaimedMessage row = parked(id, epoch);
      alone.committed(id, row.seq(), row.lease().token(), epoch, 1, COPY);
    }
    long step = DeadLetterCopies.WRITING_PER_POLL_MS * 2 / 5; // three writes pass the bound
    store.beforeDeadLetterCopy = () -> time.sleep(step);

    alone.record();

    assertEquals(2, alone.pending(), "the first three written, then the poll returns");
    assertEquals(COPY, f.store.find("c").orElseThrow().kafka());
    assertNull(f.store.find("d").orElseThrow().kafka());

    alone.record();

    assertEquals(0, alone.pending());
    for (String id : ids) {
      assertEquals(COPY, f.store.find(id).orElseThrow().kafka(), id);
    }
  }

  /** While the database is away, at most MAX_PENDING positions are kept: the oldest go first. */
  @Test
  void theOldestPositionsGoFirstPastTheBound() {
    long mark = LogCapture.get().mark();
    for (int i = 0; i <= DeadLetterCopies.MAX_PENDING; i++) {
      copies.committed("m" + i, i, 1, 1, 1, COPY);
    }
    assertEquals(DeadLetterCopies.MAX_PENDING, copies.pending());
    assertEquals(
        List.of("m0"),
        LogCapture.get()
            .matching(mark, e -> e.message().startsWith("Dead-letter position not recorded"))
            .stream()
            .map(e -> e.message().replaceAll(".*message_id=(\\S+) .*", "$1"))
            .toList(),
        "the oldest is dropped");
  }
}
