package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.awaitility.Awaitility;

/**
 * An outbox in a fresh database, as production would have it: legacy rows written before V2 (no
 * instance key), then rows of two instance keys, "eu" and "us", in every status. Relay states are
 * set with direct SQL updates.
 *
 * <p>Per key K: K-pending (created 2 hours ago), K-in-flight (leased), K-ambiguous, K-failed-1
 * (created 3 days ago, POISON_PILL, correlation c-1), K-failed-2 (DEAD_LETTERED, c-2),
 * K-exhausted-1 (BROKER_TIMEOUT, isolated, c-1), the parked ones parked as the relay parks them
 * (parked_at set, no lease; schema version 7), K-published-old (published 2020-06-01, before schema
 * version 9: still in the table, status PUBLISHED), K-published-new (published now, from version 9
 * on: moved into the published log {@code outbox_published}). Legacy: legacy-failed,
 * legacy-exhausted (c-1), both with a parked_at (older than any row of a key's),
 * legacy-published-old and legacy-pending: each is taken by every condition of a statement but the
 * instance key.
 */
final class OutboxFixture implements AutoCloseable {
  static final String PAYLOAD = "{\"card\":\"PAYLOAD-SENTINEL-4111\"}";
  static final String HEADERS =
      "{\"trace\": \"HEADER-SENTINEL\", \"amount\": 1.50,"
          + " \"precise\": 0.1000000000000000055511151231257827, \"tiny\": 0.0000001}";

  final String url;
  final HikariDataSource dataSource;

  private OutboxFixture(String url) {
    this.url = url;
    HikariDataSource pool = new HikariDataSource();
    pool.setJdbcUrl(url);
    pool.setUsername(TestDatabase.user());
    pool.setMaximumPoolSize(3); // a migration takes three
    this.dataSource = pool;
  }

  /** An empty database, nothing migrated. */
  static OutboxFixture empty(String prefix) {
    return new OutboxFixture(TestDatabase.fresh(prefix));
  }

  /**
   * A populated outbox of its own, cloned from one populated template database (CREATE DATABASE ...
   * TEMPLATE), so that tests that change rows do not pay for migrations each time.
   */
  static OutboxFixture populated(String prefix) throws SQLException {
    return new OutboxFixture(TestDatabase.copyOf(template(), prefix));
  }

  private static String templateName;

  private static synchronized String template() throws SQLException {
    if (templateName == null) {
      try (OutboxFixture f = populate("outbox_template")) {
        templateName = f.url.substring(f.url.lastIndexOf('/') + 1);
      }
    }
    return templateName;
  }

  private static OutboxFixture populate(String prefix) throws SQLException {
    OutboxFixture f = empty(prefix);
    SchemaMigrator migrator = new SchemaMigrator(f.dataSource, OutboxTable.parse("outbox"));
    migrator.migrateTo("1");
    f.insert(null, "legacy-failed", "c-3");
    f.update("legacy-failed", "status = 'FAILED', last_failure_code = 'POISON_PILL'");
    f.insert(null, "legacy-exhausted", "c-1");
    f.update("legacy-exhausted", "status = 'EXHAUSTED', attempts = 5");
    f.insert(null, "legacy-published-old", null);
    f.update("legacy-published-old", "status = 'PUBLISHED', published_at = '2020-06-01Z'");
    f.insert(null, "legacy-pending", null);
    migrator.migrate();
    // The legacy parked rows with a parked_at, as no relay writes it on them (version 7 set it on
    // rows of a key only): the index predicates of parked rows then take them, and only a
    // statement's condition on the instance key leaves them out. Version 2's constraint refuses
    // any change to a row without a key, so it is lifted for that, and put back as it was.
    f.exec("ALTER TABLE outbox DROP CONSTRAINT outbox_instance_key_required");
    f.exec(
        "UPDATE outbox SET parked_at = now() - interval '4 days'"
            + " WHERE message_id IN ('legacy-failed', 'legacy-exhausted')");
    f.exec(
        "ALTER TABLE outbox ADD CONSTRAINT outbox_instance_key_required"
            + " CHECK (instance_key IS NOT NULL) NOT VALID");
    for (String key : new String[] {"eu", "us"}) {
      f.insertRows(key);
    }
    return f;
  }

  private void insertRows(String key) throws SQLException {
    insert(key, key + "-pending", null);
    update(key + "-pending", "created_at = now() - interval '2 hours'");
    insert(key, key + "-in-flight", "c-1");
    update(
        key + "-in-flight",
        "status = 'IN_FLIGHT', lease_owner = 'worker-1', lease_token = 7,"
            + " lease_expires_at = now() + interval '1 hour'");
    insert(key, key + "-ambiguous", null);
    update(
        key + "-ambiguous",
        "status = 'AMBIGUOUS', attempts = 1, last_failure_code = 'BROKER_TIMEOUT',"
            + " next_attempt_at = now() + interval '5 minutes'");
    insert(key, key + "-failed-1", "c-1");
    // Parked as the relay parks (markFailed, retryLater): parked_at set, which takes the row out
    // of the rows awaiting delivery; no lease. A requeue must clear parked_at again.
    update(
        key + "-failed-1",
        "status = 'FAILED', attempts = 2, last_failure_code = 'POISON_PILL', lease_token = 3,"
            + " created_at = now() - interval '3 days', next_attempt_at = NULL,"
            + " parked_at = now() - interval '1 day'");
    insert(key, key + "-failed-2", "c-2");
    // Dead-lettered: the relay records where Kafka confirmed the copy.
    update(
        key + "-failed-2",
        "status = 'FAILED', last_failure_code = 'DEAD_LETTERED', parked_at = now(),"
            + " kafka_topic = 'orders-dlq', kafka_partition = 0, kafka_offset = 7");
    insert(key, key + "-exhausted-1", "c-1");
    update(
        key + "-exhausted-1",
        "status = 'EXHAUSTED', attempts = 5, last_failure_code = 'BROKER_TIMEOUT',"
            + " isolated = TRUE, abandoned_claims = 2, lease_token = 9,"
            + " next_attempt_at = now() + interval '1 minute', parked_at = now()");
    insert(key, key + "-published-old", null);
    update(
        key + "-published-old",
        "status = 'PUBLISHED', published_at = '2020-06-01Z', kafka_topic = 'orders',"
            + " kafka_partition = 0, kafka_offset = 41");
    insert(key, key + "-published-new", null);
    update(key + "-published-new", "attempts = 1, lease_token = 4");
    publishIntoLog(key + "-published-new", "now()", 42);
  }

  /**
   * Publishes a row as the relay does from schema version 9: one statement deletes it from the
   * table and writes its entry into the published log, published at {@code publishedAt} (test-owned
   * SQL) to topic orders, partition 0, at {@code offset}.
   */
  void publishIntoLog(String messageId, String publishedAt, long offset) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "WITH moved AS (DELETE FROM outbox WHERE message_id = ? RETURNING *)"
                    + " INSERT INTO outbox_published (seq, message_id, instance_key,"
                    + " aggregate_type, aggregate_id, event_type, correlation_id, created_at,"
                    + " attempts, abandoned_claims, lease_token, last_failure_code, published_at,"
                    + " kafka_topic, kafka_partition, kafka_offset)"
                    + " SELECT seq, message_id, instance_key, aggregate_type, aggregate_id,"
                    + " event_type, correlation_id, created_at, attempts, abandoned_claims,"
                    + " lease_token, last_failure_code, "
                    + publishedAt
                    + ", 'orders', 0, ? FROM moved")) {
      ps.setString(1, messageId);
      ps.setLong(2, offset);
      assertEquals(1, ps.executeUpdate(), messageId);
    }
  }

  void insert(String key, String messageId, String correlationId) throws SQLException {
    insert(key, messageId, correlationId, PAYLOAD.getBytes(StandardCharsets.UTF_8));
  }

  void insert(String key, String messageId, String correlationId, byte[] payload)
      throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id,"
                    + " event_type, topic, payload, headers, correlation_id)"
                    + " VALUES (?, ?, 'order', ?, 'OrderPlaced', 'orders', ?, CAST(? AS jsonb), ?)")) {
      ps.setString(1, messageId);
      ps.setString(2, key);
      ps.setString(3, "agg-" + messageId);
      ps.setBytes(4, payload);
      ps.setString(5, HEADERS);
      ps.setString(6, correlationId);
      assertEquals(1, ps.executeUpdate());
    }
  }

  /** Sets relay state directly; {@code assignments} is test-owned SQL. */
  void update(String messageId, String assignments) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement("UPDATE outbox SET " + assignments + " WHERE message_id = ?")) {
      ps.setString(1, messageId);
      assertEquals(1, ps.executeUpdate(), messageId);
    }
  }

  /** Whether a session of {@code applicationName} is waiting for a lock now. */
  boolean waitingForALock(String applicationName) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM pg_stat_activity"
                    + " WHERE application_name = ? AND wait_event_type = 'Lock'")) {
      ps.setString(1, applicationName);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1) > 0;
      }
    }
  }

  /**
   * Runs {@code command} on another thread while a transaction of this one holds the rows with
   * these message ids locked (FOR UPDATE), as the relay's publish or a claim holds a row, and
   * returns what it printed. The locks are let go once it has ended, or after 60 s without an end
   * (then failing: a command that would wait for ever ends once they are gone).
   */
  Cli.Result whileLocked(Supplier<Cli.Result> command, String... messageIds) throws Exception {
    return whileLocked(command, false, messageIds);
  }

  /**
   * As {@link #whileLocked}, and once the command waits for one of the locks its session is ended
   * (pg_terminate_backend), as a lost connection ends it: its change never gets a reply.
   */
  Cli.Result endedWhileWaiting(Supplier<Cli.Result> command, String... messageIds)
      throws Exception {
    return whileLocked(command, true, messageIds);
  }

  private Cli.Result whileLocked(Supplier<Cli.Result> command, boolean end, String... messageIds)
      throws Exception {
    try (Connection holder = dataSource.getConnection();
        PreparedStatement lock =
            holder.prepareStatement("SELECT 1 FROM outbox WHERE message_id = ANY (?) FOR UPDATE")) {
      holder.setAutoCommit(false);
      lock.setArray(1, holder.createArrayOf("text", messageIds));
      try (ResultSet rs = lock.executeQuery()) {
        int locked = 0;
        while (rs.next()) {
          locked++;
        }
        assertEquals(messageIds.length, locked, "rows locked");
      }
      try {
        CompletableFuture<Cli.Result> result = CompletableFuture.supplyAsync(command);
        if (end) {
          Awaitility.await()
              .atMost(Duration.ofSeconds(30))
              .until(() -> waitingForALock(Database.APPLICATION_NAME));
          exec(
              "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                  + " WHERE application_name = '"
                  + Database.APPLICATION_NAME
                  + "' AND wait_event_type = 'Lock'");
        }
        return result.get(60, TimeUnit.SECONDS);
      } finally {
        holder.rollback();
      }
    }
  }

  void exec(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /** Rows of the outbox table matching {@code where}. */
  long count(String where) throws SQLException {
    return count("outbox", where);
  }

  /** Entries of the published log matching {@code where}. */
  long logCount(String where) throws SQLException {
    return count("outbox_published", where);
  }

  /** Rows of {@code table} (any relation) matching {@code where}. */
  long count(String table, String where) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table + " WHERE " + where)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * Every row's relay state, by message id, the table's rows and the published log's entries alike:
   * compare before and after to prove what changed.
   */
  Map<String, RowState> snapshot() throws SQLException {
    Map<String, RowState> rows = new LinkedHashMap<>();
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT message_id, instance_key, status, attempts, abandoned_claims, isolated,"
                    + " next_attempt_at::text, lease_owner, lease_token,"
                    + " lease_expires_at::text, last_failure_code, published_at::text,"
                    + " FALSE AS in_log, parked_at::text, seq, "
                    + KAFKA
                    + " FROM outbox"
                    + " UNION ALL"
                    + " SELECT message_id, instance_key, 'PUBLISHED', attempts, abandoned_claims,"
                    + " FALSE, NULL, NULL, lease_token, NULL, last_failure_code,"
                    + " published_at::text, TRUE, NULL, seq, "
                    + KAFKA
                    + " FROM outbox_published"
                    + " ORDER BY seq")) {
      while (rs.next()) {
        RowState row =
            new RowState(
                rs.getString(2),
                rs.getString(3),
                rs.getInt(4),
                rs.getInt(5),
                rs.getBoolean(6),
                rs.getString(7),
                rs.getString(8),
                rs.getLong(9),
                rs.getString(10),
                rs.getString(11),
                rs.getString(12),
                rs.getBoolean(13),
                rs.getString(14),
                rs.getString(16));
        assertEquals(null, rows.put(rs.getString(1), row), "one row per message id");
      }
    }
    return rows;
  }

  /**
   * A row's relay state; {@code inLog}: an entry of the published log, not a row of the table;
   * {@code kafka}: its Kafka position (a published row's record, a parked row's dead-letter copy).
   */
  record RowState(
      String instanceKey,
      String status,
      int attempts,
      int abandonedClaims,
      boolean isolated,
      String nextAttemptAt,
      String leaseOwner,
      long leaseToken,
      String leaseExpiresAt,
      String lastFailureCode,
      String publishedAt,
      boolean inLog,
      String parkedAt,
      String kafka) {}

  /** A row's Kafka position as one text (topic:partition:offset), null without one. */
  private static final String KAFKA =
      "NULLIF(concat_ws(':', kafka_topic, kafka_partition, kafka_offset), '')";

  /** Asserts that every row but {@code changed} is exactly as it was. */
  static void assertUnchangedExcept(
      Map<String, RowState> before, Map<String, RowState> after, String... changed) {
    Map<String, RowState> expected = new LinkedHashMap<>(before);
    Map<String, RowState> actual = new LinkedHashMap<>(after);
    for (String id : changed) {
      expected.remove(id);
      actual.remove(id);
    }
    for (Map.Entry<String, RowState> e : expected.entrySet()) {
      assertEquals(e.getValue(), actual.get(e.getKey()), e.getKey() + " must not change");
    }
    assertEquals(expected.keySet(), actual.keySet());
  }

  Cli cli() {
    return Cli.against(url);
  }

  @Override
  public void close() {
    dataSource.close();
  }
}
