package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.OutboxStoreException.Kind;
import org.apache.kafka.connect.errors.ConnectException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** What a failed task's REST status says: the sanitized failure, then what to fix, no cause. */
class TaskFailuresTest {
  @ParameterizedTest(name = "{0} {1}")
  @CsvSource(
      delimiter = '|',
      value = {
        "AUTHENTICATION | DB_AUTHENTICATION_FAILED | 28P01 | check connection.user and"
            + " connection.password",
        "PERMISSION | DB_PERMISSION_DENIED | 42501 | grant connection.user's role access to the"
            + " outbox table and its published log (docs/deployment.md)",
        "SCHEMA | DB_SCHEMA_MISSING | 42P01 | create the outbox table"
            + " (schema.migrate.on.start=true, `outbox-relay-cli migrate`, or what `outbox-relay-cli"
            + " schema-sql` prints)",
        "SCHEMA | DB_DATABASE_MISSING | 3D000 | connection.url names a database that does not"
            + " exist",
        "SCHEMA | DB_SCHEMA_MISSING | 42703 | a column the relay reads is missing or of another"
            + " type (dropped or altered since validation?): check the column.* settings,"
            + " column.event.timestamp included, against outbox.table, and that the table is at"
            + " this release's schema version",
        "SCHEMA | DB_SCHEMA_MISSING | 42883 | a column the relay reads is missing or of another"
            + " type (dropped or altered since validation?): check the column.* settings,"
            + " column.event.timestamp included, against outbox.table, and that the table is at"
            + " this release's schema version",
        "SCHEMA | TABLE_WITHOUT_REPLICA_IDENTITY | 55000 | a publication that publishes updates or"
            + " deletes includes the outbox table, which has no replica identity: give it a primary"
            + " key or REPLICA IDENTITY FULL, or take it out of the publication",
        "SCHEMA | PUBLISHED_LOG_WITHOUT_REPLICA_IDENTITY | 55000 | a publication that publishes"
            + " deletes includes the outbox table's published log, whose replica identity was"
            + " taken away, so retention cannot delete from it: give it back with ALTER TABLE <log>"
            + " REPLICA IDENTITY FULL, or take the log out of the publication",
      })
  void aFailureSaysWhatToFix(Kind kind, String reason, String sqlState, String hint) {
    ConnectException e = TaskFailures.of(new OutboxStoreException(kind, reason, sqlState, "claim"));

    assertEquals(
        "outbox-relay: outbox store claim failed: "
            + reason
            + " (SQLState "
            + sqlState
            + "); "
            + hint,
        e.getMessage());
    assertNull(e.getCause());
  }

  /** A migration refused on a server older than 13: named, with what to do. */
  @Test
  void aServerTooOldIsNamed() {
    for (String operation : new String[] {StoreProvider.MIGRATE}) {
      ConnectException e =
          TaskFailures.of(
              new OutboxStoreException(
                  Kind.SCHEMA,
                  "SERVER_TOO_OLD",
                  null,
                  operation,
                  "the server is PostgreSQL 12.22; outbox-relay needs 13 or newer"
                      + " (docs/deployment.md)"));

      assertEquals(
          "outbox-relay: outbox store "
              + operation
              + " failed: SERVER_TOO_OLD (the server is PostgreSQL 12.22; outbox-relay needs 13 or"
              + " newer (docs/deployment.md)); point connection.url at a server of PostgreSQL 13"
              + " or newer",
          e.getMessage());
    }
  }

  /** Not "create the outbox table", which exists, nor "grant access", which is not enough. */
  @Test
  void aFailedMigrationSaysWhereToLook() {
    ConnectException refused =
        TaskFailures.of(
            new OutboxStoreException(
                Kind.SCHEMA,
                StoreProvider.SCHEMA_MIGRATION_FAILED,
                null,
                StoreProvider.MIGRATE,
                "Flyway VALIDATE_ERROR"));
    ConnectException noSchema =
        TaskFailures.of(
            new OutboxStoreException(
                Kind.SCHEMA, "DB_SCHEMA_MISSING", "3F000", StoreProvider.MIGRATE));
    ConnectException notOwner =
        TaskFailures.of(
            new OutboxStoreException(
                Kind.PERMISSION, "DB_PERMISSION_DENIED", "42501", StoreProvider.MIGRATE));

    assertEquals(
        "outbox-relay: outbox store migrate failed: SCHEMA_MIGRATION_FAILED (Flyway"
            + " VALIDATE_ERROR); Flyway's error code says why: read the table's schema history"
            + " (<table>_schema_history: SELECT version, checksum, success FROM it) against the"
            + " migrations of this version (outbox-relay-cli schema-sql shows them;"
            + " docs/deployment.md, Upgrades)",
        refused.getMessage());
    assertEquals(
        "outbox-relay: outbox store migrate failed: DB_PERMISSION_DENIED (SQLState 42501); the"
            + " migration needs the outbox table's owner (and CREATE on its schema): run"
            + " outbox-relay-cli migrate as that role and set schema.migrate.on.start=false"
            + " (docs/deployment.md)",
        notOwner.getMessage());
    // Not "create the outbox table (schema.migrate.on.start=true, ...)": the migration is what
    // failed, for want of the schema it creates the table in.
    assertEquals(
        "outbox-relay: outbox store migrate failed: DB_SCHEMA_MISSING (SQLState 3F000); the schema"
            + " of outbox.table does not exist (or, for a name without one, no schema of"
            + " connection.user's search_path does): create it, or name one that exists",
        noSchema.getMessage());
  }

  @ParameterizedTest
  @CsvSource({"INVALID_DATA, DB_INVALID_DATA, 22001", "INTERNAL, DB_ERROR, XX001"})
  void aFailureWithNothingToFixInTheConfigSaysWhatFailed(
      Kind kind, String reason, String sqlState) {
    assertEquals(
        "outbox-relay: outbox store claim failed: " + reason + " (SQLState " + sqlState + ")",
        TaskFailures.of(new OutboxStoreException(kind, reason, sqlState, "claim")).getMessage());
  }
}
