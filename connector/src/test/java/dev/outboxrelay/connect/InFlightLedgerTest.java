package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.ClaimedMessage;
import java.lang.ref.WeakReference;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class InFlightLedgerTest {

  private static ClaimedMessage claimed(String id, long token, byte[] payload) {
    return ClaimedRows.claimed(id, token, null, payload, 2);
  }

  @Test
  void anEntryDoesNotPinThePayloadOfItsRow() {
    InFlightLedger ledger = new InFlightLedger();
    byte[] payload = new byte[1 << 20];
    WeakReference<byte[]> ref = new WeakReference<>(payload);
    ledger.add(claimed("m1", 1, payload));
    payload = null;
    await()
        .until(
            () -> {
              System.gc();
              return ref.get() == null;
            });
    assertEquals(1, ledger.size(), "the entry itself stays until resolved");
  }

  @Test
  void anEntryKeepsWhatAnOutcomeNeeds() {
    InFlightLedger ledger = new InFlightLedger();
    ledger.add(claimed("m1", 7, new byte[] {1}));
    var entry = ledger.get("m1").orElseThrow();
    assertEquals("eu", entry.instanceKey());
    assertEquals(2, entry.attempts());
    assertEquals(7, entry.lease().token());
    assertEquals(List.of("m1"), ledger.heldLeases().stream().map(h -> h.messageId()).toList());
  }

  @Test
  void resolveRemovesOnlyTheClaimWithTheSameToken() {
    InFlightLedger ledger = new InFlightLedger();
    ledger.add(claimed("m1", 7, null));
    assertFalse(ledger.resolve("m1", 6));
    assertEquals(1, ledger.size());
    assertTrue(ledger.resolve("m1", 7));
    assertTrue(ledger.isEmpty());
  }

  /**
   * A claim reported lost at renewal is no longer held but stays counted, in records and bytes,
   * until its record's outcome takes it (by its own token: the same row claimed again is another
   * claim), or until it is resolved as never sent (a batch forgotten at a stop).
   */
  @Test
  void aLostClaimIsNotHeldButCountedUntilItsRecordIsSettled() {
    InFlightLedger ledger = new InFlightLedger();
    ledger.add(claimed("m1", 7, new byte[100]));
    long bytes = ledger.bytes();
    assertTrue(ledger.markLost("m1", 6).isEmpty(), "another claim of the row");
    assertEquals(7, ledger.markLost("m1", 7).orElseThrow().lease().token());
    assertEquals(List.of(), ledger.heldLeases());
    assertEquals(List.of(), ledger.heldSeqs());
    assertEquals(1, ledger.size());
    assertEquals(bytes, ledger.bytes());
    assertFalse(ledger.isEmpty());

    ledger.add(claimed("m1", 8, new byte[100])); // claimed again, by this task
    assertEquals(2, ledger.size());
    assertTrue(ledger.takeLost("m1", 8).isEmpty(), "the new claim was not lost");
    assertEquals(7, ledger.takeLost("m1", 7).orElseThrow().lease().token());
    assertEquals(1, ledger.size());
    assertEquals(bytes, ledger.bytes());

    ledger.markLost("m1", 8);
    assertFalse(ledger.resolve("m1", 8), "no longer held");
    assertTrue(ledger.isEmpty(), "resolved as never sent, it is not awaited either");
    assertEquals(0, ledger.bytes());
  }

  /**
   * A claim moving from held to lost is never counted twice: an outcome resolving another row at
   * that instant read the ledger as still full and did not wake poll. Another thread reads the
   * count while one claim at a time is added, marked lost and settled.
   */
  @Test
  void aClaimMarkedLostIsNeverCountedTwice() throws Exception {
    InFlightLedger ledger = new InFlightLedger();
    AtomicBoolean done = new AtomicBoolean();
    AtomicInteger most = new AtomicInteger();
    CountDownLatch reading = new CountDownLatch(1);
    Thread reader =
        new Thread(
            () -> {
              reading.countDown();
              while (!done.get()) {
                most.accumulateAndGet(ledger.size(), Math::max);
              }
            });
    reader.start();
    reading.await();
    try {
      for (int i = 0; i < 200_000 && most.get() < 2; i++) {
        ledger.add(claimed("m", i + 1, null)); // the same row, claimed again
        ledger.markLost("m", i + 1).orElseThrow();
        ledger.takeLost("m", i + 1).orElseThrow();
      }
    } finally {
      done.set(true);
      reader.join();
    }
    assertTrue(most.get() <= 1, "one claim in the ledger at a time, counted " + most.get());
    assertTrue(ledger.isEmpty());
    assertEquals(0, ledger.size());
  }

  @Test
  void onlyRoomUnderTheLimitOrAnEmptyLedgerWakesPoll() {
    assertTrue(InFlightLedger.freesPoll(true, false, false), "room for the next claim");
    assertTrue(InFlightLedger.freesPoll(false, false, true), "empty: an isolated reclaim may run");
    assertFalse(InFlightLedger.freesPoll(false, false, false), "a trickle's acknowledgement");
    assertFalse(InFlightLedger.freesPoll(true, true, false), "still full");
  }

  /**
   * A row's text fields count with its payload: each becomes the key, the topic or a header, and
   * the table bounds none of them (a correlation id of kilobytes on a small payload counted
   * nothing, and the task held many times its byte budget).
   */
  @Test
  void aRecordsTextFieldsCountWithItsPayload() {
    ClaimedMessage small = claimed("m1", 1, new byte[10]);
    String large = "c".repeat(10_000);
    ClaimedMessage longFields =
        new ClaimedMessage(
            small.seq(),
            small.messageId(),
            small.instanceKey(),
            large,
            small.aggregateId(),
            large,
            large,
            small.payload(),
            small.payloadBytes(),
            small.headersJson(),
            small.headersOmitted(),
            large,
            small.createdAt(),
            small.deliverBefore(),
            small.deadlineExpired(),
            small.attempts(),
            small.lease(),
            small.leaseExpiresAt(),
            small.aggregateHash());
    assertTrue(InFlightLedger.recordBytes(longFields) > 4 * 10_000);
  }

  @Test
  void itCountsTheBytesOfWhatItHoldsOnceAndIsFullByCountOrBytes() {
    RuntimeFixture f =
        new RuntimeFixture(
            Map.of("claim.batch.size", "2", "producer.override.buffer.memory", "4000"));
    InFlightLedger ledger = new InFlightLedger();
    ledger.add(claimed("m1", 1, new byte[1000]));
    long one = ledger.bytes();
    assertEquals(1000 + InFlightLedger.RECORD_OVERHEAD_BYTES, one, 100);
    ledger.add(claimed("m1", 2, new byte[1000])); // the same row claimed again
    assertEquals(one, ledger.bytes(), "a replaced entry is not counted twice");
    assertFalse(ledger.isFull(f.settings), "1 of 8 records, under 2000 bytes");

    ledger.add(claimed("m2", 1, new byte[1000]));
    assertTrue(ledger.isFull(f.settings), "by bytes: half of the producer's buffer");
    assertFalse(ledger.resolve("m2", 9));
    assertTrue(ledger.resolve("m2", 1));
    assertEquals(one, ledger.bytes());
    assertTrue(ledger.resolve("m1", 2));
    assertEquals(0, ledger.bytes());

    for (int i = 0; i < 8; i++) {
      ledger.add(claimed("small" + i, 1, new byte[1]));
    }
    assertTrue(ledger.isFull(f.settings), "by count: 4 batches of 2");
  }
}
