package dev.outboxrelay.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The retry clock a row gets: doubling from the first delay, capped, jitter taking off up to its
 * share.
 */
class BackoffPolicyTest {
  private static final BackoffPolicy POLICY =
      new BackoffPolicy(Duration.ofSeconds(1), Duration.ofSeconds(10), 2.0, 0.2);

  @Test
  void theDelayGrowsByTheMultiplierFromTheFirstUpToTheCap() {
    assertEquals(Duration.ofSeconds(1), POLICY.delayAfter(1, () -> 0.0));
    assertEquals(Duration.ofSeconds(2), POLICY.delayAfter(2, () -> 0.0));
    assertEquals(Duration.ofSeconds(4), POLICY.delayAfter(3, () -> 0.0));
    assertEquals(Duration.ofSeconds(8), POLICY.delayAfter(4, () -> 0.0));
    assertEquals(Duration.ofSeconds(10), POLICY.delayAfter(5, () -> 0.0), "capped");
    assertEquals(Duration.ofSeconds(10), POLICY.delayAfter(1_000, () -> 0.0), "no overflow");
  }

  @Test
  void jitterTakesOffAtMostItsShareOfTheDelay() {
    assertEquals(Duration.ofMillis(800), POLICY.delayAfter(1, () -> 1.0));
    assertEquals(Duration.ofMillis(900), POLICY.delayAfter(1, () -> 0.5));
    assertEquals(Duration.ofSeconds(8), POLICY.delayAfter(7, () -> 1.0), "of the capped delay");
    BackoffPolicy none = new BackoffPolicy(Duration.ofSeconds(1), Duration.ofSeconds(1), 1.0, 0.0);
    assertEquals(Duration.ofSeconds(1), none.delayAfter(3, () -> 0.99));
  }

  @Test
  void aPolicyThatCouldNotBackOffIsRefused() {
    assertThrows(
        IllegalArgumentException.class,
        () -> new BackoffPolicy(Duration.ofSeconds(2), Duration.ofSeconds(1), 2.0, 0.2));
    assertThrows(
        IllegalArgumentException.class,
        () -> new BackoffPolicy(Duration.ofSeconds(1), Duration.ofSeconds(2), 0.5, 0.2));
    assertThrows(
        IllegalArgumentException.class,
        () -> new BackoffPolicy(Duration.ofSeconds(1), Duration.ofSeconds(2), 2.0, 1.5));
  }
}
