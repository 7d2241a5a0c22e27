package dev.outboxrelay.cli;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.cli.operator.SchemaScript;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.writer.EnqueueResult;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** migrate applies SchemaMigrator; schema-sql prints the same migrations as working plain SQL. */
class MigrateAndSchemaSqlTest {
  private OutboxFixture db;

  @BeforeEach
  void database() {
    db = OutboxFixture.empty("migrate");
  }

  @AfterEach
  void close() {
    db.close();
  }

  @Test
  void migratesAnEmptyDatabaseAndReplayIsANoOp() {
    Cli.Result first = db.cli().run("migrate");
    assertEquals(ExitCode.OK, first.exitCode(), first::toString);
    assertEquals(
        "table outbox: schema version none -> "
            + SchemaMigrator.CURRENT_VERSION
            + " ("
            + SchemaMigrator.CURRENT_VERSION
            + " migration(s) applied)\n",
        first.out());

    Cli.Result again = db.cli().run("migrate");
    assertEquals(ExitCode.OK, again.exitCode(), again::toString);
    assertEquals(
        "table outbox: schema version " + SchemaMigrator.CURRENT_VERSION + ", nothing to apply\n",
        again.out());
  }

  @Test
  void targetStagesAnUpgrade() {
    assertEquals(
        "table outbox: schema version none -> 2 (2 migration(s) applied)\n",
        db.cli().run("migrate", "--target", "2").out());
    assertEquals(
        "table outbox: schema version 2 -> 3 (1 migration(s) applied)\n",
        db.cli().run("migrate", "--target", "3").out());
    Cli.Result down = db.cli().run("migrate", "--target", "1");
    assertEquals(ExitCode.USAGE, down.exitCode(), down::toString);
    // Found once connected; a usage error names the option, never the value typed.
    assertEquals("error: --target is older than the table's version 3\n", down.err());
    Cli.Result beyond = db.cli().run("migrate", "--target", "99");
    assertEquals(ExitCode.USAGE, beyond.exitCode(), beyond::toString);
  }

  /**
   * Version 7 advises building its indexes beforehand, concurrently; such a build that failed
   * leaves an INVALID index under the name, which the migration's IF NOT EXISTS then goes on past.
   * migrate applies the migrations and fails, naming the index, so that a deployment stops there
   * rather than leave every ordered claim without its aggregate index.
   */
  @Test
  void anInvalidIndexLeftByAFailedPreBuildFailsTheMigration() throws SQLException {
    assertEquals(ExitCode.OK, db.cli().run("migrate", "--target", "6").exitCode());
    try (Connection c = db.dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, instance_key, payload)"
              + " VALUES ('order', 'a', 'created', 'eu', '{}'), ('order', 'b', 'created', 'eu',"
              + " '{}')");
      // A unique build over two equal values fails (23505) and leaves the index INVALID.
      SQLException failed =
          assertThrows(
              SQLException.class,
              () ->
                  s.execute(
                      "CREATE UNIQUE INDEX CONCURRENTLY outbox_due_aggregate_idx ON outbox ((1))"));
      assertEquals("23505", failed.getSQLState());
    }

    Cli.Result r = db.cli().run("migrate");

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertTrue(
        r.out().contains("schema version 6 -> " + SchemaMigrator.CURRENT_VERSION), r::toString);
    assertTrue(r.err().contains("INVALID_INDEX"), r::toString);
    assertTrue(r.err().contains("[outbox_due_aggregate_idx]"), r::toString);

    try (Connection c = db.dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("DROP INDEX CONCURRENTLY outbox_due_aggregate_idx");
      s.execute(
          "CREATE INDEX CONCURRENTLY outbox_due_aggregate_idx ON outbox (instance_key,"
              + " aggregate_id, seq) WHERE published_at IS NULL AND parked_at IS NULL");
    }
    Cli.Result repaired = db.cli().run("migrate");
    assertEquals(ExitCode.OK, repaired.exitCode(), repaired::toString);
  }

  /**
   * A migration that cannot take the table's lock within --lock-timeout gives up, changing nothing,
   * and says why; the application's inserts would otherwise queue behind its wait.
   */
  @Test
  @Timeout(value = 2, unit = TimeUnit.MINUTES) // without the lock timeout it would wait for ever
  void aMigrationThatCannotTakeItsLockGivesUpAndChangesNothing() throws SQLException {
    db.cli().run("migrate", "--target", "7");
    try (Connection reader = db.dataSource.getConnection();
        Statement s = reader.createStatement()) {
      reader.setAutoCommit(false);
      s.execute("SELECT count(*) FROM outbox"); // a long transaction on the table

      Cli.Result r = db.cli().run("migrate", "--lock-timeout", "50");

      assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
      assertTrue(
          r.err()
              .startsWith(
                  "error: migrate failed: DB_LOCK_NOT_AVAILABLE (SQLState 55P03): another"
                      + " transaction held a lock"),
          r::toString);
      assertTrue(r.err().contains("; the table's schema version is still 7\n"), r::toString);
      reader.commit();
    }
    Cli.Result after = db.cli().run("migrate", "--target", "7");
    assertTrue(after.out().contains("schema version 7, nothing to apply"), after::toString);
    assertEquals(ExitCode.USAGE, db.cli().run("migrate", "--lock-timeout", "-1").exitCode());
    assertEquals(ExitCode.USAGE, db.cli().run("migrate", "--lock-timeout", "3600001").exitCode());
  }

  /**
   * A run that fails part-way keeps the migrations before the failed one (each its own
   * transaction): it says the version the table now has, which a deployment script needs. Versions
   * 10 and 11 touch only the published log; 12 waits for the table's lock behind a writer.
   */
  @Test
  @Timeout(value = 2, unit = TimeUnit.MINUTES)
  void aRunThatFailsPartWaySaysTheVersionTheTableNowHas() throws SQLException {
    db.cli().run("migrate", "--target", "9");
    try (Connection writer = db.dataSource.getConnection();
        Statement s = writer.createStatement()) {
      writer.setAutoCommit(false);
      s.execute("LOCK TABLE outbox IN ROW EXCLUSIVE MODE"); // an application's insert, open

      Cli.Result r = db.cli().run("migrate", "--lock-timeout", "200");

      assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
      assertTrue(r.err().startsWith("error: migrate failed: DB_LOCK_NOT_AVAILABLE"), r::toString);
      assertTrue(
          r.err().contains("; the table's schema version is now 11 (it was 9 when migrate began)"),
          r::toString);
      writer.rollback();
    }
  }

  /**
   * While a task (here a SchemaMigrator waiting for the table's lock) migrates the table, migrate
   * says so at once and changes nothing, instead of waiting behind Flyway's lock and then failing
   * without a reason.
   */
  @Test
  @Timeout(value = 2, unit = TimeUnit.MINUTES)
  void aMigrationRunningElsewhereIsReportedAtOnce() throws Exception {
    db.cli().run("migrate", "--target", "7");
    ExecutorService executor = Executors.newSingleThreadExecutor();
    try (HikariDataSource task = new HikariDataSource();
        Connection reader = db.dataSource.getConnection();
        Statement s = reader.createStatement()) {
      task.setJdbcUrl(db.url);
      task.setUsername(TestDatabase.user());
      task.setMaximumPoolSize(3);
      reader.setAutoCommit(false);
      s.execute("SELECT count(*) FROM outbox"); // the task's migration waits for it
      Future<Integer> running =
          executor.submit(
              new SchemaMigrator(task, OutboxTable.parse("outbox"), Duration.ZERO)::migrate);
      await().atMost(Duration.ofSeconds(60)).until(this::aSessionWaitsForALock);

      Cli.Result r = db.cli().run("migrate");

      assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
      assertEquals(
          "error: SCHEMA_MIGRATION_IN_PROGRESS: another session is migrating table outbox (a task"
              + " with schema.migrate.on.start, or another migrate); nothing was changed: run the"
              + " command again when it has finished\n",
          r.err());
      assertFalse(running.isDone());
      reader.commit();
      assertEquals(
          Integer.parseInt(SchemaMigrator.CURRENT_VERSION) - 7, running.get(1, TimeUnit.MINUTES));
    } finally {
      executor.shutdownNow();
    }
    Cli.Result after = db.cli().run("migrate");
    assertTrue(after.out().contains("nothing to apply"), after::toString);
  }

  private boolean aSessionWaitsForALock() throws SQLException {
    try (Connection c = db.dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    + " AND datname = current_database()")) {
      rs.next();
      return rs.getLong(1) > 0;
    }
  }

  /**
   * A server older than 13 is named first, before the table is looked at: a table another tool
   * keeps was reported first, with advice (print its SQL) that led to a schema the relay refuses.
   * The database here answers server_version_num as 12.22 (a shadow of current_setting on the
   * search path, as ServerTooOldTest does), and nothing is created or changed.
   */
  @Test
  void aServerOlderThanThirteenIsNamedBeforeTheTableIsLookedAt() throws SQLException {
    db.exec("CREATE TABLE outbox (id bigint)"); // kept by another tool: no schema history
    db.exec("CREATE SCHEMA pg12");
    db.exec(
        "CREATE FUNCTION pg12.current_setting(setting text) RETURNS text LANGUAGE sql STABLE"
            + " AS $$ SELECT CASE WHEN setting = 'server_version_num' THEN '120022'"
            + " ELSE pg_catalog.current_setting(setting) END $$");
    db.exec(
        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET search_path = public, pg12,"
            + " pg_catalog', current_database()); END $$");

    Cli.Result r = db.cli().run("migrate");

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertTrue(r.err().startsWith("error: SERVER_TOO_OLD: "), r::toString);
    assertTrue(r.err().contains("PostgreSQL 12.22"), r::toString);
    assertEquals(
        0, db.count("pg_catalog.pg_tables", "tablename = 'outbox_schema_history'"), "nothing made");
  }

  @Test
  void aSchemaNewerThanTheCliIsRefused() throws SQLException {
    db.cli().run("migrate");
    db.exec(
        "INSERT INTO outbox_schema_history (installed_rank, version, description, type, script,"
            + " checksum, installed_by, execution_time, success)"
            + " VALUES (100, '999', 'future', 'SQL', 'V999__future.sql', 0, 'test', 0, TRUE)");

    Cli.Result r = db.cli().run("migrate");

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertTrue(r.err().startsWith("error: SCHEMA_TOO_NEW: "), r::toString);
  }

  @Test
  void schemaSqlBuildsAWorkingOutboxThatMigrateThenLeavesAlone() throws SQLException {
    Cli.Result sql = new Cli().run("schema-sql");
    assertEquals(ExitCode.OK, sql.exitCode(), sql::toString);
    db.exec(sql.out());

    assertWorkingOutbox("outbox");
    assertEquals(ExitCode.OK, db.cli().forKey("eu", "status").exitCode());
    Cli.Result migrate = db.cli().run("migrate");
    assertEquals(ExitCode.DATABASE, migrate.exitCode(), migrate::toString);
    assertTrue(migrate.err().startsWith("error: SCHEMA_NOT_MANAGED: table outbox exists"));
  }

  @Test
  void schemaSqlFillsASchemaQualifiedTableAndPrintsUpgrades() throws SQLException {
    db.exec("CREATE SCHEMA app");
    Cli.Result upToV2 = new Cli().run("schema-sql", "--table", "app.orders_outbox");
    String v1AndV2 = upToV2.out().substring(0, upToV2.out().indexOf("-- V3__"));
    db.exec(v1AndV2);
    Cli.Result upgrade =
        new Cli().run("schema-sql", "--table", "app.orders_outbox", "--after-version", "2");
    assertTrue(upgrade.out().contains("-- V3__"), upgrade::toString);
    assertFalse(upgrade.out().contains("V1__"), upgrade::toString);
    assertTrue(upgrade.out().contains("\"app\".\"orders_outbox\""), upgrade::toString);
    assertFalse(upgrade.out().contains("${"), upgrade::toString);
    db.exec(upgrade.out());

    assertWorkingOutbox("app.orders_outbox");
    String latest = SchemaMigrator.CURRENT_VERSION;
    Cli.Result none = new Cli().run("schema-sql", "--after-version", latest);
    assertTrue(none.out().contains("no migrations after version " + latest), none::toString);
  }

  /**
   * An upgrade printed one version per file, each applied in its own transaction, ends where the
   * whole upgrade does: each file holds exactly its migration.
   */
  @Test
  void anUpgradePrintedOneVersionAtATimeAppliesStepByStep() throws SQLException {
    Cli.Result upToV2 = new Cli().run("schema-sql", "--to-version", "2");
    assertTrue(upToV2.out().contains("-- V2__"), upToV2::toString);
    assertFalse(upToV2.out().contains("-- V3__"), upToV2::toString);
    db.exec(upToV2.out());
    int latest = Integer.parseInt(SchemaMigrator.CURRENT_VERSION);
    for (int version = 3; version <= latest; version++) {
      Cli.Result step =
          new Cli()
              .run(
                  "schema-sql",
                  "--after-version",
                  Integer.toString(version - 1),
                  "--to-version",
                  Integer.toString(version));
      assertEquals(ExitCode.OK, step.exitCode(), step::toString);
      assertEquals(1, step.out().split("\n-- V\\d+__", -1).length - 1, step::toString);
      assertTrue(step.out().contains("\n-- V" + version + "__"), step::toString);
      db.exec(step.out());
    }

    assertWorkingOutbox("outbox");
  }

  /**
   * A script for a table named without a schema finds only that table's indexes, not a same-named
   * table's further along the search path (one whose own index the operator dropped beforehand, as
   * version 13's notes advise), and gives the session its search path back.
   */
  @Test
  void aScriptLeavesAnotherSchemasTableAloneAndPutsTheSearchPathBack() throws SQLException {
    String whole = new Cli().run("schema-sql").out();
    String publicTable = new Cli().run("schema-sql", "--table", "public.outbox").out();
    db.exec(publicTable.substring(0, publicTable.indexOf("-- V13__")));
    db.exec("CREATE SCHEMA app");
    try (Connection c = db.dataSource.getConnection();
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      s.execute("SET LOCAL search_path = app, public");
      s.execute(whole.substring(0, whole.indexOf("-- V13__")));
      s.execute("DROP INDEX app.outbox_due_seq_idx");
      s.execute(new Cli().run("schema-sql", "--after-version", "12").out());
      try (ResultSet rs = s.executeQuery("SHOW search_path")) {
        rs.next();
        assertEquals("app, public", rs.getString(1));
      }
      c.commit();
    }
    assertEquals(
        1,
        db.count("pg_indexes", "schemaname = 'public' AND indexname = 'outbox_due_seq_idx'"),
        "the other schema's index dropped");
    assertEquals(
        1, db.count("pg_indexes", "schemaname = 'app' AND indexname = 'outbox_due_key_seq_idx'"));
  }

  /**
   * An upgrade applied while a long transaction reads the table gives up on its lock (55P03)
   * instead of waiting, with the application's inserts queued behind it, and leaves the table as it
   * was.
   */
  @Test
  void schemaSqlUpgradeGivesUpOnALockHeldByALongTransaction() throws SQLException {
    Cli.Result upToV2 = new Cli().run("schema-sql");
    db.exec(upToV2.out().substring(0, upToV2.out().indexOf("-- V3__")));
    String upgrade = new Cli().run("schema-sql", "--after-version", "2").out();
    assertTrue(
        upgrade.contains(
            SchemaScript.migrationPreamble()
                + SchemaScript.searchPathOfTheTable(OutboxTable.parse("outbox"), false)
                + "-- outbox-relay"),
        upgrade);

    try (Connection reader = db.dataSource.getConnection()) {
      reader.setAutoCommit(false);
      try (Statement s = reader.createStatement()) {
        s.execute("SELECT count(*) FROM outbox");
      }
      try (Connection c = db.dataSource.getConnection()) {
        c.setAutoCommit(false);
        // Without the script's lock timeout the upgrade would wait for the reader, which waits
        // for it: this cancels it instead (57014, not the lock timeout's 55P03).
        c.createStatement().execute("SET statement_timeout = '60s'");
        SQLException refused =
            assertThrows(SQLException.class, () -> c.createStatement().execute(upgrade));
        assertEquals("55P03", refused.getSQLState(), refused::toString);
        c.rollback();
      }
      reader.rollback();
    }
    assertEquals(
        0,
        db.count(
            "information_schema.columns", "table_name = 'outbox' AND column_name = 'parked_at'"),
        "version 7's column was not added");

    db.exec(upgrade);
    assertWorkingOutbox("outbox");
  }

  /**
   * Applied statement by statement outside a transaction (psql -f without -1), where SET LOCAL only
   * warns, a migration stops before its first change instead of waiting for its locks without
   * limit, or being applied in part: every migration begins with the guard, and a session whose own
   * lock_timeout is the script's (a role's or a database's setting) is stopped all the same.
   */
  @Test
  void schemaSqlRunOutsideATransactionStopsBeforeItsFirstChange() throws SQLException {
    String script = new Cli().run("schema-sql").out();
    String preamble = SchemaScript.migrationPreamble();
    for (SchemaScript.Migration m : SchemaScript.migrations()) {
      String header = "-- " + m.fileName() + "\n";
      int at = script.indexOf(header);
      assertTrue(at >= 0, m.fileName());
      int body = script.indexOf("\n", script.indexOf("\n", at) + 1) + 1; // past the rule below
      assertTrue(script.startsWith(preamble, body), () -> m.fileName() + " begins with the guard");
    }
    assertEquals(
        SchemaScript.migrations().size(), script.split(Pattern.quote(preamble), -1).length - 1);

    try (Connection c = db.dataSource.getConnection();
        Statement s = c.createStatement()) {
      c.setAutoCommit(true);
      assertStopsOutsideATransaction(s, preamble);
      // A lock timeout equal to the script's, as a role or a database may set it, still stops it.
      s.execute("SET lock_timeout = '5s'");
      assertStopsOutsideATransaction(s, preamble);

      c.setAutoCommit(false);
      for (String statement : preamble.split("\n")) {
        s.execute(statement); // inside one: it passes
      }
      c.commit();
      c.setAutoCommit(true);
      assertStopsOutsideATransaction(s, preamble); // the marker ended with that transaction
      s.execute("RESET lock_timeout"); // a pooled connection
    }
  }

  /** Runs the preamble statement by statement: its guard stops it (P0001). */
  private static void assertStopsOutsideATransaction(Statement s, String preamble)
      throws SQLException {
    String[] statements = preamble.split("\n");
    for (int i = 0; i < statements.length - 1; i++) {
      s.execute(statements[i]); // SET LOCAL: a warning, and no effect
    }
    SQLException stopped =
        assertThrows(SQLException.class, () -> s.execute(statements[statements.length - 1]));
    assertEquals("P0001", stopped.getSQLState());
    assertTrue(stopped.getMessage().contains("inside a transaction"), stopped::getMessage);
  }

  @Test
  void schemaSqlPrintsEveryShippedMigration() {
    String all = new Cli().run("schema-sql").out();
    for (SchemaScript.Migration m : SchemaScript.migrations()) {
      assertTrue(all.contains("-- " + m.fileName() + "\n"), m.fileName());
    }
    assertEquals(
        SchemaMigrator.CURRENT_VERSION,
        SchemaScript.migrations().get(SchemaScript.migrations().size() - 1).version().getVersion());
  }

  /**
   * The relay can write, claim and publish rows in a table built from the printed SQL: publishing
   * moves the row into the published log, in the table's schema.
   */
  private void assertWorkingOutbox(String table) throws SQLException {
    OutboxTable outboxTable = OutboxTable.parse(table);
    PostgresOutboxWriter writer = new PostgresOutboxWriter(outboxTable.tableName(), "eu");
    OutboxMessage message =
        OutboxMessage.builder()
            .messageId("m-1")
            .aggregateType("order")
            .aggregateId("o-1")
            .eventType("OrderPlaced")
            .payload(new byte[] {1})
            .build();
    try (Connection c = db.dataSource.getConnection()) {
      c.setAutoCommit(false);
      assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(c, message));
      c.commit();
    }
    try (PostgresOutboxStore store =
        new PostgresOutboxStore(db.dataSource, outboxTable, RelayClock.database(), null)) {
      List<ClaimedMessage> claimed =
          store
              .claim(new ClaimRequest("relay", Set.of("eu"), 10, Duration.ofMinutes(1), 5, true))
              .claimed();
      assertEquals(1, claimed.size());
      assertEquals(
          Outcome.APPLIED,
          store.markPublished(
              new PublishedAck(
                  "m-1",
                  claimed.get(0).seq(),
                  claimed.get(0).lease(),
                  new KafkaCoordinates("outbox.order", 0, 7))));
    }
    try (Connection c = db.dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT (SELECT count(*) FROM "
                    + outboxTable.qualified()
                    + "),"
                    + " (SELECT count(*) FROM "
                    + outboxTable.qualifiedPublishedLog()
                    + ")")) {
      rs.next();
      assertEquals(0, rs.getLong(1), "published: no longer in the table");
      assertEquals(1, rs.getLong(2), "published: in the log");
    }
    assertEquals(Optional.empty(), new SchemaMigrator(db.dataSource, outboxTable).currentVersion());
  }
}
