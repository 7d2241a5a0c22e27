package dev.outboxrelay.connect;

import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.ReplicaIdentity;
import dev.outboxrelay.store.postgres.ServerTooOldException;
import org.apache.kafka.connect.errors.ConnectException;

/** The exceptions that fail a task: sanitized, with a hint naming what to fix. */
final class TaskFailures {
  private TaskFailures() {}

  static ConnectException of(OutboxStoreException e) {
    // No cause attached: Connect shows the whole chain in the task's REST status.
    return new ConnectException("outbox-relay: " + e.getMessage() + hint(e));
  }

  private static String hint(OutboxStoreException e) {
    if (ReplicaIdentity.MISSING.equals(e.reasonCode())) {
      return "; a publication that publishes updates or deletes includes the outbox table, which"
          + " has no replica identity: give it a primary key or REPLICA IDENTITY FULL, or take it"
          + " out of the publication";
    }
    if (ReplicaIdentity.LOG_MISSING.equals(e.reasonCode())) {
      return "; a publication that publishes deletes includes the outbox table's published log,"
          + " whose replica identity was taken away, so retention cannot delete from it: give it"
          + " back with ALTER TABLE <log> REPLICA IDENTITY FULL, or take the log out of the"
          + " publication";
    }
    if (ServerTooOldException.REASON_CODE.equals(e.reasonCode())) {
      return "; point connection.url at a server of PostgreSQL 13 or newer";
    }
    if ("DB_DATABASE_MISSING".equals(e.reasonCode())) {
      return "; connection.url names a database that does not exist";
    }
    if (StoreProvider.CHECK_SCHEMA.equals(e.operation())
        && e.kind() == OutboxStoreException.Kind.PERMISSION) {
      return "; reading the table's schema version needs SELECT on its schema history"
          + " (<table>_schema_history; docs/deployment.md)";
    }
    if (StoreProvider.SCHEMA_NOT_MANAGED.equals(e.reasonCode())) {
      return "; outbox.table exists without an outbox-relay schema history"
          + " (<table>_schema_history), so the task does not migrate it: set"
          + " schema.migrate.on.start=false and keep the table current with your own migration"
          + " tool (outbox-relay-cli schema-sql --after-version N)";
    }
    if (StoreProvider.SCHEMA_MIGRATION_FAILED.equals(e.reasonCode())) {
      return "; Flyway's error code says why: read the table's schema history (<table>_schema_history:"
          + " SELECT version, checksum, success FROM it) against the migrations of this version"
          + " (outbox-relay-cli schema-sql shows them; docs/deployment.md, Upgrades)";
    }
    if (StoreProvider.MIGRATE.equals(e.operation())
        && e.kind() == OutboxStoreException.Kind.PERMISSION) {
      return "; the migration needs the outbox table's owner (and CREATE on its schema): run"
          + " outbox-relay-cli migrate as that role and set schema.migrate.on.start=false"
          + " (docs/deployment.md)";
    }
    if (StoreProvider.MIGRATE.equals(e.operation()) && "3F000".equals(e.sqlState())) {
      return "; the schema of outbox.table does not exist (or, for a name without one, no schema"
          + " of connection.user's search_path does): create it, or name one that exists";
    }
    if (e.kind() == OutboxStoreException.Kind.SCHEMA
        && ("42703".equals(e.sqlState()) || "42883".equals(e.sqlState()))) {
      return "; a column the relay reads is missing or of another type (dropped or altered since"
          + " validation?): check the column.* settings, column.event.timestamp included, against"
          + " outbox.table, and that the table is at this release's schema version";
    }
    return switch (e.kind()) {
      case AUTHENTICATION -> "; check connection.user and connection.password";
      case PERMISSION ->
          "; grant connection.user's role access to the outbox table and its published log"
              + " (docs/deployment.md)";
      case SCHEMA ->
          "; create the outbox table (schema.migrate.on.start=true, `outbox-relay-cli migrate`,"
              + " or what `outbox-relay-cli schema-sql` prints)";
      default -> "";
    };
  }
}
