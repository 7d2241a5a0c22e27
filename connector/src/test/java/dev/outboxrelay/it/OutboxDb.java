package dev.outboxrelay.it;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.OutboxMessage;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.PostgresOutboxWriter;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.testing.Postgres;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * A fresh database on the shared embedded PostgreSQL server, with the outbox table, written to as
 * applications do ({@link PostgresOutboxWriter} in a JDBC transaction) and read back row by row.
 */
final class OutboxDb implements AutoCloseable {
  /** Connections of the test itself carry this name; the connector's carry "outbox-relay". */
  static final String TEST_APPLICATION_NAME = "outbox-it-test";

  private final String name;
  private final String url;
  private final HikariDataSource pool;
  private final OutboxTable table;

  private OutboxDb(String name, String url, OutboxTable table) {
    this.name = name;
    this.url = url;
    this.table = table;
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(Postgres.user());
    config.setMaximumPoolSize(3);
    config.setMinimumIdle(3);
    config.setPoolName("outbox-it-" + name);
    config.addDataSourceProperty("ApplicationName", TEST_APPLICATION_NAME);
    this.pool = new HikariDataSource(config);
  }

  /** A new, empty database; call {@link #migrate()} to create the outbox table. */
  static OutboxDb fresh(String prefix) {
    String url = Postgres.freshDatabase(prefix);
    String name = url.substring(url.lastIndexOf('/') + 1);
    return new OutboxDb(name, url, OutboxTable.parse("outbox"));
  }

  String url() {
    return url;
  }

  String name() {
    return name;
  }

  String user() {
    return Postgres.user();
  }

  OutboxDb migrate() {
    new SchemaMigrator(pool, table).migrate();
    return this;
  }

  /** Creates another outbox table in the same database. */
  OutboxDb migrateTable(String tableName) {
    new SchemaMigrator(pool, OutboxTable.parse(tableName)).migrate();
    return this;
  }

  OutboxDb migrateTo(String version) {
    new SchemaMigrator(pool, table).migrateTo(version);
    return this;
  }

  /** A message with a JSON-ish payload naming itself; aggregate type "order". */
  static OutboxMessage message(String messageId, String aggregateId) {
    return OutboxMessage.builder()
        .messageId(messageId)
        .aggregateType("order")
        .aggregateId(aggregateId)
        .eventType("OrderChanged")
        .payload(("{\"id\":\"" + messageId + "\"}").getBytes(StandardCharsets.UTF_8))
        .build();
  }

  /** Appends the messages in one transaction, as an application would. */
  void insert(String instanceKey, List<OutboxMessage> messages) {
    try (Connection c = pool.getConnection()) {
      insert(c, instanceKey, messages);
    } catch (SQLException e) {
      throw new IllegalStateException("insert failed", e);
    }
  }

  /** Appends the messages in one transaction on the given connection. */
  void insert(Connection c, String instanceKey, List<OutboxMessage> messages) throws SQLException {
    PostgresOutboxWriter writer = new PostgresOutboxWriter(table, instanceKey);
    c.setAutoCommit(false);
    try {
      for (OutboxMessage m : messages) {
        writer.enqueue(c, m);
      }
      c.commit();
    } catch (SQLException | RuntimeException e) {
      c.rollback();
      throw e;
    } finally {
      c.setAutoCommit(true);
    }
  }

  /**
   * A connection of the test's own, outside any pool: it stays open while the database refuses new
   * connections.
   */
  Connection openConnection() throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", user());
    props.setProperty("ApplicationName", TEST_APPLICATION_NAME);
    return new org.postgresql.Driver().connect(url, props);
  }

  /** Rows of the instance key that still await delivery, read on the given connection. */
  long unresolved(Connection c, String instanceKey) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT count(*) FROM "
                + table.qualified()
                + " WHERE instance_key = ? AND status IN ('PENDING', 'AMBIGUOUS', 'IN_FLIGHT')")) {
      ps.setString(1, instanceKey);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** A legacy row without an instance key; only possible before schema version 2. */
  void insertLegacy(String messageId, String aggregateId) {
    update(
        "INSERT INTO "
            + table.qualified()
            + " (message_id, aggregate_type, aggregate_id, event_type, payload)"
            + " VALUES (?, 'order', ?, 'Legacy', convert_to('{}', 'UTF8'))",
        messageId,
        aggregateId);
  }

  /** A row's relay state. */
  record Row(
      long seq,
      String messageId,
      String instanceKey,
      String aggregateId,
      String status,
      int attempts,
      long leaseToken,
      String leaseOwner,
      String lastFailureCode,
      String kafkaTopic,
      Integer kafkaPartition,
      Long kafkaOffset) {}

  /** Every row, by message id, in insertion order. */
  Map<String, Row> rows() {
    Map<String, Row> rows = new LinkedHashMap<>();
    query(
        "SELECT seq, message_id, instance_key, aggregate_id, status, attempts, lease_token,"
            + " lease_owner, last_failure_code, kafka_topic, kafka_partition, kafka_offset FROM "
            + table.qualified()
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
                  rs.getLong(7),
                  rs.getString(8),
                  rs.getString(9),
                  rs.getString(10),
                  (Integer) rs.getObject(11),
                  (Long) rs.getObject(12));
          rows.put(row.messageId(), row);
        });
    return rows;
  }

  Row row(String messageId) {
    Row row = rows().get(messageId);
    if (row == null) {
      throw new AssertionError("no row " + messageId);
    }
    return row;
  }

  /** How many rows of these instance keys have this status. */
  long count(String status, String... instanceKeys) {
    long[] n = new long[1];
    query(
        "SELECT count(*) FROM "
            + table.qualified()
            + " WHERE status = ? AND instance_key = ANY (?)",
        rs -> n[0] = rs.getLong(1),
        status,
        instanceKeys);
    return n[0];
  }

  /**
   * The complete state of the rows not owned by these instance keys (legacy rows included), as JSON
   * text by message id: every column, so any change shows.
   */
  Map<String, String> rowsOutside(String... instanceKeys) {
    Map<String, String> rows = new LinkedHashMap<>();
    query(
        "SELECT message_id, to_jsonb(o)::text FROM "
            + table.qualified()
            + " o WHERE o.instance_key IS NULL OR NOT (o.instance_key = ANY (?)) ORDER BY seq",
        rs -> rows.put(rs.getString(1), rs.getString(2)),
        (Object) instanceKeys);
    return rows;
  }

  /** Runs a statement on the test's own connection. */
  int update(String sql, Object... params) {
    try (Connection c = pool.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      bind(c, ps, params);
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException("statement failed: " + sql, e);
    }
  }

  @FunctionalInterface
  interface RowReader {
    void read(ResultSet rs) throws SQLException;
  }

  void query(String sql, RowReader reader, Object... params) {
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
  int terminateRelayBackends() {
    return admin(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            + " WHERE datname = ? AND application_name LIKE 'outbox-relay%'",
        name);
  }

  /** How many backends carry this application name (a JDBC URL can set it). */
  int backendsNamed(String applicationName) {
    return admin(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = ? AND application_name = ?",
        name,
        applicationName);
  }

  /** ALLOW_CONNECTIONS: when false, nobody can open a new connection to this database. */
  void allowConnections(boolean allow) {
    try (Connection c = Postgres.server().getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      // The name comes from freshDatabase: lower-case letters, digits and underscores.
      s.execute("ALTER DATABASE " + name + " ALLOW_CONNECTIONS " + allow);
    } catch (SQLException e) {
      throw new IllegalStateException("ALTER DATABASE failed", e);
    }
  }

  private static int admin(String sql, Object... params) {
    try (Connection c = Postgres.server().getPostgresDatabase().getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("admin query failed", e);
    }
  }

  /** Message ids "prefix-0001", ... for tests that make many. */
  static List<String> ids(String prefix, int from, int count) {
    List<String> ids = new ArrayList<>(count);
    for (int i = from; i < from + count; i++) {
      ids.add(String.format("%s-%05d", prefix, i));
    }
    return ids;
  }

  @Override
  public void close() {
    pool.close();
  }
}
