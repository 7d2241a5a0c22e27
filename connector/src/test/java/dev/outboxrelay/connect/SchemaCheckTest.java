package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The schema check a task makes before its first claim, against PostgreSQL: the table must be at
 * this build's schema version, and a table kept by the user's own tool must have the published log
 * that the first publish writes.
 */
class SchemaCheckTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");

  private static OutboxSourceConfig notMigrating(String url) {
    return MigrationOnStartTest.config(url, false);
  }

  private static OutboxStoreException checked(String url) {
    return refused(notMigrating(url));
  }

  @Test
  void aTableAtThisBuildsVersionPasses() {
    String url = Postgres.freshDatabase("schema_check_current");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, TABLE).migrate();
    }
    new PostgresStoreProvider().checkSchema(notMigrating(url));
  }

  @Test
  void anOlderVersionIsRefusedNamingBothVersions() {
    String url = Postgres.freshDatabase("schema_check_older");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, TABLE).migrateTo("8"); // before the published log
    }

    OutboxStoreException e = checked(url);

    assertEquals(StoreProvider.SCHEMA_TOO_OLD, e.reasonCode());
    assertEquals(OutboxStoreException.Kind.SCHEMA, e.kind());
    assertFalse(e.isRetriable());
    assertEquals(
        "outbox store check-schema failed: SCHEMA_TOO_OLD (schema version 8, this build's "
            + SchemaMigrator.CURRENT_VERSION
            + ")",
        e.getMessage());
  }

  /**
   * A newer schema is relayed on (a task of the previous release during a rolling upgrade, whose
   * migrations keep it working), and said.
   */
  @Test
  void aNewerVersionIsRelayedOnAndSaid() throws Exception {
    String url = Postgres.freshDatabase("schema_check_newer");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, TABLE).migrate();
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        // What a later build's migration leaves in the history.
        s.execute(
            "INSERT INTO outbox_schema_history (installed_rank, version, description, type,"
                + " script, checksum, installed_by, execution_time, success)"
                + " SELECT max(installed_rank) + 1, '99', 'later', 'SQL', 'V99__later.sql', 0,"
                + " current_user, 0, true FROM outbox_schema_history");
      }
    }
    long mark = LogCapture.get().mark();

    new PostgresStoreProvider().checkSchema(notMigrating(url));

    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=SCHEMA_NEWER_THAN_PLUGIN"))
            .size());
  }

  /** No table at all is the claim's to report (DB_SCHEMA_MISSING), before anything is sent. */
  @Test
  void aMissingTableIsLeftToTheClaim() {
    String url = Postgres.freshDatabase("schema_check_no_table");
    new PostgresStoreProvider().checkSchema(notMigrating(url));

    try (HikariDataSource pool = Postgres.pool(url, 2)) {
      OutboxStoreException e =
          assertThrows(
              OutboxStoreException.class,
              () ->
                  new PostgresOutboxStore(pool, TABLE, RelayClock.database(), null)
                      .claim(
                          new ClaimRequest(
                              "relay", Set.of("orders"), 10, Duration.ofMinutes(1), 5, true)));
      assertEquals("DB_SCHEMA_MISSING", e.reasonCode());
      assertEquals("42P01", e.sqlState());
      assertFalse(e.isRetriable());
    }
  }

  /** A table of the user's own tool (no schema history) without the published log. */
  @Test
  void anOwnToolsTableWithoutThePublishedLogIsRefused() throws Exception {
    String url = Postgres.freshDatabase("schema_check_own_tool");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, TABLE).migrate();
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        s.execute("DROP TABLE outbox_schema_history");
      }
      new PostgresStoreProvider().checkSchema(notMigrating(url)); // with its log: passes
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        s.execute("DROP TABLE outbox_published");
      }
    }

    OutboxStoreException e = checked(url);

    assertEquals(StoreProvider.SCHEMA_INCOMPLETE, e.reasonCode());
    assertEquals(
        "outbox store check-schema failed: SCHEMA_INCOMPLETE (no published log outbox_published"
            + " (schema version 9, needed whatever the retention: the backlog count reads it):"
            + " apply the statements of `outbox-relay-cli schema-sql --after-version 8`)",
        e.getMessage());
  }

  /**
   * Such a table checked as validation checks it, with any retention (task 0's backlog count reads
   * the log even where publishing writes none): the log, then version 7's index of parked rows
   * (which fails the park of a row with a long correlation id), then the indexes the relay reads.
   */
  @Test
  void anOwnToolsTableLackingWhatTheRelayReadsIsRefused() throws Exception {
    String url = Postgres.freshDatabase("schema_check_own_tool_indexes");
    OutboxSourceConfig noLog = ownTool(url, "0");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, TABLE).migrate();
      exec(admin, "DROP TABLE outbox_schema_history");
      new PostgresStoreProvider().checkSchema(noLog); // all there: passes
      exec(admin, "DROP TABLE outbox_published");
      OutboxStoreException e = refused(noLog);
      assertEquals(StoreProvider.SCHEMA_INCOMPLETE, e.reasonCode());
      assertTrue(e.getMessage().contains("(no published log outbox_published"), e.getMessage());

      new SchemaMigrator(admin, OutboxTable.parse("again")).migrate();
      exec(admin, "ALTER TABLE again_published RENAME TO outbox_published");
      exec(admin, "CREATE INDEX outbox_parked_rows_idx ON outbox (seq)");
      assertEquals(
          "outbox store check-schema failed: SCHEMA_INCOMPLETE (still has the index of parked"
              + " rows of schema version 7 (outbox_parked_rows_idx), which cannot hold a long"
              + " correlation id: apply the statements of `outbox-relay-cli schema-sql"
              + " --after-version 11`)",
          refused(noLog).getMessage());

      exec(admin, "DROP INDEX outbox_parked_rows_idx");
      exec(admin, "DROP INDEX outbox_due_key_seq_idx");
      assertEquals(
          "outbox store check-schema failed: SCHEMA_INCOMPLETE (lacks indexes the relay reads:"
              + " outbox_due_key_seq_idx (every claim), outbox_published_id_hash (message id"
              + " lookups in the published log), outbox_published_at_idx (retention of the"
              + " published log); build them as `outbox-relay-cli schema-sql` shows (a table"
              + " adopted from Debezium: as `outbox-relay-cli adopt-debezium-table` prints them),"
              + " with CREATE INDEX CONCURRENTLY on a table in use)",
          refused(noLog).getMessage());

      // An index left invalid under a needed name (a failed concurrent build) counts as missing,
      // and is named apart: CREATE INDEX IF NOT EXISTS would skip it.
      exec(admin, "CREATE INDEX outbox_due_key_seq_idx ON outbox (instance_key, seq)");
      exec(
          admin,
          "UPDATE pg_index SET indisvalid = false"
              + " WHERE indexrelid = 'outbox_due_key_seq_idx'::regclass");
      String invalid = refused(noLog).getMessage();
      assertTrue(
          invalid.contains("lacks indexes the relay reads: outbox_due_key_seq_idx"), invalid);
      assertTrue(
          invalid.contains(
              "; invalid, which those statements skip: [outbox_due_key_seq_idx], rebuild each with"
                  + " REINDEX INDEX CONCURRENTLY"),
          invalid);
      exec(admin, "DROP INDEX outbox_due_key_seq_idx");

      // Without retention, nothing reads the index of the log's publication times.
      exec(admin, "CREATE INDEX outbox_due_key_seq_idx ON outbox (instance_key, seq)");
      exec(admin, "CREATE INDEX outbox_published_id_hash ON outbox_published (message_id)");
      assertTrue(refused(noLog).getMessage().contains("outbox_published_at_idx"));
      new PostgresStoreProvider().checkSchema(ownTool(url, "-1"));
    }
  }

  /**
   * Version 7's index of parked rows is looked for among the table's own: a same-named table's in a
   * schema further along the search path is not this table's.
   */
  @Test
  void anotherSchemasIndexOfTheSameNameIsNotTheTables() throws Exception {
    String url = Postgres.freshDatabase("schema_check_other_schema");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      exec(admin, "CREATE SCHEMA app");
      try (HikariDataSource app = Postgres.pool(url + "?currentSchema=app,public", 3)) {
        new SchemaMigrator(app, TABLE).migrate();
      }
      exec(admin, "DROP TABLE app.outbox_schema_history");
      exec(admin, "CREATE TABLE public.outbox (seq bigint)");
      exec(admin, "CREATE INDEX outbox_parked_rows_idx ON public.outbox (seq)");
    }

    new PostgresStoreProvider().checkSchema(ownTool(url + "?currentSchema=app,public", "0"));
  }

  private static OutboxSourceConfig ownTool(String url, String retention) {
    return MigrationOnStartTest.config(url, false, Map.of("retention.published.ms", retention));
  }

  private static OutboxStoreException refused(OutboxSourceConfig config) {
    return assertThrows(
        OutboxStoreException.class, () -> new PostgresStoreProvider().checkSchema(config));
  }

  private static void exec(HikariDataSource pool, String sql) throws Exception {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /**
   * A grant revoked since validation fails the task before its first claim, naming what it lacks:
   * found at the first publish instead, after Kafka had the batch, every restart sent it again.
   */
  @Test
  void aRoleThatLostAPrivilegeIsRefusedBeforeTheFirstClaim() throws Exception {
    String url = Postgres.freshDatabase("schema_check_privileges");
    String role = "outbox_relay_revoked";
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, TABLE).migrate();
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '"
                + role
                + "') THEN CREATE ROLE "
                + role
                + " LOGIN; END IF; END $$");
        s.execute("GRANT SELECT, UPDATE, DELETE ON outbox TO " + role);
        s.execute("GRANT SELECT, DELETE ON outbox_published TO " + role); // INSERT revoked
        s.execute("GRANT SELECT ON outbox_schema_history TO " + role);
      }
    }
    OutboxSourceConfig config =
        new OutboxSourceConfig(
            Map.of(
                "connection.url",
                url,
                "connection.user",
                role,
                "instance.keys",
                "orders",
                "schema.migrate.on.start",
                "false"));

    OutboxStoreException e =
        assertThrows(
            OutboxStoreException.class, () -> new PostgresStoreProvider().checkSchema(config));

    assertEquals(OutboxStoreException.Kind.PERMISSION, e.kind());
    assertEquals(
        "outbox store check-privileges failed: DB_PERMISSION_DENIED (lacks INSERT on its"
            + " published log)",
        e.getMessage());
  }
}
