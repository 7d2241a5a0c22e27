package dev.outboxrelay.store.postgres;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.BacklogSnapshot;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.Postgres;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.flywaydb.core.api.FlywayException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.postgresql.ds.PGSimpleDataSource;

/** Migrations: empty database, upgrade from every earlier version, replay; the rules they state. */
class SchemaMigrationTest {
  /** Migrations a new table gets: one per version. */
  private static final int LATEST = Integer.parseInt(SchemaMigrator.CURRENT_VERSION);

  private HikariDataSource dataSource;

  @BeforeEach
  void database() {
    dataSource = Postgres.pool(Postgres.freshDatabase("migration"), 8);
  }

  @AfterEach
  void close() {
    dataSource.close();
  }

  private SchemaMigrator migrator(String table) {
    return new SchemaMigrator(dataSource, OutboxTable.parse(table));
  }

  @Test
  void appliesOnAnEmptyDatabaseAndReplayIsANoOp() {
    SchemaMigrator migrator = migrator("outbox");
    assertEquals(Optional.empty(), migrator.currentVersion());
    assertFalse(migrator.isCurrent());
    assertEquals(LATEST, migrator.migrate());
    assertEquals(Optional.of(SchemaMigrator.CURRENT_VERSION), migrator.currentVersion());
    assertTrue(migrator.isCurrent());
    assertEquals(0, migrator.migrate());
  }

  /**
   * From every earlier version, with what a relay of that version left in the table: a row to
   * relay, a parked one (parked_at set by the relay from version 7), one published in the table
   * (before version 9), and before version 2 a legacy row without an owner.
   */
  @ParameterizedTest(name = "upgrade from V{0}")
  @ValueSource(
      strings = {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14"})
  void upgradesFromEveryEarlierVersionKeepingRowsAndQuarantiningLegacyOnes(String from)
      throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo(from);
    if (from.equals("1")) { // before V2, rows could be written without an owner
      exec(
          "INSERT INTO outbox (message_id, aggregate_type, aggregate_id, event_type)"
              + " VALUES ('legacy-1', 'order', 'a', 'E')");
    }
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type)"
            + " VALUES ('owned-1', 'eu', 'order', 'a', 'E')");
    boolean stampsParkedRows = Integer.parseInt(from) >= 7;
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " status, attempts, last_failure_code"
            + (stampsParkedRows ? ", parked_at" : "")
            + ") VALUES ('parked-1', 'eu', 'order', 'b', 'E', 'FAILED', 1, 'PAYLOAD_TOO_LARGE'"
            + (stampsParkedRows ? ", now()" : "")
            + ")");
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " status, attempts, published_at) VALUES ('published-1', 'eu', 'order', 'c', 'E',"
            + " 'PUBLISHED', 1, now() - interval '30 days')");
    migrator.migrate();
    assertTrue(migrator.isCurrent());

    PostgresOutboxStore store =
        new PostgresOutboxStore(
            dataSource, OutboxTable.parse("outbox"), RelayClock.database(), null);
    ClaimRequest eu = new ClaimRequest("w", Set.of("eu"), 10, Duration.ofSeconds(30), 5, true);
    List<ClaimedMessage> claimed = store.claim(eu).claimed();
    assertEquals(
        List.of("owned-1"),
        claimed.stream().map(ClaimedMessage::messageId).toList(),
        "rows written before the upgrade flow; parked and published ones are not claimed");
    BacklogSnapshot backlog = store.inspect(Set.of("eu"), true);
    assertEquals(1, backlog.count(MessageStatus.FAILED), backlog.toString());
    assertEquals(1, backlog.count(MessageStatus.PUBLISHED), backlog.toString());
    assertEquals(1, backlog.count(MessageStatus.IN_FLIGHT), backlog.toString());
    assertEquals(
        1,
        store.deletePublished(Set.of("eu"), Instant.now().minus(Duration.ofDays(1)), 10),
        "retention reaches a row published in the table before version 9");
    if (from.equals("1")) {
      assertNull(queryString("SELECT instance_key FROM outbox WHERE message_id = 'legacy-1'"));
      assertEquals(
          "PENDING", queryString("SELECT status FROM outbox WHERE message_id = 'legacy-1'"));
      // No migration or write may give it an owner.
      SQLException e =
          assertThrows(
              SQLException.class,
              () -> exec("UPDATE outbox SET instance_key = 'eu' WHERE message_id = 'legacy-1'"));
      assertTrue(e.getSQLState().startsWith("23"), e.getSQLState());
    }
  }

  /**
   * deployment.md's rename of an instance key, run as written: the rows move, the trigger is on
   * again after it, and a plain UPDATE of a key is still refused. The README's first version, a
   * plain UPDATE, was refused by that trigger.
   */
  @Test
  void theDocumentedRenameOfAnInstanceKeyMovesItsRowsAndKeepsTheKeyImmutable() throws Exception {
    migrator("outbox").migrate();
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type)"
            + " VALUES ('m1', E'orders\\u00a0', 'order', 'a', 'E'),"
            + " ('m2', 'orders-us', 'order', 'a', 'E')");
    String doc = Files.readString(Path.of("../docs/deployment.md"));
    int at = doc.indexOf("**Renaming an instance key**");
    int start = doc.indexOf("```sql", at) + "```sql".length();
    String rename = doc.substring(start, doc.indexOf("```", start)).replaceAll("(?m)^  ", "");
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(rename);
    }

    assertEquals("orders", queryString("SELECT instance_key FROM outbox WHERE message_id = 'm1'"));
    assertEquals(
        "orders-us", queryString("SELECT instance_key FROM outbox WHERE message_id = 'm2'"));
    assertEquals(
        "O",
        queryString(
            "SELECT tgenabled::text FROM pg_trigger"
                + " WHERE tgname = 'outbox_instance_key_immutable'"));
    assertViolation("UPDATE outbox SET instance_key = 'us' WHERE message_id = 'm1'");
  }

  @Test
  void theDatabaseStatesTheInvariants() throws SQLException {
    migrator("outbox").migrate();
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type)"
            + " VALUES ('m1', 'eu', 'order', 'a', 'E')");
    assertViolation(
        "INSERT INTO outbox (instance_key, aggregate_type, aggregate_id, event_type)"
            + " VALUES (NULL, 'order', 'a', 'E')");
    assertViolation(
        "INSERT INTO outbox (instance_key, aggregate_type, aggregate_id, event_type)"
            + " VALUES ('  ', 'order', 'a', 'E')");
    assertViolation("UPDATE outbox SET instance_key = 'us' WHERE message_id = 'm1'");
    assertViolation("UPDATE outbox SET status = 'DONE' WHERE message_id = 'm1'");
    assertViolation("UPDATE outbox SET lease_token = -1 WHERE message_id = 'm1'");
    assertViolation("UPDATE outbox SET attempts = -1 WHERE message_id = 'm1'");
    assertViolation("UPDATE outbox SET last_failure_code = 'password=x' WHERE message_id = 'm1'");
    assertViolation("UPDATE outbox SET status = 'IN_FLIGHT' WHERE message_id = 'm1'");
    // A generated message id when the application supplies none.
    exec(
        "INSERT INTO outbox (instance_key, aggregate_type, aggregate_id, event_type)"
            + " VALUES ('eu', 'order', 'b', 'E')");
    assertEquals("2", queryString("SELECT count(DISTINCT message_id)::text FROM outbox"));
  }

  /**
   * A migration that needs the outbox table's lock while a long transaction holds the table (here a
   * reader) gives up after its lock timeout, changing nothing, rather than queueing every insert
   * behind its wait; once the reader is gone, the same migration applies.
   */
  @Test
  @Timeout(value = 2, unit = TimeUnit.MINUTES) // without the lock timeout it would wait for ever
  void aMigrationGivesUpOnALockItCannotTakeAndChangesNothing() throws SQLException {
    OutboxTable table = OutboxTable.parse("outbox");
    new SchemaMigrator(dataSource, table).migrateTo("7");
    SchemaMigrator impatient = new SchemaMigrator(dataSource, table, Duration.ofMillis(50));
    try (Connection reader = dataSource.getConnection();
        Statement s = reader.createStatement()) {
      reader.setAutoCommit(false);
      s.execute("SELECT count(*) FROM outbox"); // holds ACCESS SHARE until it ends
      FlywayException e = assertThrows(FlywayException.class, impatient::migrate);
      assertEquals("55P03", sqlStateOf(e), "lock_not_available");
      assertEquals(Optional.of("7"), impatient.currentVersion());
      reader.commit();
    }
    assertEquals(LATEST - 7, impatient.migrate());
    assertTrue(impatient.isCurrent());
  }

  /** Without a lock timeout, a migration waits for the table's lock as long as it takes. */
  @Test
  void aLockTimeoutOfZeroWaitsForTheLock() throws Exception {
    OutboxTable table = OutboxTable.parse("outbox");
    new SchemaMigrator(dataSource, table).migrateTo("7");
    SchemaMigrator patient = new SchemaMigrator(dataSource, table, Duration.ZERO);
    ExecutorService executor = Executors.newSingleThreadExecutor();
    try (Connection reader = dataSource.getConnection();
        Statement s = reader.createStatement()) {
      reader.setAutoCommit(false);
      s.execute("SELECT count(*) FROM outbox");
      Future<Integer> migration = executor.submit(patient::migrate);
      await().atMost(Duration.ofSeconds(60)).until(() -> waitingForALock("ALTER TABLE"));
      assertFalse(migration.isDone());
      reader.commit();
      assertEquals(LATEST - 7, migration.get(1, TimeUnit.MINUTES));
    } finally {
      executor.shutdownNow();
    }
  }

  /**
   * While one session migrates a table, another session's migration of the same table fails at once
   * and changes nothing, however the table is named; it does not wait behind Flyway's own lock (50
   * tries a second apart, then a failure without an SQLState). Another table's migration is not
   * held up. Once the first has finished, the second finds nothing to apply.
   */
  @Test
  void aSecondMigrationOfTheSameTableFailsAtOnceWhileTheFirstRuns() throws Exception {
    OutboxTable table = OutboxTable.parse("outbox");
    new SchemaMigrator(dataSource, table).migrateTo("7");
    ExecutorService executor = Executors.newSingleThreadExecutor();
    try (Connection reader = dataSource.getConnection();
        Statement s = reader.createStatement()) {
      reader.setAutoCommit(false);
      s.execute("SELECT count(*) FROM outbox"); // the first migration waits for it
      Future<Integer> first =
          executor.submit(new SchemaMigrator(dataSource, table, Duration.ZERO)::migrate);
      await().atMost(Duration.ofSeconds(60)).until(() -> waitingForALock("ALTER TABLE"));

      for (String name : new String[] {"outbox", "public.outbox"}) {
        SchemaMigrator second = migrator(name);
        MigrationInProgressException e =
            assertThrows(MigrationInProgressException.class, second::migrate, name);
        assertEquals(name, e.table());
        assertThrows(MigrationInProgressException.class, () -> second.migrateTo("8"), name);
      }
      assertEquals(Optional.of("7"), migrator("outbox").currentVersion());
      assertEquals(LATEST, migrator("other_outbox").migrate(), "another table is not held up");
      assertFalse(first.isDone());

      reader.commit();
      assertEquals(LATEST - 7, first.get(1, TimeUnit.MINUTES));
    } finally {
      executor.shutdownNow();
    }
    assertEquals(0, migrator("outbox").migrate());
    assertTrue(migrator("public.outbox").isCurrent());
  }

  /**
   * A table already current is not locked to find nothing to apply: tasks starting together, each
   * migrating at its start, found one another's no-op migration holding the lock and waited a
   * second or more each. Whatever else the history shows (here an applied migration edited since)
   * still takes the lock, and is refused while another session holds it.
   */
  @Test
  void aCurrentTableIsMigratedWithoutTakingTheLock() throws Exception {
    OutboxTable table = OutboxTable.parse("outbox");
    assertEquals(LATEST, migrator("outbox").migrate());
    try (MigrationLock held = MigrationLock.take(dataSource, table)) {
      assertEquals(0, migrator("outbox").migrate());
      assertEquals(0, migrator("public.outbox").migrateTo(SchemaMigrator.CURRENT_VERSION));

      try (Connection c = dataSource.getConnection();
          Statement s = c.createStatement()) {
        s.execute("UPDATE outbox_schema_history SET checksum = 42 WHERE version = '1'");
      }
      assertThrows(MigrationInProgressException.class, migrator("outbox")::migrate);
    }
  }

  /**
   * The lock ends with its migration, successful or not: a failed one does not keep it. Through
   * unpooled connections, as the connector migrates: a pool would roll back what it is handed back.
   */
  @Test
  void aMigrationThatFailedLeavesNoLockBehind() throws SQLException {
    OutboxTable table = OutboxTable.parse("outbox");
    DataSource unpooled = unpooled(dataSource.getJdbcUrl());
    new SchemaMigrator(unpooled, table).migrateTo("7");
    assertEquals(0, advisoryLocksHeld());
    try (Connection reader = dataSource.getConnection();
        Statement s = reader.createStatement()) {
      reader.setAutoCommit(false);
      s.execute("SELECT count(*) FROM outbox");
      assertThrows(
          FlywayException.class,
          new SchemaMigrator(unpooled, table, Duration.ofMillis(50))::migrate);
      reader.commit();
    }
    assertEquals(0, advisoryLocksHeld());
    assertEquals(LATEST - 7, new SchemaMigrator(unpooled, table).migrate());
    assertEquals(0, advisoryLocksHeld());
  }

  /**
   * A table named without a schema, on a connection whose search path names no existing schema, has
   * nowhere to be created: a clear error (invalid schema name), not a migration "in progress" for
   * ever.
   */
  @Test
  void aSearchPathWithoutASchemaIsAnErrorNotAMigrationInProgress() {
    DataSource nowhere = unpooled(dataSource.getJdbcUrl() + "?currentSchema=not_created_yet");
    FlywayException e =
        assertThrows(
            FlywayException.class,
            () -> new SchemaMigrator(nowhere, OutboxTable.parse("outbox")).migrate());
    assertEquals("3F000", sqlStateOf(e));
  }

  private static DataSource unpooled(String url) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setURL(url);
    ds.setUser(Postgres.user());
    return ds;
  }

  private long advisoryLocksHeld() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                    + " AND database = (SELECT oid FROM pg_database"
                    + " WHERE datname = current_database())")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private boolean waitingForALock(String statement) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    + " AND query LIKE ? AND datname = current_database()")) {
      ps.setString(1, "%" + statement + "%");
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1) > 0;
      }
    }
  }

  private static String sqlStateOf(Throwable t) {
    for (; t != null; t = t.getCause()) {
      if (t instanceof SQLException sql) {
        return sql.getSQLState();
      }
    }
    return null;
  }

  /**
   * A table named without a schema: its migrations touch no index of a same-named table further
   * along the search path, here one whose own index the operator dropped beforehand (as version
   * 13's notes advise on a busy table).
   */
  @Test
  void aMigrationLeavesASameNamedTableOfAnotherSchemaAlone() throws SQLException {
    exec("CREATE SCHEMA app");
    try (HikariDataSource app =
        Postgres.pool(dataSource.getJdbcUrl() + "?currentSchema=app,public", 3)) {
      SchemaMigrator migrator = new SchemaMigrator(app, OutboxTable.parse("outbox"));
      migrator.migrateTo("12");
      migrator("public.outbox").migrateTo("12"); // another connector's, further along the path
      exec("DROP INDEX app.outbox_due_seq_idx");

      assertEquals(LATEST - 12, migrator.migrate());
      assertTrue(migrator.isCurrent());
    }
    assertTrue(
        SchemaMigrator.relationExists(dataSource, "\"public\".\"outbox_due_seq_idx\""),
        "the other schema's index dropped");
    assertEquals(Optional.of("12"), migrator("public.outbox").currentVersion());
  }

  @Test
  void severalOutboxTablesKeepTheirOwnHistory() {
    assertEquals(LATEST, migrator("outbox_a").migrate());
    assertEquals(LATEST, migrator("outbox_b").migrate());
    assertTrue(migrator("outbox_a").isCurrent());
  }

  @Test
  void version6DropsTheUnusedActiveIndexAlsoInAnotherSchema() throws SQLException {
    exec("CREATE SCHEMA app");
    for (String table : new String[] {"outbox", "app.outbox"}) {
      SchemaMigrator migrator = migrator(table);
      migrator.migrateTo("5");
      String schema = table.contains(".") ? "app" : "public";
      String indexes =
          "SELECT count(*)::text FROM pg_indexes WHERE schemaname = '"
              + schema
              + "' AND indexname = 'outbox_active_idx'";
      assertEquals("1", queryString(indexes), table + " at version 5");
      migrator.migrate();
      assertEquals("0", queryString(indexes), table + " at version 6");
    }
  }

  @Test
  void version7ParksTheParkedRowsOfOwnersAndLeavesLegacyRowsAlone() throws SQLException {
    exec("CREATE SCHEMA app");
    SchemaMigrator migrator = migrator("app.outbox");
    migrator.migrateTo("1");
    exec(
        "INSERT INTO app.outbox (message_id, instance_key, aggregate_type, aggregate_id,"
            + " event_type, status) VALUES ('legacy', NULL, 'o', 'a', 'E', 'FAILED')");
    migrator.migrateTo("6");
    exec(
        "INSERT INTO app.outbox (message_id, instance_key, aggregate_type, aggregate_id,"
            + " event_type, status) VALUES ('owned', 'eu', 'o', 'a', 'E', 'EXHAUSTED'),"
            + " ('pending', 'eu', 'o', 'b', 'E', 'PENDING')");
    migrator.migrate();
    assertEquals(
        "owned",
        queryString(
            "SELECT string_agg(message_id, ',') FROM app.outbox WHERE parked_at IS NOT NULL"));
    String indexes =
        "SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes"
            + " WHERE schemaname = 'app' AND tablename = 'outbox' AND indexname LIKE 'outbox_%_idx'";
    assertEquals(
        "outbox_due_aggregate_idx,outbox_due_key_seq_idx,outbox_parked_cid_seq_idx,"
            + "outbox_parked_key_seq_idx,outbox_settled_idx",
        queryString(indexes),
        "no index uses status any more");
    assertEquals(
        "{fillfactor=45}",
        queryString("SELECT reloptions::text FROM pg_class WHERE oid = 'app.outbox'::regclass"));
  }

  @Test
  void version9LeavesRowsPublishedBeforeItForRetentionAndPublishesIntoTheLog() throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("1");
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " status, published_at, kafka_topic, kafka_partition, kafka_offset) VALUES"
            + " ('legacy', NULL, 'order', 'a', 'E', 'PUBLISHED', now() - interval '2 days', 't',"
            + " 0, 8)");
    migrator.migrateTo("8");
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " status, published_at, kafka_topic, kafka_partition, kafka_offset) VALUES"
            + " ('old', 'eu', 'order', 'a', 'E', 'PUBLISHED', now() - interval '2 days', 't', 0, 7),"
            + " ('new', 'eu', 'order', 'b', 'E', 'PENDING', NULL, NULL, NULL, NULL)");
    migrator.migrate();
    assertEquals("PUBLISHED", queryString("SELECT status FROM outbox WHERE message_id = 'old'"));

    PostgresOutboxStore store =
        new PostgresOutboxStore(
            dataSource, OutboxTable.parse("outbox"), RelayClock.database(), null);
    ClaimedMessage claimed =
        store
            .claim(new ClaimRequest("w", Set.of("eu"), 10, Duration.ofSeconds(30), 5, true))
            .claimed()
            .get(0);
    assertEquals(
        Outcome.APPLIED,
        store.markPublished(
            new PublishedAck(
                "new", claimed.seq(), claimed.lease(), new KafkaCoordinates("t", 1, 9))));
    assertEquals("0", queryString("SELECT count(*) FROM outbox WHERE message_id = 'new'"));
    assertEquals(
        "eu,order,b,E,1,9",
        queryString(
            "SELECT concat_ws(',', instance_key, aggregate_type, aggregate_id, event_type,"
                + " kafka_partition, kafka_offset) FROM outbox_published WHERE message_id = 'new'"));
    assertEquals(2, store.inspect(Set.of("eu"), true).count(MessageStatus.PUBLISHED));

    // Retention: the log first, then what version 8 published in the table; legacy rows never.
    // A publication of every table (logical replication, a Debezium left behind) needs a replica
    // identity on each table rows are deleted from.
    exec("CREATE PUBLICATION every_table FOR ALL TABLES");
    Instant cutoff = Instant.now().plusSeconds(1);
    assertEquals(1, store.deletePublished(Set.of("eu"), cutoff, 1), "the log fills the batch");
    assertEquals("0", queryString("SELECT count(*) FROM outbox_published"));
    assertEquals(1, store.deletePublished(Set.of("eu"), cutoff, 1), "then the table's");
    assertEquals(0, store.deletePublished(Set.of("eu"), cutoff, 1));
    assertEquals("legacy", queryString("SELECT string_agg(message_id, ',') FROM outbox"));
    exec("DROP PUBLICATION every_table");
  }

  @Test
  void version9RefusesARelationThatHasThePublishedLogsName() throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("8");
    exec("CREATE TABLE outbox_published (id bigint)");

    RuntimeException e = assertThrows(RuntimeException.class, migrator::migrate);
    assertEquals("42P07", sqlStateOf(e), "the log's name taken: duplicate_table");
    assertEquals(Optional.of("8"), migrator.currentVersion());
  }

  @Test
  void version10FindsLoggedMessageIdsThroughAHashIndex() throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("9");
    logEntries(5000);
    migrator.migrate();

    assertEquals(
        "outbox_published_at_idx btree,outbox_published_id_hash hash",
        queryString(
            "SELECT string_agg(c.relname || ' ' || am.amname, ',' ORDER BY c.relname)"
                + " FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                + " JOIN pg_am am ON am.oid = c.relam"
                + " WHERE i.indrelid = 'outbox_published'::regclass"));
    assertFindsMessageIdsThroughTheHashIndex();
    assertEquals(
        "1", queryString("SELECT count(*) FROM outbox_published WHERE message_id = 'm-4321'"));
  }

  @Test
  void version11RebuildsAHashIndexThatAFailedConcurrentBuildLeftInvalid() throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("9");
    logEntries(5000);
    // What a cancelled CREATE INDEX CONCURRENTLY leaves under the name version 10 builds: an index
    // PostgreSQL does not use. Version 10's IF NOT EXISTS keeps it and drops the btree.
    exec("CREATE INDEX outbox_published_id_hash ON outbox_published USING hash (message_id)");
    exec(
        "UPDATE pg_index SET indisvalid = FALSE"
            + " WHERE indexrelid = 'outbox_published_id_hash'::regclass");
    migrator.migrateTo("10");
    assertEquals("false", indexValid());

    migrator.migrate();

    assertEquals("true", indexValid());
    assertFindsMessageIdsThroughTheHashIndex();
  }

  @Test
  void version11LeavesAValidHashIndexAsItIs() throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("10");
    String before = queryString("SELECT pg_relation_filenode('outbox_published_id_hash')::text");

    migrator.migrate();

    assertEquals("true", indexValid());
    assertEquals(
        before, queryString("SELECT pg_relation_filenode('outbox_published_id_hash')::text"));
  }

  @Test
  void version12ParksARowWhoseCorrelationIdIsLongerThanAnIndexEntry() throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("11");
    // 6,400 hex digits: pglz cannot squeeze them under a btree entry's 2,704 bytes.
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " correlation_id) SELECT 'long', 'eu', 'o', 'a', 'E', string_agg(md5(g::text), '')"
            + " FROM generate_series(1, 200) g");
    String park =
        "UPDATE outbox SET status = 'FAILED', parked_at = now(), last_failure_code = 'X'"
            + " WHERE message_id = 'long'";
    SQLException refused = assertThrows(SQLException.class, () -> exec(park));
    assertEquals("54000", refused.getSQLState(), "version 11 cannot index the parked row");

    migrator.migrateTo("12");
    exec(park);

    exec("ANALYZE outbox");
    String lookup =
        "SELECT message_id FROM outbox WHERE instance_key = 'eu' AND parked_at IS NOT NULL"
            + " AND left(correlation_id, 200) = left(c.id, 200) AND correlation_id = c.id";
    String byCorrelation =
        "WITH c AS (SELECT string_agg(md5(g::text), '') AS id FROM generate_series(1, 200) g) "
            + lookup.replace("FROM outbox", "FROM c, outbox");
    assertEquals("long", queryString(byCorrelation));
    exec("SET enable_seqscan = off");
    assertTrue(plan(byCorrelation).contains("outbox_parked_cid_idx"), plan(byCorrelation));
  }

  @Test
  void version12BuildsAgainAParkedRowsIndexThatAFailedConcurrentBuildLeftInvalid()
      throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("11");
    exec(
        "CREATE INDEX outbox_parked_cid_idx ON outbox (instance_key, left(correlation_id, 200))"
            + " WHERE parked_at IS NOT NULL");
    exec(
        "UPDATE pg_index SET indisvalid = FALSE"
            + " WHERE indexrelid = 'outbox_parked_cid_idx'::regclass");

    migrator.migrateTo("12");

    assertEquals(
        "true",
        queryString(
            "SELECT indisvalid::text FROM pg_index"
                + " WHERE indexrelid = 'outbox_parked_cid_idx'::regclass"));
    assertNull(queryString("SELECT to_regclass('outbox_parked_rows_idx')::text"));
  }

  /**
   * Version 13 replaces the due rows' (seq) index by an (instance_key, seq) one over the due rows
   * of owners; legacy rows (no instance key) are left out, as the adoption script leaves them out.
   */
  @Test
  void version13IndexesTheDueRowsByInstanceKeyThenSeq() throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("1");
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type)"
            + " VALUES ('legacy', NULL, 'o', 'a', 'E')");
    migrator.migrateTo("12");
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " status, published_at) VALUES ('due-eu', 'eu', 'o', 'a', 'E', 'PENDING', NULL),"
            + " ('due-us', 'us', 'o', 'b', 'E', 'PENDING', NULL),"
            + " ('settled', 'eu', 'o', 'c', 'E', 'PUBLISHED', now())");

    migrator.migrate();

    assertNull(queryString("SELECT to_regclass('outbox_due_seq_idx')::text"));
    assertEquals(
        "CREATE INDEX outbox_due_key_seq_idx ON public.outbox USING btree (instance_key, seq)"
            + " WHERE ((published_at IS NULL) AND (parked_at IS NULL) AND (instance_key IS NOT NULL))",
        queryString("SELECT pg_get_indexdef('outbox_due_key_seq_idx'::regclass)"));
  }

  @Test
  void version13BuildsAgainADueIndexThatAFailedConcurrentBuildLeftInvalid() throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("12");
    exec(
        "CREATE INDEX outbox_due_key_seq_idx ON outbox (instance_key, seq)"
            + " WHERE published_at IS NULL AND parked_at IS NULL AND instance_key IS NOT NULL");
    exec(
        "UPDATE pg_index SET indisvalid = FALSE"
            + " WHERE indexrelid = 'outbox_due_key_seq_idx'::regclass");

    migrator.migrate();

    assertEquals(
        "true",
        queryString(
            "SELECT indisvalid::text FROM pg_index"
                + " WHERE indexrelid = 'outbox_due_key_seq_idx'::regclass"));
    assertNull(queryString("SELECT to_regclass('outbox_due_seq_idx')::text"));
  }

  /**
   * Version 14 indexes the parked rows by (instance_key, seq), for the CLI's batches in seq order;
   * rows awaiting delivery and settled ones are not in it.
   */
  @Test
  void version14IndexesTheParkedRowsByInstanceKeyThenSeq() throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("13");
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " status, parked_at) VALUES ('parked', 'eu', 'o', 'a', 'E', 'FAILED', now()),"
            + " ('due', 'eu', 'o', 'b', 'E', 'PENDING', NULL)");

    migrator.migrate();

    assertEquals(
        "CREATE INDEX outbox_parked_key_seq_idx ON public.outbox USING btree (instance_key, seq)"
            + " WHERE (parked_at IS NOT NULL)",
        queryString("SELECT pg_get_indexdef('outbox_parked_key_seq_idx'::regclass)"));
    assertEquals(
        "1",
        queryString("SELECT count(*)::text FROM outbox WHERE parked_at IS NOT NULL AND seq > 0"),
        "rows kept");
  }

  @Test
  void version14BuildsAgainAParkedIndexThatAFailedConcurrentBuildLeftInvalid() throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("13");
    exec(
        "CREATE INDEX outbox_parked_key_seq_idx ON outbox (instance_key, seq)"
            + " WHERE parked_at IS NOT NULL");
    exec(
        "UPDATE pg_index SET indisvalid = FALSE"
            + " WHERE indexrelid = 'outbox_parked_key_seq_idx'::regclass");

    migrator.migrate();

    assertEquals(
        "true",
        queryString(
            "SELECT indisvalid::text FROM pg_index"
                + " WHERE indexrelid = 'outbox_parked_key_seq_idx'::regclass"));
  }

  /**
   * Version 15 replaces version 12's index of parked rows by correlation id with one that also
   * orders them by seq, for the CLI's batches by correlation id; a row whose correlation id is
   * longer than an index entry still parks, and a lookup by correlation id reads the new index.
   */
  @Test
  void version15IndexesTheParkedRowsByCorrelationIdThenSeq() throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("14");
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " correlation_id, status, parked_at) VALUES"
            + " ('parked', 'eu', 'o', 'a', 'E', 'c-1', 'FAILED', now()),"
            + " ('due', 'eu', 'o', 'b', 'E', 'c-1', 'PENDING', NULL)");

    migrator.migrate();

    assertEquals(
        "CREATE INDEX outbox_parked_cid_seq_idx ON public.outbox USING btree (instance_key,"
            + " \"left\"(correlation_id, 200), seq) WHERE (parked_at IS NOT NULL)",
        queryString("SELECT pg_get_indexdef('outbox_parked_cid_seq_idx'::regclass)"));
    assertNull(queryString("SELECT to_regclass('outbox_parked_cid_idx')::text"), "replaced");
    // 6,400 hex digits: longer than a btree entry, held by its 200-character prefix.
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " correlation_id) SELECT 'long', 'eu', 'o', 'a', 'E', string_agg(md5(g::text), '')"
            + " FROM generate_series(1, 200) g");
    exec(
        "UPDATE outbox SET status = 'FAILED', parked_at = now(), last_failure_code = 'X'"
            + " WHERE message_id = 'long'");
    exec("ANALYZE outbox");
    String byCorrelation =
        "SELECT message_id FROM outbox WHERE instance_key = 'eu' AND parked_at IS NOT NULL"
            + " AND left(correlation_id, 200) = left('c-1', 200) AND correlation_id = 'c-1'";
    assertEquals("parked", queryString(byCorrelation));
    exec("SET enable_seqscan = off");
    assertTrue(plan(byCorrelation).contains("outbox_parked_cid_seq_idx"), plan(byCorrelation));
  }

  @Test
  void version15BuildsAgainAParkedIndexThatAFailedConcurrentBuildLeftInvalid() throws SQLException {
    SchemaMigrator migrator = migrator("outbox");
    migrator.migrateTo("14");
    exec(
        "CREATE INDEX outbox_parked_cid_seq_idx ON outbox"
            + " (instance_key, left(correlation_id, 200), seq) WHERE parked_at IS NOT NULL");
    exec(
        "UPDATE pg_index SET indisvalid = FALSE"
            + " WHERE indexrelid = 'outbox_parked_cid_seq_idx'::regclass");

    migrator.migrate();

    assertEquals(
        "true",
        queryString(
            "SELECT indisvalid::text FROM pg_index"
                + " WHERE indexrelid = 'outbox_parked_cid_seq_idx'::regclass"));
    assertNull(queryString("SELECT to_regclass('outbox_parked_cid_idx')::text"));
  }

  /** Entries m-1 .. m-n in the published log of schema version 9. */
  private void logEntries(int n) throws SQLException {
    exec(
        "INSERT INTO outbox_published (seq, message_id, instance_key, attempts, abandoned_claims,"
            + " lease_token, published_at) SELECT g, 'm-' || g, 'eu', 1, 0, 1, now()"
            + " FROM generate_series(1, "
            + n
            + ") g");
  }

  private void assertFindsMessageIdsThroughTheHashIndex() throws SQLException {
    exec("ANALYZE outbox_published");
    String plan = plan("SELECT 1 FROM outbox_published WHERE message_id = 'm-4321'");
    assertTrue(plan.contains("outbox_published_id_hash"), plan);
  }

  private String indexValid() throws SQLException {
    return queryString(
        "SELECT indisvalid::text FROM pg_index"
            + " WHERE indexrelid = 'outbox_published_id_hash'::regclass");
  }

  @Test
  void claimsUseThePartialIndexesNotATableScan() throws SQLException {
    migrator("outbox").migrate();
    exec(
        "INSERT INTO outbox (instance_key, aggregate_type, aggregate_id, event_type, status,"
            + " published_at) SELECT 'eu', 'order', 'a' || (g % 100), 'E', 'PUBLISHED', now()"
            + " FROM generate_series(1, 20000) g");
    exec("ANALYZE outbox");
    String plan =
        queryLines(
            "EXPLAIN (FORMAT TEXT) SELECT seq FROM outbox WHERE instance_key >= 'eu'"
                + " AND instance_key <= 'eu' AND published_at IS NULL AND parked_at IS NULL"
                + " AND status IN ('PENDING', 'AMBIGUOUS') ORDER BY instance_key, seq LIMIT 10");
    // Claims read a key's due rows in order (OutboxSql's {own key(o)}): only the due index
    // returns them so without walking the PUBLISHED rows.
    assertTrue(plan.contains("outbox_due_key_seq_idx"), plan);
    // The backlog counts read an index of the active rows, not the retained PUBLISHED ones.
    String counts =
        queryLines(
            "EXPLAIN (FORMAT TEXT) SELECT status, count(*) FROM outbox"
                + " WHERE instance_key = ANY ('{eu}')"
                + " AND published_at IS NULL AND parked_at IS NULL GROUP BY status");
    assertTrue(counts.contains("outbox_due_"), counts);
    assertFalse(counts.contains("Seq Scan"), counts);
  }

  private String queryLines(String sql) throws SQLException {
    StringBuilder out = new StringBuilder();
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      while (rs.next()) {
        out.append(rs.getString(1)).append('\n');
      }
    }
    return out.toString();
  }

  private void assertViolation(String sql) {
    SQLException e = assertThrows(SQLException.class, () -> exec(sql), sql);
    assertTrue(e.getSQLState().startsWith("23"), sql + " -> " + e.getSQLState());
  }

  /**
   * A table upgraded from version 1 with rows in it ends with the same schema as one created at the
   * latest version: the same columns (type, default, nullability), indexes, constraints and
   * triggers, and its published log likewise. Migrations that judge what they find (pre-built
   * indexes, invalid ones, rows to quarantine) must not leave an upgraded table different.
   */
  @Test
  void aTableUpgradedWithRowsEndsAsAFreshOneIs() throws SQLException {
    migrator("outbox").migrateTo("1");
    exec(
        "INSERT INTO outbox (message_id, aggregate_type, aggregate_id, event_type)"
            + " VALUES ('legacy-1', 'order', 'a', 'E')");
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " status, published_at) VALUES ('published-1', 'eu', 'order', 'b', 'E',"
            + " 'PUBLISHED', now())");
    migrator("outbox").migrate();
    migrator("fresh").migrate();

    for (String[] tables :
        new String[][] {{"outbox", "fresh"}, {"outbox_published", "fresh_published"}}) {
      assertEquals(
          catalog(tables[1]).replace("fresh", "outbox"),
          catalog(tables[0]),
          tables[0] + " upgraded vs created afresh");
    }
  }

  /** The table's columns, indexes, constraints and triggers as PostgreSQL defines them, sorted. */
  private String catalog(String table) throws SQLException {
    List<String> lines = new java.util.ArrayList<>();
    String regclass = "'public." + table + "'::regclass";
    for (String query :
        List.of(
            "SELECT 'column ' || attname || ' ' || format_type(atttypid, atttypmod)"
                + " || CASE WHEN attnotnull THEN ' not null' ELSE '' END"
                + " || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')"
                + " || CASE WHEN attidentity <> '' THEN ' identity ' || attidentity::text ELSE '' END"
                + " FROM pg_attribute a LEFT JOIN pg_attrdef d"
                + " ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
                + " WHERE attrelid = "
                + regclass
                + " AND attnum > 0 AND NOT attisdropped",
            "SELECT 'index ' || pg_get_indexdef(indexrelid) || CASE WHEN indisvalid THEN ''"
                + " ELSE ' INVALID' END FROM pg_index WHERE indrelid = "
                + regclass,
            "SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(oid)"
                + " || CASE WHEN convalidated THEN '' ELSE ' NOT VALID' END"
                + " FROM pg_constraint WHERE conrelid = "
                + regclass,
            "SELECT 'trigger ' || pg_get_triggerdef(oid) FROM pg_trigger"
                + " WHERE tgrelid = "
                + regclass
                + " AND NOT tgisinternal")) {
      try (Connection c = dataSource.getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery(query)) {
        while (rs.next()) {
          lines.add(rs.getString(1));
        }
      }
    }
    java.util.Collections.sort(lines);
    return String.join("\n", lines);
  }

  private void exec(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private String plan(String sql) throws SQLException {
    StringBuilder plan = new StringBuilder();
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("EXPLAIN " + sql)) {
      while (rs.next()) {
        plan.append(rs.getString(1)).append('\n');
      }
    }
    return plan.toString();
  }

  private String queryString(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
