package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A task that migrates the schema on start. Schema version 7 advises building its indexes
 * beforehand, concurrently, and goes on past an INVALID one left under the name by such a build
 * that failed: the task says so at once, naming the index (the relay would otherwise claim without
 * it, scanning the table). A migration Flyway refuses for a reason of its own (an applied migration
 * whose checksum no longer matches) fails the task naming Flyway's error code.
 */
class MigrationOnStartTest {
  private static OutboxSourceConfig migratingOnStart(String url) {
    return config(url, true);
  }

  /** A task's configuration on {@code url}'s outbox table (also SchemaCheckTest's). */
  static OutboxSourceConfig config(String url, boolean migrateOnStart) {
    return config(url, migrateOnStart, Map.of());
  }

  /** ... with other settings besides. */
  static OutboxSourceConfig config(
      String url, boolean migrateOnStart, Map<String, String> settings) {
    Map<String, String> props = new java.util.HashMap<>(settings);
    props.put("connection.url", url);
    props.put("connection.user", Postgres.user());
    props.put("instance.keys", "orders");
    props.put("schema.migrate.on.start", Boolean.toString(migrateOnStart));
    return new OutboxSourceConfig(props);
  }

  @Test
  void aMigrationOnStartThatLeavesAnInvalidIndexNamesIt() throws Exception {
    String url = Postgres.freshDatabase("invalid_index_warning");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, OutboxTable.parse("outbox")).migrateTo("6");
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        // The index of a failed concurrent build: there, under its name, never read.
        s.execute(
            "CREATE INDEX outbox_due_aggregate_idx ON outbox (instance_key, aggregate_id, seq)");
        s.execute(
            "UPDATE pg_index SET indisvalid = false"
                + " WHERE indexrelid = 'outbox_due_aggregate_idx'::regclass");
      }
      OutboxSourceConfig config = migratingOnStart(url);
      long mark = LogCapture.get().mark();

      new PostgresStoreProvider().migrate(config);

      List<LogCapture.Event> warnings =
          LogCapture.get().matching(mark, e -> e.message().contains("reason=INVALID_INDEX"));
      assertEquals(1, warnings.size());
      assertEquals("WARN", warnings.get(0).level());
      assertTrue(
          warnings.get(0).message().contains("[outbox_due_aggregate_idx]"),
          warnings.get(0).message());
      assertEquals(
          SchemaMigrator.CURRENT_VERSION,
          new SchemaMigrator(admin, OutboxTable.parse("outbox")).currentVersion().orElseThrow());

      mark = LogCapture.get().mark();
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        s.execute("REINDEX INDEX CONCURRENTLY outbox_due_aggregate_idx");
      }
      new PostgresStoreProvider().migrate(config);
      assertEquals(
          List.of(),
          LogCapture.get().matching(mark, e -> e.message().contains("reason=INVALID_INDEX")));
    }
  }

  /**
   * ... and a task that does not migrate names it at its start too: validation names it only when
   * the connector is created or changed, and a worker restarted since relays without the index.
   */
  @Test
  void aTaskThatDoesNotMigrateNamesAnInvalidIndexAtItsStart() throws Exception {
    String url = Postgres.freshDatabase("invalid_index_at_start");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, OutboxTable.parse("outbox")).migrate();
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "UPDATE pg_index SET indisvalid = false"
                + " WHERE indexrelid = 'outbox_due_key_seq_idx'::regclass");
      }
      long mark = LogCapture.get().mark();

      new PostgresStoreProvider().checkSchema(config(url, false, Map.of()));

      List<LogCapture.Event> warnings =
          LogCapture.get().matching(mark, e -> e.message().contains("reason=INVALID_INDEX"));
      assertEquals(1, warnings.size(), warnings::toString);
      assertTrue(
          warnings.get(0).message().contains("[outbox_due_key_seq_idx]"),
          warnings.get(0).message());
    }
  }

  /**
   * With {@code schema.migrate.on.start}, a task that leaves the migration to the first task finds
   * a table not created yet too old, to be waited for: the check passed it, and its first claim
   * failed the task on the missing table (42P01, not retried). A table without a history is refused
   * as the first task's migration refuses it.
   */
  @Test
  void aTaskWaitingForTheFirstTasksMigrationWaitsForTheTableAndRefusesAnUnmanagedOne()
      throws Exception {
    String url = Postgres.freshDatabase("waits_for_first_task");
    PostgresStoreProvider provider = new PostgresStoreProvider();
    OutboxStoreException missing =
        assertThrows(OutboxStoreException.class, () -> provider.checkSchema(migratingOnStart(url)));
    assertEquals(StoreProvider.SCHEMA_TOO_OLD, missing.reasonCode());

    provider.migrate(migratingOnStart(url)); // the first task
    provider.checkSchema(migratingOnStart(url));

    String unmanaged = Postgres.freshDatabase("unmanaged_for_waiting_task");
    try (HikariDataSource admin = Postgres.pool(unmanaged, 1);
        Connection c = admin.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE outbox (seq bigserial PRIMARY KEY, message_id text NOT NULL)");
    }
    OutboxStoreException refused =
        assertThrows(
            OutboxStoreException.class, () -> provider.checkSchema(migratingOnStart(unmanaged)));
    assertEquals(StoreProvider.SCHEMA_NOT_MANAGED, refused.reasonCode());
    assertFalse(refused.isRetriable());
  }

  /**
   * A table another tool keeps (created after validation, or restored without its history) is
   * refused before Flyway runs: Flyway recorded a baseline at version 0 and then failed on the
   * existing table (42P07), a generic error at every restart, and the table then looked
   * relay-managed at a version it never had.
   */
  @Test
  void aTableWithoutASchemaHistoryIsRefusedAndLeftAsItWas() throws Exception {
    String url = Postgres.freshDatabase("unmanaged_table");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        s.execute("CREATE TABLE outbox (seq bigserial PRIMARY KEY, message_id text NOT NULL)");
      }

      OutboxStoreException e =
          assertThrows(
              OutboxStoreException.class,
              () -> new PostgresStoreProvider().migrate(migratingOnStart(url)));

      assertEquals("outbox store migrate failed: SCHEMA_NOT_MANAGED", e.getMessage());
      assertFalse(e.isRetriable());
      assertTrue(
          TaskFailures.of(e).getMessage().contains("set schema.migrate.on.start=false"),
          () -> TaskFailures.of(e).getMessage());
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT to_regclass('outbox_schema_history') IS NULL")) {
        rs.next();
        assertTrue(rs.getBoolean(1), "no schema history written");
      }
    }
  }

  @Test
  void aMigrationFlywayRefusesNamesItsErrorCode() throws Exception {
    String url = Postgres.freshDatabase("refused_migration");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, OutboxTable.parse("outbox")).migrate();
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        s.execute("UPDATE outbox_schema_history SET checksum = 42 WHERE version = '1'");
      }

      OutboxStoreException e =
          assertThrows(
              OutboxStoreException.class,
              () -> new PostgresStoreProvider().migrate(migratingOnStart(url)));

      assertEquals(
          "outbox store migrate failed: SCHEMA_MIGRATION_FAILED (Flyway VALIDATE_ERROR)",
          e.getMessage());
      assertEquals(OutboxStoreException.Kind.SCHEMA, e.kind());
    }
  }
}
