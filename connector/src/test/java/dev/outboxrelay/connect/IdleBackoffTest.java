package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
