package dev.outboxrelay.store.postgres;

/**
 * Another session is migrating the same outbox table (a task with {@code schema.migrate.on.start},
 * or the operator CLI's {@code migrate}); nothing was changed. Try again once it has finished.
 */
public final class MigrationInProgressException extends RuntimeException {
  private final String table;

  MigrationInProgressException(OutboxTable table) {
    super("another session is migrating outbox table " + table);
    this.table = table.toString();
  }

  /** The outbox table whose migration is running elsewhere. */
  public String table() {
    return table;
  }
}
