package dev.outboxrelay.benchmark;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** What makes a drain's run fail instead of reporting figures. */
class DrainTest {
  private static Drain.Config config(boolean naive, boolean ordered) {
    return new Drain.Config("run", naive, 2, ordered, 500, Map.of(), 10);
  }

  @Test
  void aCleanRunPasses() {
    assertDoesNotThrow(
        () -> Drain.requireDelivered(config(false, true), true, Map.of("PUBLISHED", 10L), 0, 0));
    // At least once a duplicate is counted, not failed; without a log nothing is left.
    assertDoesNotThrow(() -> Drain.requireDelivered(config(false, true), false, Map.of(), 3, 0));
  }

  @Test
  void aRowParkedInADrainFailsTheRun() {
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () ->
                Drain.requireDelivered(
                    config(false, true), false, Map.of("PUBLISHED", 9L, "FAILED", 1L), 0, 0));
    assertTrue(e.getMessage().contains("FAILED=1"), e.getMessage());
  }

  @Test
  void aDuplicateExactlyOnceFailsTheRun() {
    assertThrows(
        IllegalStateException.class,
        () -> Drain.requireDelivered(config(false, true), true, Map.of("PUBLISHED", 10L), 1, 0));
  }

  @Test
  void anOrderViolationFailsAnOrderedRunOfTheRelayOnly() {
    assertThrows(
        IllegalStateException.class,
        () -> Drain.requireDelivered(config(false, true), false, Map.of("PUBLISHED", 10L), 0, 1));
    assertDoesNotThrow(
        () -> Drain.requireDelivered(config(false, false), false, Map.of("PUBLISHED", 10L), 0, 1));
    assertDoesNotThrow(
        () -> Drain.requireDelivered(config(true, true), false, Map.of("PUBLISHED", 10L), 0, 1));
  }
}
