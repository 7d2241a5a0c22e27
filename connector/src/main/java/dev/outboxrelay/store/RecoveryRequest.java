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
 * @param ownOwners how the lease owners of the recovering connector's tasks begin ({@code
 *     <connector>/task-}): a live lease of any other owner is another connector's, relaying the
 *     same instance key, and is left to it ({@link Recovery#foreign}); its epoch, if any, is of
 *     another epoch sequence, and releasing its rows sent them twice. Empty: every owner is own.
 */
public record RecoveryRequest(
    Set<String> instanceKeys,
    BucketShare share,
    long epoch,
    List<CommittedPosition> committed,
    boolean expiredOnly,
    int maxAttempts,
    String ownOwners) {

  public RecoveryRequest {
    instanceKeys = InstanceKeys.requireValid(instanceKeys);
    Objects.requireNonNull(share, "share");
    committed = List.copyOf(committed);
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be at least 1");
    }
    Objects.requireNonNull(ownOwners, "ownOwners");
  }

  /** A recovery that takes every lease owner for its own connector's. */
  public RecoveryRequest(
      Set<String> instanceKeys,
      BucketShare share,
      long epoch,
      List<CommittedPosition> committed,
      boolean expiredOnly,
      int maxAttempts) {
    this(instanceKeys, share, epoch, committed, expiredOnly, maxAttempts, "");
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

  /** Whether a lease of {@code owner} is one of the recovering connector's tasks'. */
  public boolean isOwnOwner(String owner) {
    return owner != null && owner.startsWith(ownOwners);
  }
}
