package dev.outboxrelay.store;

import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * What ending a stopping task's leases did ({@link OutboxStore#expireLeases}).
 *
 * @param ended message ids whose lease ended now, sorted
 * @param locked message ids still in flight under a live lease, but whose row another session holds
 *     locked (an operator's open transaction): skipped, not waited for; their leases run out
 *     instead
 */
public record EndedLeases(List<String> ended, Set<String> locked) {
  public EndedLeases {
    ended = List.copyOf(Objects.requireNonNull(ended, "ended"));
    locked = Set.copyOf(Objects.requireNonNull(locked, "locked"));
  }

  /** Ended, none skipped (a store without row locks: the in-memory one). */
  public static EndedLeases ended(List<String> ended) {
    return new EndedLeases(ended, Set.of());
  }
}
