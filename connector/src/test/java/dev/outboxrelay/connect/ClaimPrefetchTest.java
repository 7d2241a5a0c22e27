package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

class ClaimPrefetchTest {
  private static ClaimPrefetch.Batch batch(String topic) {
    SourceRecord record = new SourceRecord(Map.of(), Map.of(), topic, null, null);
    return new ClaimPrefetch.Batch(RecordHandoff.Positioned.of(List.of(record)), 1, 1, false);
  }

  /**
   * An interrupted wait for the prefetched claim hands nothing over and keeps the interrupt, but
   * not at the claim's cost: the next call hands that same claim over, rather than leaving its rows
   * leased and never sent, and no second claim runs beside it.
   */
  @Test
  void anInterruptedWaitKeepsThePrefetchedClaimForTheNextCall() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger claims = new AtomicInteger();
    try (ClaimPrefetch prefetch =
        new ClaimPrefetch(secondClaimWaitsFor(release, claims), "prefetch-test")) {
      assertEquals("claim-1", next(prefetch).records().get(0).topic());

      Thread.currentThread().interrupt(); // the second claim is still running
      assertTrue(next(prefetch).records().isEmpty());
      assertTrue(Thread.interrupted(), "the interrupt is kept");

      release.countDown();
      assertEquals("claim-2", next(prefetch).records().get(0).topic());
      assertEquals(3, awaitClaims(claims, 3), "the next claim follows the kept one only");
    }
  }

  /**
   * A stop that stops waiting while the batch claimed ahead is still being claimed or mapped is
   * told of that batch when it is done, so that its rows leave the ledger (to be given back) rather
   * than staying there, neither sent nor released.
   */
  @Test
  void aBatchFinishedAfterTheStopStoppedWaitingIsHandedToTheStopWhenDone() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger claims = new AtomicInteger();
    AtomicReference<ClaimPrefetch.Batch> untaken = new AtomicReference<>();
    ClaimPrefetch prefetch =
        new ClaimPrefetch(secondClaimWaitsFor(release, claims), "prefetch-test");
    next(prefetch); // the second claim starts ahead, and blocks
    await().until(() -> claims.get() == 2);

    prefetch.close(Duration.ZERO, untaken::set);
    assertNull(untaken.get(), "still running when the stop stopped waiting");

    release.countDown();
    await().until(() -> untaken.get() != null);
    assertEquals("claim-2", untaken.get().records().get(0).topic());
    assertTrue(prefetch.take().claimedNothing(), "a closed prefetch claims nothing more");
    assertEquals(2, claims.get());
  }

  /** A claim that failed entered nothing in the ledger: the stop has nothing to forget. */
  @Test
  void aFailedClaimAheadIsNothingForTheStop() {
    AtomicInteger claims = new AtomicInteger();
    List<ClaimPrefetch.Batch> untaken = new ArrayList<>();
    ClaimPrefetch prefetch =
        new ClaimPrefetch(
            () -> {
              if (claims.incrementAndGet() == 2) {
                throw new IllegalStateException("claim failed");
              }
              return batch("claim-1");
            },
            "prefetch-test");
    next(prefetch);
    await().until(() -> claims.get() == 2);

    prefetch.close(Duration.ofSeconds(10), untaken::add);

    assertEquals(List.of(), untaken);
  }

  /** The claims' log lines name the connector, task and instance keys, as the task thread's do. */
  @Test
  void claimsAheadRunInTheTaskThreadsLoggingContext() {
    AtomicReference<String> seen = new AtomicReference<>();
    MDC.put("connector.context", "[orders|task-1] ");
    try (ClaimPrefetch prefetch =
        new ClaimPrefetch(
            () -> {
              seen.compareAndSet(null, MDC.get("connector.context"));
              return batch("claim");
            },
            "prefetch-test")) {
      MDC.clear();
      prefetch.startNextAfter(batch("first"));
      prefetch.take();
    } finally {
      MDC.clear();
    }
    assertEquals("[orders|task-1] ", seen.get());
  }

  /** Claims "claim-n"; the second waits until {@code release} is counted down. */
  private static Supplier<ClaimPrefetch.Batch> secondClaimWaitsFor(
      CountDownLatch release, AtomicInteger claims) {
    return () -> {
      int n = claims.incrementAndGet();
      if (n == 2) {
        try {
          assertTrue(release.await(30, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return batch("claim-" + n);
    };
  }

  /** As a poll takes a batch and hands it over. */
  private static ClaimPrefetch.Batch next(ClaimPrefetch prefetch) {
    ClaimPrefetch.Batch batch = prefetch.take();
    prefetch.startNextAfter(batch);
    return batch;
  }

  private static int awaitClaims(AtomicInteger claims, int expected) {
    await().until(() -> claims.get() >= expected);
    return claims.get();
  }
}
