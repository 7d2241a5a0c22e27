package dev.outboxrelay.benchmark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class CleanupTest {
  @Test
  void aFailedCleanUpIsAttachedToTheRunsErrorNeverPutInItsPlace() throws Exception {
    // Connect refused the config; deleting the connector that was never created answers 404.
    IllegalStateException refused = new IllegalStateException("Connect refused the config");
    IllegalStateException notFound = new IllegalStateException("404: connector not found");
    List<String> ran = new ArrayList<>();
    Cleanup.after(
        refused,
        () -> {
          throw notFound;
        },
        null,
        () -> ran.add("topic deleted"),
        () -> ran.add("database dropped"));
    assertEquals(List.of("topic deleted", "database dropped"), ran, "every later step still ran");
    assertArrayEquals(new Throwable[] {notFound}, refused.getSuppressed());
  }

  @Test
  void aCleanUpFailureAfterASuccessfulRunIsThrownWithTheLaterOnesSuppressed() {
    Exception first = new Exception("topic");
    Exception second = new Exception("database");
    Exception thrown =
        assertThrows(
            Exception.class,
            () ->
                Cleanup.after(
                    null,
                    () -> {
                      throw first;
                    },
                    () -> {
                      throw second;
                    }));
    assertSame(first, thrown);
    assertArrayEquals(new Throwable[] {second}, thrown.getSuppressed());
  }

  @Test
  void aSwallowedInterruptKeepsTheThreadInterrupted() throws Exception {
    Exception run = new Exception("run");
    Cleanup.after(
        run,
        () -> {
          throw new InterruptedException();
        });
    assertTrue(Thread.interrupted(), "interrupt restored (and cleared here)");
  }
}
