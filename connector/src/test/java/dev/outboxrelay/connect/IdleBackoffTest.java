package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class IdleBackoffTest {
  private static List<Long> waits(IdleBackoff backoff, int n) {
    List<Long> waits = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      waits.add(backoff.nextWait().toMillis());
    }
    return waits;
  }

  @Test
  void anIdleTaskWaitsThePollInterval() {
    IdleBackoff backoff = new IdleBackoff(Duration.ofMillis(1000));
    assertEquals(List.of(1000L, 1000L), waits(backoff, 2));
  }

  @Test
  void afterRowsTheWaitStartsShortAndDoublesUpToThePollInterval() {
    IdleBackoff backoff = new IdleBackoff(Duration.ofMillis(1000));
    backoff.claimedRows();
    assertEquals(List.of(10L, 20L, 40L, 80L, 160L, 320L, 640L, 1000L, 1000L), waits(backoff, 9));
    backoff.claimedRows();
    assertEquals(List.of(10L, 20L), waits(backoff, 2));
  }

  @Test
  void aPollIntervalShorterThanTheFirstWaitIsNeverExceeded() {
    IdleBackoff backoff = new IdleBackoff(Duration.ofMillis(10));
    backoff.claimedRows();
    assertEquals(List.of(10L, 10L), waits(backoff, 2));
    IdleBackoff tiny = new IdleBackoff(Duration.ofMillis(5));
    tiny.claimedRows();
    assertEquals(List.of(5L, 5L), waits(tiny, 2));
  }

  @Test
  void aShortBatchWhileCaughtUpMakesTheNextClaimWaitOnce() {
    IdleBackoff backoff = new IdleBackoff(Duration.ofMillis(1000));
    backoff.claimed(0, 500); // caught up with the inserts
    assertFalse(backoff.waitBeforeClaim());
    backoff.claimed(1, 500); // a trickle: one row
    assertTrue(backoff.waitBeforeClaim());
    assertFalse(backoff.waitBeforeClaim(), "once");
    assertEquals(List.of(10L), waits(backoff, 1), "the short wait, or a wake-up");
    backoff.claimed(3, 500);
    assertTrue(backoff.waitBeforeClaim());
  }

  @Test
  void aBacklogIsClaimedBackToBackEvenThroughShortBatches() {
    IdleBackoff backoff = new IdleBackoff(Duration.ofMillis(1000));
    backoff.claimed(500, 500); // a full batch: a backlog
    assertFalse(backoff.waitBeforeClaim());
    backoff.claimed(120, 500); // short, but not caught up: ordering held rows back
    assertFalse(backoff.waitBeforeClaim());
    backoff.claimed(0, 500);
    backoff.claimed(120, 500);
    assertTrue(backoff.waitBeforeClaim(), "caught up once a claim found nothing");
    backoff.claimed(500, 500);
    backoff.claimed(120, 500);
    assertFalse(backoff.waitBeforeClaim(), "a full batch ends the trickle");
  }
}
