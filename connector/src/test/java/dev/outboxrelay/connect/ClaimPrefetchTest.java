package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

class ClaimPrefetchTest {
  private static ClaimPrefetch.Batch batch(String topic) {
    SourceRecord record = new SourceRecord(Map.of(), Map.of(), topic, null, null);
    return new ClaimPrefetch.Batch(RecordHandoff.Positioned.of(List.of(record)), 1);
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
        new ClaimPrefetch(
            () -> {
              int n = claims.incrementAndGet();
              if (n == 2) {
                try {
                  assertTrue(release.await(30, TimeUnit.SECONDS));
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
              return batch("claim-" + n);
            },
            "prefetch-test")) {
      assertEquals("claim-1", next(prefetch).records().get(0).topic());

      Thread.currentThread().interrupt(); // the second claim is still running
      assertTrue(next(prefetch).records().isEmpty());
      assertTrue(Thread.interrupted(), "the interrupt is kept");

      release.countDown();
      assertEquals("claim-2", next(prefetch).records().get(0).topic());
      assertEquals(3, awaitClaims(claims, 3), "the next claim follows the kept one only");
    }
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
