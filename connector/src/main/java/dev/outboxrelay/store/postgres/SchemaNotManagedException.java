package dev.outboxrelay.store.postgres;

/**
 * The outbox table exists without an outbox-relay schema history: another tool keeps it (or its
 * history was not restored). Nothing was changed: migrated, Flyway would have recorded a baseline
 * at version 0 and then failed on the existing table, and the table looked relay-managed at a
 * version it never had.
 */
public final class SchemaNotManagedException extends RuntimeException {
  SchemaNotManagedException(OutboxTable table) {
    super(
        "outbox table "
            + table
            + " exists without an outbox-relay schema history ("
            + table.historyTable()
            + ")");
  }
}
