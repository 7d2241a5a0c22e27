package dev.outboxrelay.store;

import java.util.Objects;
import java.util.Set;

/**
 * What a renewal found among the leases it was given; every other lease was renewed.
 *
 * @param lost message ids whose claim was lost: the row is no longer in flight under that lease
 * @param locked message ids still held but not renewed this time: another session held the row's
 *     lock (an operator's open transaction), and the renewal does not wait for it. Their lease runs
 *     on; the next renewal tries again, and finds them renewed, lost or still locked.
 */
public record Renewal(Set<String> lost, Set<String> locked) {
  private static final Renewal ALL_RENEWED = new Renewal(Set.of(), Set.of());

  public Renewal {
    lost = Set.copyOf(Objects.requireNonNull(lost, "lost"));
    locked = Set.copyOf(Objects.requireNonNull(locked, "locked"));
  }

  /** Every lease renewed. */
  public static Renewal allRenewed() {
    return ALL_RENEWED;
  }

  /** Lost claims only (a store without row locks: the in-memory one). */
  public static Renewal lost(Set<String> lost) {
    return new Renewal(lost, Set.of());
  }
}
