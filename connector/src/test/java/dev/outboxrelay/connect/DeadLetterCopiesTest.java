package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.testing.LogCapture;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class DeadLetterCopiesTest {
  private final RuntimeFixture f = new RuntimeFixture(Map.of());
  private final OutboxSourceTaskTest.FailingStore store =
      new OutboxSourceTaskTest.FailingStore(f.store);
  private final DeadLetterCopies copies = new DeadLetterCopies(store);
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

  /** The database away: the positions wait for the next poll, said once, and are then written. */
  @Test
  void positionsWaitWhileTheDatabaseIsAwayAndAreWrittenOnceItIsBack() {
    long epoch = store.newEpoch();
    ClaimedMessage a = parked("a", epoch);
    copies.committed("a", a.lease().token(), epoch, 1, COPY);
    long mark = LogCapture.get().mark();
    store.failing = true;

    copies.record();
    copies.record();

    assertEquals(1, copies.pending());
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("dead-letter positions failed"))
            .size(),
        "said once");
    assertNull(f.store.find("a").orElseThrow().kafka());

    store.failing = false;
    copies.record();

    assertEquals(0, copies.pending());
    assertEquals(COPY, f.store.find("a").orElseThrow().kafka());
  }

  /** One that retrying cannot fix is dropped: the row stays parked without its position. */
  @Test
  void aPositionThatCannotBeWrittenIsDroppedNotRetried() {
    long epoch = store.newEpoch();
    ClaimedMessage a = parked("a", epoch);
    copies.committed("a", a.lease().token(), epoch, 1, COPY);
    store.failure =
        new OutboxStoreException(
            OutboxStoreException.Kind.PERMISSION, "DB_PERMISSION_DENIED", "42501", "record");
    store.failing = true;

    copies.record();

    assertEquals(0, copies.pending());
    assertNull(f.store.find("a").orElseThrow().kafka());
  }

  /** While the database is away, at most MAX_PENDING positions are kept: the oldest go first. */
  @Test
  void theOldestPositionsGoFirstPastTheBound() {
    for (int i = 0; i <= DeadLetterCopies.MAX_PENDING; i++) {
      copies.committed("m" + i, 1, 1, 1, COPY);
    }
    assertEquals(DeadLetterCopies.MAX_PENDING, copies.pending());
  }
}
