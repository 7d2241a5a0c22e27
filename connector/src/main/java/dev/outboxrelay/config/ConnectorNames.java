package dev.outboxrelay.config;

/**
 * What a connector's name must be for its tasks' lease owners ({@code <name>/task-<id>/<random>})
 * to tell it from another connector's: no longer than the part an owner keeps, and without the
 * owners' own separator.
 */
public final class ConnectorNames {
  /** How much of the connector's name a lease owner keeps. */
  public static final int KEPT_IN_LEASE_OWNERS = 100;

  /** What separates the connector's name from the task's id in a lease owner. */
  public static final String TASK_PART = "/task-";

  private ConnectorNames() {}

  /**
   * Whether another connector's lease owners could be taken for this one's: its name is cut ({@link
   * #KEPT_IN_LEASE_OWNERS}), or holds {@link #TASK_PART}.
   */
  public static boolean ambiguousInLeaseOwners(String name) {
    return name.length() > KEPT_IN_LEASE_OWNERS || name.contains(TASK_PART);
  }
}
