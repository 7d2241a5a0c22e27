package dev.outboxrelay.connect;

import dev.outboxrelay.config.ConnectorNames;
import java.security.SecureRandom;

/**
 * Lease owner identities: unique per task and per start, so an abandoned ("zombie") earlier
 * instance of the same task id is a different owner and its writes are fenced off.
 */
final class LeaseOwners {
  private LeaseOwners() {}

  private static final String TASK = ConnectorNames.TASK_PART;

  /** How much of the connector's name an owner keeps. */
  static final int NAME_KEPT = ConnectorNames.KEPT_IN_LEASE_OWNERS;

  private static final SecureRandom RANDOM = new SecureRandom();

  /**
   * {@code <connector>/task-<id>/<64 random bits in hex>}: checks that read the owner alone
   * (whether a row is held by this instance, the release of a lost claim's rows) would take a
   * zombie of the same task for this instance if their suffixes matched (the claim's advisory lock
   * hashes the owner to 32 bits whatever its length: two owners sharing it only serialize their
   * claims), 1 in 4 billion pairs with the 32 bits of earlier releases, 1 in 10^19 now. Not a whole
   * UUID: every claimed row carries the owner, and its WAL with it (28 bytes more a row).
   */
  static String newOwner(String connector, String taskId) {
    String suffix = String.format("%016x", RANDOM.nextLong());
    String name = connector.length() > NAME_KEPT ? connector.substring(0, NAME_KEPT) : connector;
    return name + TASK + taskId + "/" + suffix;
  }

  /**
   * Whether another connector's owners could be taken for this one's ({@link #connectorOwners}):
   * its name is cut ({@link #NAME_KEPT}), or holds {@code /task-}.
   */
  static boolean nameIsAmbiguous(String connector) {
    return ConnectorNames.ambiguousInLeaseOwners(connector);
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
