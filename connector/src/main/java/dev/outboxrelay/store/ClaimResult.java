package dev.outboxrelay.store;

import java.util.List;

/**
 * What a claim did.
 *
 * @param claimed rows now leased to the claimer, in insertion order
 * @param exhausted rows the claim moved to EXHAUSTED instead of leasing them (an isolated claim
 *     that was abandoned again spent the last attempt), in no particular order
 * @param unread rows now leased to the claimer whose payloads and headers the claim left in the
 *     database, the claimed rows before them having filled its read room ({@link
 *     ClaimRequest#readRoom}): each after every claimed row, in seq order; the claimer gives them
 *     back
 */
public record ClaimResult(
    List<ClaimedMessage> claimed, List<ExhaustedMessage> exhausted, List<HeldLease> unread) {
  public static final ClaimResult EMPTY = new ClaimResult(List.of(), List.of());

  public ClaimResult {
    claimed = List.copyOf(claimed);
    exhausted = List.copyOf(exhausted);
    unread = List.copyOf(unread);
  }

  /** A claim that read every row it leased. */
  public ClaimResult(List<ClaimedMessage> claimed, List<ExhaustedMessage> exhausted) {
    this(claimed, exhausted, List.of());
  }

  public boolean isEmpty() {
    return claimed.isEmpty() && exhausted.isEmpty() && unread.isEmpty();
  }
}
