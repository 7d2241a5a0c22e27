package dev.outboxrelay.store;

import java.util.List;
import java.util.Objects;

/**
 * What an exactly-once claim writes besides the lease: the claimer's epoch and this claim's number
 * (the row's position among the records the instance hands to Kafka is then {@code (batch, seq)}),
 * and the buckets it may claim from. The claim commits durably.
 *
 * @param epoch the claiming instance's epoch ({@link OutboxStore#newEpoch()})
 * @param batch the instance's claim counter, increasing from 1
 * @param suspects empty for a claim of due rows; otherwise the claim takes one row alone, the first
 *     of these seqs that is still a suspect ({@link Recovery}), due and, ordered, next in its
 *     aggregate (no earlier row active unless the claimer holds it), and keeps it flagged isolated:
 *     released again unsent, it is charged an attempt
 */
public record ExactlyOnceClaim(long epoch, long batch, BucketShare share, List<Long> suspects) {
  public ExactlyOnceClaim {
    Objects.requireNonNull(share, "share");
    if (batch < 1) {
      throw new IllegalArgumentException("batch must be at least 1");
    }
    suspects = List.copyOf(suspects);
  }

  /** A claim of due rows. */
  public ExactlyOnceClaim(long epoch, long batch, BucketShare share) {
    this(epoch, batch, share, List.of());
  }

  /** Whether this is a claim of one suspect alone. */
  public boolean isolates() {
    return !suspects.isEmpty();
  }
}
