package dev.outboxrelay.connect;

import java.util.UUID;

/**
 * Lease owner identities: unique per task and per start, so an abandoned ("zombie") earlier
 * instance of the same task id is a different owner and its writes are fenced off.
 */
final class LeaseOwners {
  private LeaseOwners() {}

  private static final String TASK = "/task-";

  static String newOwner(String connector, String taskId) {
    String suffix = UUID.randomUUID().toString().substring(0, 8);
    String name = connector.length() > 100 ? connector.substring(0, 100) : connector;
    return name + TASK + taskId + "/" + suffix;
  }

  /**
   * How every owner of {@code owner}'s connector begins ({@code <connector>/task-}), or empty for
   * an owner not made by {@link #newOwner} (every owner then counts as the connector's). A
   * connector whose name is another's followed by {@code /task-} (or that shares its first 100
   * characters) cannot be told from it.
   */
  static String connectorOwners(String owner) {
    int task = owner.lastIndexOf(TASK);
    return task < 0 ? "" : owner.substring(0, task + TASK.length());
  }
}
