package dev.outboxrelay.store;

import dev.outboxrelay.writer.InstanceKeys;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Exactly-once recovery of the rows a task's buckets hold under lower epochs (docs/design.md).
 *
 * @param epoch the recovering instance's epoch: only rows leased under a lower one are touched
 * @param committed the committed position of each bucket that has one
 * @param expiredOnly false at start (every such row), true afterwards (only expired leases, whose
 *     holders can no longer commit: nothing they hold is covered)
 * @param maxAttempts the attempt budget, {@link ClaimRequest#UNLIMITED_ATTEMPTS} for none: a row
 *     released again after it was claimed alone is charged one ({@link Recovery})
 */
public record RecoveryRequest(
    Set<String> instanceKeys,
    BucketShare share,
    long epoch,
    List<CommittedPosition> committed,
    boolean expiredOnly,
    int maxAttempts) {

  public RecoveryRequest {
    instanceKeys = InstanceKeys.requireValid(instanceKeys);
    Objects.requireNonNull(share, "share");
    committed = List.copyOf(committed);
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be at least 1");
    }
  }

  /** A recovery without an attempt budget. */
  public RecoveryRequest(
      Set<String> instanceKeys,
      BucketShare share,
      long epoch,
      List<CommittedPosition> committed,
      boolean expiredOnly) {
    this(instanceKeys, share, epoch, committed, expiredOnly, ClaimRequest.UNLIMITED_ATTEMPTS);
  }
}
