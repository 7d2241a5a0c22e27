package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.Outcome;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Where a task's claims start reading, against the in-memory store. */
class ClaimCursorTest {
  private final RuntimeFixture f = new RuntimeFixture(Map.of("claim.batch.size", "2"));
  private final ClaimCursor cursor = new ClaimCursor();

  private ClaimResult claim() {
    ClaimRequest request = cursor.next(f.settings.claimRequest());
    ClaimResult result = f.store.claim(request);
    cursor.claimed(request, result);
    return result;
  }

  private static List<String> ids(ClaimResult result) {
    return result.claimed().stream().map(ClaimedMessage::messageId).toList();
  }

  private void addRows(int n) {
    for (int i = 0; i < n; i++) {
      f.add("eu", "m" + i, "a" + i);
    }
  }

  @Test
  void afterAFullBatchTheNextClaimStartsAfterItsLastRow() {
    addRows(4);
    ClaimResult first = claim();
    assertEquals(List.of("m0", "m1"), ids(first));
    ClaimRequest next = cursor.next(f.settings.claimRequest());
    assertEquals(first.claimed().get(1).seq(), next.afterSeq());
  }

  @Test
  void afterAShortBatchTheNextClaimStartsFromTheBeginning() {
    addRows(3);
    claim();
    assertEquals(List.of("m2"), ids(claim()));
    assertEquals(ClaimRequest.FROM_THE_START, cursor.next(f.settings.claimRequest()).afterSeq());
  }

  @Test
  void aRowThatBecomesDueBehindTheCursorIsTakenByALaterClaimFromTheBeginning() {
    addRows(2 * (ClaimCursor.FROM_THE_START_EVERY + 4));
    ClaimedMessage m0 = claim().claimed().get(0);
    assertEquals(Outcome.APPLIED, f.store.release(m0.messageId(), m0.lease()));
    assertFalse(ids(claim()).contains("m0"), "the next claim starts after m1");
    int claims = 2;
    boolean taken = false;
    while (!taken && claims <= ClaimCursor.FROM_THE_START_EVERY + 1) {
      taken = ids(claim()).contains("m0");
      claims++;
    }
    assertTrue(taken, "m0 was claimed again within " + claims + " claims");
  }
}
