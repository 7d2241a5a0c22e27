package dev.outboxrelay.store;

/**
 * Which share of the aggregates an ordered claim prefers: those the store maps to {@code slot} of
 * {@code slots}. Every aggregate maps to exactly one slot, always the same one, so tasks with
 * different slots claim disjoint aggregates and never wait on each other's in-flight rows.
 *
 * <p>Only a preference: ordering is still judged row by row, so a claim with an affinity is as safe
 * as one without, whoever holds what.
 *
 * @param slot this claimer's share, {@code 0 <= slot < slots}
 * @param slots how many shares the aggregates are split into, at least 2
 */
public record AggregateAffinity(int slot, int slots) {

  public AggregateAffinity {
    if (slots < 2) {
      throw new IllegalArgumentException("slots must be at least 2");
    }
    if (slot < 0 || slot >= slots) {
      throw new IllegalArgumentException("slot must be in [0, slots)");
    }
  }

  /**
   * The affinity of task {@code taskIndex} of {@code taskCount}; none for a single task (a share of
   * everything is everything).
   */
  public static AggregateAffinity ofTask(int taskIndex, int taskCount) {
    return taskCount < 2
        ? null
        : new AggregateAffinity(Math.floorMod(taskIndex, taskCount), taskCount);
  }
}
