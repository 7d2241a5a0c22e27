package dev.outboxrelay.connect;

import java.util.UUID;

/**
 * Lease owner identities: unique per task and per start, so an abandoned ("zombie") earlier
 * instance of the same task id is a different owner and its writes are fenced off.
 */
final class LeaseOwners {
  private LeaseOwners() {}

  static String newOwner(String connector, String taskId) {
    String suffix = UUID.randomUUID().toString().substring(0, 8);
    String name = connector.length() > 100 ? connector.substring(0, 100) : connector;
    return name + "/task-" + taskId + "/" + suffix;
  }
}
