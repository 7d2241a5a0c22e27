package dev.outboxrelay.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;

/**
 * A fresh database on the shared embedded PostgreSQL server, with the outbox table, written to as
 * applications do ({@link PostgresOutboxWriter} in a JDBC transaction) or with plain SQL, read back
 * row by row, and administered from the server's maintenance database (connections refused,
 * backends terminated) to make it go away.
 */
public final class OutboxDb implements AutoCloseable {
  /** Connections of the test itself carry this name; the connector's carry "outbox-relay". */
  public static final String TEST_APPLICATION_NAME = "outbox-test";

  private static final Pattern IDENTIFIER = Pattern.compile("[a-z][a-z0-9_]{0,40}");
  private static final AtomicInteger POOLS = new AtomicInteger();

  private final String name;
  private final String url;
  private final HikariDataSource pool;
  private final OutboxTable table = OutboxTable.parse("outbox");

  private OutboxDb(String url) {
    this.url = url;
    this.name = url.substring(url.lastIndexOf('/') + 1);
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(Postgres.user());
    config.setMaximumPoolSize(4);
    // Not named after the database: a test may make its name a secret that must not be logged.
    config.setPoolName("outbox-test-" + POOLS.incrementAndGet());
    config.addDataSourceProperty("ApplicationName", TEST_APPLICATION_NAME);
    this.pool = new HikariDataSource(config);
  }

  /** A new, empty database named {@code prefix_<n>}; call {@link #migrate()} for the table. */
  public static OutboxDb fresh(String prefix) {
    return new OutboxDb(Postgres.freshDatabase(prefix));
  }

  /** A new, empty database of exactly this name (a plain lower-case identifier). */
  public static OutboxDb create(String name) {
    if (!IDENTIFIER.matcher(name).matches()) {
      throw new IllegalArgumentException("database name must be a plain identifier: " + name);
    }
    return new OutboxDb(Postgres.createDatabase(name));
  }

  public String url() {
    return url;
  }

  public String name() {
    return name;
  }

  public String user() {
    return Postgres.user();
  }

  /** A connection of the test's own pool. */
  public Connection connection() throws SQLException {
    return pool.getConnection();
  }

  public OutboxDb migrate() {
    new SchemaMigrator(pool, table).migrate();
    return this;
  }

  /** Creates another outbox table in the same database. */
  public OutboxDb migrateTable(String tableName) {
    new SchemaMigrator(pool, OutboxTable.parse(tableName)).migrate();
    return this;
  }

  public OutboxDb migrateTo(String version) {
    new SchemaMigrator(pool, table).migrateTo(version);
    return this;
  }

  // Writing, as an application does.

  /** A message with a JSON-ish payload naming itself; aggregate type "order". */
  public static OutboxMessage message(String messageId, String aggregateId) {
    return OutboxMessage.builder()
        .messageId(messageId)
        .aggregateType("order")
        .aggregateId(aggregateId)
        .eventType("OrderChanged")
        .payload(("{\"id\":\"" + messageId + "\"}").getBytes(StandardCharsets.UTF_8))
        .build();
  }

  /** Message ids "prefix-00001", ... for tests that make many. */
  public static List<String> ids(String prefix, int from, int count) {
    List<String> ids = new ArrayList<>(count);
    for (int i = from; i < from + count; i++) {
      ids.add(String.format("%s-%05d", prefix, i));
    }
    return ids;
  }

  /** Appends the messages in one transaction, as an application would. */
  public void insert(String instanceKey, List<OutboxMessage> messages) {
    try {
      inTransaction(c -> enqueue(c, instanceKey, messages));
    } catch (SQLException e) {
      throw new IllegalStateException("insert failed", e);
    }
  }

  /** Appends the messages within the caller's transaction. */
  public void enqueue(Connection c, String instanceKey, List<OutboxMessage> messages)
      throws SQLException {
    PostgresOutboxWriter writer = new PostgresOutboxWriter(table.tableName(), instanceKey);
    for (OutboxMessage m : messages) {
      writer.enqueue(c, m);
    }
  }

  /** What one transaction does. */
  @FunctionalInterface
  public interface Transaction {
    void run(Connection c) throws SQLException;
  }

  /** Runs {@code work} in one transaction on a connection of the pool; rolls back if it throws. */
  public void inTransaction(Transaction work) throws SQLException {
    try (Connection c = pool.getConnection()) {
      c.setAutoCommit(false);
      try {
        work.run(c);
        c.commit();
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    }
  }

  /** A legacy row without an instance key; only possible before schema version 2. */
  public void insertLegacy(String messageId, String aggregateId) {
    update(
        "INSERT INTO "
            + table.qualified()
            + " (message_id, aggregate_type, aggregate_id, event_type, payload)"
            + " VALUES (?, 'order', ?, 'Legacy', convert_to('{}', 'UTF8'))",
        messageId,
        aggregateId);
  }

  // Reading back.

  /** A row's relay state. */
  public record Row(
      long seq,
      String messageId,
      String instanceKey,
      String aggregateId,
      String status,
      int attempts,
      int abandonedClaims,
      long leaseToken,
      String leaseOwner,
      String lastFailureCode,
      String kafkaTopic,
      Integer kafkaPartition,
      Long kafkaOffset) {}

  /** Every row, by message id, in insertion order. */
  public Map<String, Row> rows() {
    return select("TRUE");
  }

  /** The rows of {@code instanceKey}, by message id, in insertion order. */
  public Map<String, Row> rows(String instanceKey) {
    return select("instance_key = ?", instanceKey);
  }

  /**
   * Every message as a row of the table, wherever it is: awaiting delivery or parked in the table,
   * or published, in the published log (schema version 9), where it is PUBLISHED without a lease.
   */
  public String messages() {
    String columns =
        "seq, message_id, instance_key, aggregate_id, %s, attempts, abandoned_claims,"
            + " lease_token, %s, last_failure_code, kafka_topic, kafka_partition, kafka_offset";
    return "(SELECT "
        + columns.formatted("status", "lease_owner")
        + " FROM "
        + table.qualified()
        + " UNION ALL SELECT "
        + columns.formatted("'PUBLISHED' AS status", "NULL AS lease_owner")
        + " FROM "
        + table.qualifiedPublishedLog()
        + ") messages";
  }

  private Map<String, Row> select(String where, Object... params) {
    Map<String, Row> rows = new LinkedHashMap<>();
    query(
        "SELECT seq, message_id, instance_key, aggregate_id, status, attempts, abandoned_claims,"
            + " lease_token, lease_owner, last_failure_code, kafka_topic, kafka_partition,"
            + " kafka_offset FROM "
            + messages()
            + " WHERE "
            + where
            + " ORDER BY seq",
        rs -> {
          Row row =
              new Row(
                  rs.getLong(1),
                  rs.getString(2),
                  rs.getString(3),
                  rs.getString(4),
                  rs.getString(5),
                  rs.getInt(6),
                  rs.getInt(7),
                  rs.getLong(8),
                  rs.getString(9),
                  rs.getString(10),
                  rs.getString(11),
                  (Integer) rs.getObject(12),
                  (Long) rs.getObject(13));
          rows.put(row.messageId(), row);
        },
        params);
    return rows;
  }

  public Row row(String messageId) {
    Row row = select("message_id = ?", messageId).get(messageId);
    if (row == null) {
      throw new AssertionError("no row " + messageId);
    }
    return row;
  }

  /** How many rows of these instance keys have this status. */
  public long count(String status, String... instanceKeys) {
    return scalar(
        "SELECT count(*) FROM " + messages() + " WHERE status = ? AND instance_key = ANY (?)",
        status,
        instanceKeys);
  }

  /** Rows still to be delivered (PENDING, AMBIGUOUS, IN_FLIGHT) of {@code instanceKey}. */
  public long active(String instanceKey) {
    return scalar(
        "SELECT count(*) FROM "
            + table.qualified()
            + " WHERE instance_key = ? AND status IN ('PENDING', 'AMBIGUOUS', 'IN_FLIGHT')",
        instanceKey);
  }

  /** Every column of the rows matching {@code where}, as JSON text, by message id. */
  public Map<String, String> snapshot(String where, Object... params) {
    Map<String, String> rows =
        new LinkedHashMap<>(
            map(
                "SELECT message_id, row_to_json(o)::text FROM "
                    + table.qualified()
                    + " o WHERE "
                    + where,
                params));
    // Published rows (schema version 9): their entry in the published log.
    rows.putAll(
        map(
            "SELECT message_id, row_to_json(p)::text FROM "
                + table.qualifiedPublishedLog()
                + " p WHERE "
                + where,
            params));
    return rows;
  }

  /**
   * The complete state of the rows not owned by these instance keys (legacy rows included), as JSON
   * text by message id: every column, so any change shows.
   */
  public Map<String, String> rowsOutside(String... instanceKeys) {
    return snapshot("instance_key IS NULL OR NOT (instance_key = ANY (?))", (Object) instanceKeys);
  }

  // Plain SQL on the test's own connections; a String[] parameter is bound as a text array.

  /** Runs a statement; returns the update count. */
  public int update(String sql, Object... params) {
    try (Connection c = pool.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      bind(c, ps, params);
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException("statement failed: " + sql, e);
    }
  }

  /** The first column of the first row, as a number (a count). */
  public long scalar(String sql, Object... params) {
    long[] value = new long[1];
    query(sql, rs -> value[0] = rs.getLong(1), params);
    return value[0];
  }

  /** First column to second column, both as text, of every row of {@code sql}, in order. */
  public Map<String, String> map(String sql, Object... params) {
    Map<String, String> result = new LinkedHashMap<>();
    query(sql, rs -> result.put(rs.getString(1), rs.getString(2)), params);
    return result;
  }

  @FunctionalInterface
  public interface RowReader {
    void read(ResultSet rs) throws SQLException;
  }

  public void query(String sql, RowReader reader, Object... params) {
    try (Connection c = pool.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      bind(c, ps, params);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          reader.read(rs);
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("query failed: " + sql, e);
    }
  }

  private static void bind(Connection c, PreparedStatement ps, Object... params)
      throws SQLException {
    for (int i = 0; i < params.length; i++) {
      if (params[i] instanceof String[] array) {
        ps.setArray(i + 1, c.createArrayOf("text", array));
      } else {
        ps.setObject(i + 1, params[i]);
      }
    }
  }

  // The database as a whole, administered from the server's "postgres" database.

  /** Terminates every backend of the connector on this database; returns how many. */
  public int terminateRelayBackends() {
    return (int)
        admin(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                + " WHERE datname = ? AND application_name LIKE 'outbox-relay%'",
            name);
  }

  /** How many backends carry this application name (a JDBC URL can set it). */
  public long backends(String applicationName) {
    return admin(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = ? AND application_name = ?",
        name,
        applicationName);
  }

  /** ALLOW_CONNECTIONS: when false, nobody can open a new connection to this database. */
  public void allowConnections(boolean allow) {
    try (Connection c = Postgres.server().getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      // The name comes from freshDatabase or create: lower-case letters, digits and underscores.
      s.execute("ALTER DATABASE " + name + " ALLOW_CONNECTIONS " + allow);
    } catch (SQLException e) {
      throw new IllegalStateException("ALTER DATABASE failed", e);
    }
  }

  /**
   * The database goes away: it refuses new connections, then every backend on it is terminated (the
   * connectors', the listeners', this fixture's).
   */
  public void goAway() {
    allowConnections(false);
    admin(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            + " WHERE datname = ? AND pid <> pg_backend_pid()",
        name);
  }

  /** Lets connections in again; this fixture's own pool drops the connections that were cut. */
  public void comeBack() {
    allowConnections(true);
    pool.getHikariPoolMXBean().softEvictConnections();
  }

  /** The database server's clock, read through the maintenance database (works in an outage). */
  public static Instant serverNow() {
    try (Connection c = Postgres.server().getPostgresDatabase().getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT statement_timestamp()")) {
      rs.next();
      return rs.getTimestamp(1).toInstant();
    } catch (SQLException e) {
      throw new IllegalStateException("clock query failed", e);
    }
  }

  private static long admin(String sql, Object... params) {
    try (Connection c = Postgres.server().getPostgresDatabase().getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("admin query failed: " + sql, e);
    }
  }

  @Override
  public void close() {
    pool.close();
  }
}
