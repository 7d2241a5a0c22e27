package dev.outboxrelay.store;

import java.util.Objects;

/**
 * What an exactly-once claim writes besides the lease: the claimer's epoch and this claim's number
 * (the row's position among the records the instance hands to Kafka is then {@code (batch, seq)}),
 * and the buckets it may claim from. The claim commits durably.
 *
 * @param epoch the claiming instance's epoch ({@link OutboxStore#newEpoch()})
 * @param batch the instance's claim counter, increasing from 1
 */
public record ExactlyOnceClaim(long epoch, long batch, BucketShare share) {
  public ExactlyOnceClaim {
    Objects.requireNonNull(share, "share");
    if (batch < 1) {
      throw new IllegalArgumentException("batch must be at least 1");
    }
  }
}
