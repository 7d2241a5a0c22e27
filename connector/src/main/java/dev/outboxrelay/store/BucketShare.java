package dev.outboxrelay.store;

import java.util.ArrayList;
import java.util.List;

/**
 * Exactly-once: the fixed buckets an instance key's aggregates are split into, and which of them
 * one task owns. Bucket = aggregate hash mod {@code buckets}; task {@code taskIndex} of {@code
 * taskCount} owns the buckets with {@code bucket mod taskCount = taskIndex}, strictly: it claims
 * and recovers rows of those buckets only. Each bucket is one source partition, so its committed
 * offset survives a change of {@code taskCount}.
 *
 * @param buckets how many buckets, at least 1
 * @param taskIndex this task, {@code 0 <= taskIndex < taskCount}
 * @param taskCount how many tasks share the buckets, at most {@code buckets}
 */
public record BucketShare(int buckets, int taskIndex, int taskCount) {

  public BucketShare {
    if (buckets < 1) {
      throw new IllegalArgumentException("buckets must be at least 1, not " + buckets);
    }
    if (taskCount < 1 || taskCount > buckets) {
      throw new IllegalArgumentException(
          "taskCount must be in [1, buckets=" + buckets + "], not " + taskCount);
    }
    if (taskIndex < 0 || taskIndex >= taskCount) {
      throw new IllegalArgumentException(
          "taskIndex must be in [0, taskCount=" + taskCount + "), not " + taskIndex);
    }
  }

  /** The bucket of an aggregate with this (non-negative) hash. */
  public int bucketOf(int aggregateHash) {
    return Math.floorMod(aggregateHash, buckets);
  }

  public boolean owns(int bucket) {
    return bucket % taskCount == taskIndex;
  }

  /** Whether this task owns every bucket (then no filter is needed). */
  public boolean ownsAll() {
    return taskCount == 1;
  }

  /** The buckets this task owns, ascending. */
  public List<Integer> ownedBuckets() {
    List<Integer> owned = new ArrayList<>();
    for (int b = taskIndex; b < buckets; b += taskCount) {
      owned.add(b);
    }
    return owned;
  }
}
