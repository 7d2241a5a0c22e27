package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.ClaimedMessage;
import java.lang.ref.WeakReference;
import java.util.List;
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
    ledger.add(claimed("m1", 1, payload), null);
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
    ledger.add(claimed("m1", 7, new byte[] {1}), "POISON");
    var entry = ledger.get("m1").orElseThrow();
    assertEquals("eu", entry.instanceKey());
    assertEquals(2, entry.attempts());
    assertEquals(7, entry.lease().token());
    assertTrue(entry.isDeadLetter());
    assertEquals(List.of("m1"), ledger.heldLeases().stream().map(h -> h.messageId()).toList());
  }

  @Test
  void resolveRemovesOnlyTheClaimWithTheSameToken() {
    InFlightLedger ledger = new InFlightLedger();
    ledger.add(claimed("m1", 7, null), null);
    assertFalse(ledger.resolve("m1", 6));
    assertEquals(1, ledger.size());
    assertTrue(ledger.resolve("m1", 7));
    assertTrue(ledger.isEmpty());
  }

  @Test
  void onlyRoomUnderTheLimitOrAnEmptyLedgerWakesPoll() {
    assertTrue(InFlightLedger.freesPoll(2000, 1999, 2000), "room for the next claim");
    assertTrue(InFlightLedger.freesPoll(2300, 1800, 2000), "a batch of outcomes made room");
    assertTrue(InFlightLedger.freesPoll(1, 0, 2000), "empty: an isolated reclaim may run");
    assertFalse(InFlightLedger.freesPoll(12, 11, 2000), "a trickle's acknowledgement");
    assertFalse(InFlightLedger.freesPoll(2300, 2100, 2000), "still full");
  }
}
