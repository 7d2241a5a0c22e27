package dev.outboxrelay.store;

import java.util.List;

/**
 * What a claim did.
 *
 * @param claimed rows now leased to the claimer, in insertion order
 * @param exhausted rows the claim moved to EXHAUSTED instead of leasing them (an isolated claim
 *     that was abandoned again spent the last attempt), in no particular order
 */
public record ClaimResult(List<ClaimedMessage> claimed, List<ExhaustedMessage> exhausted) {
  public static final ClaimResult EMPTY = new ClaimResult(List.of(), List.of());

  public ClaimResult {
    claimed = List.copyOf(claimed);
    exhausted = List.copyOf(exhausted);
  }

  public boolean isEmpty() {
    return claimed.isEmpty() && exhausted.isEmpty();
  }
}
