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
 */
public record RecoveryRequest(
    Set<String> instanceKeys,
    BucketShare share,
    long epoch,
    List<CommittedPosition> committed,
    boolean expiredOnly) {

  public RecoveryRequest {
    instanceKeys = InstanceKeys.requireValid(instanceKeys);
    Objects.requireNonNull(share, "share");
    committed = List.copyOf(committed);
  }
}
