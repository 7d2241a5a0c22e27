package dev.outboxrelay.reliability;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * One fresh database on the JVM's embedded PostgreSQL, holding the outbox table at the current
 * schema version plus what the suite checks with: legacy rows written before V2 (no instance key),
 * rows of an instance key no connector relays, and an audit of every update to a row that is not
 * the main connector's (who held it before and after), kept by a trigger.
 */
final class OutboxDb implements AutoCloseable {
  static final String TABLE = "outbox";
  static final String UNOWNED_KEY = "unowned";
  private static final Pattern IDENTIFIER = Pattern.compile("[a-z][a-z0-9_]{0,40}");

  private final String database;
  private final String url;
  private final HikariDataSource pool;

  private OutboxDb(String database) {
    this.database = database;
    this.url = Postgres.jdbcUrl(database);
    this.pool = Postgres.pool(url, 4);
  }

  /** Creates database {@code name} (a plain lower-case identifier) and opens a small pool. */
  static OutboxDb create(String name) {
    if (!IDENTIFIER.matcher(name).matches()) {
      throw new IllegalArgumentException("database name must be a plain identifier: " + name);
    }
    admin("CREATE DATABASE " + name);
    return new OutboxDb(name);
  }

  String name() {
    return database;
  }

  String url() {
    return url;
  }

  String user() {
    return Postgres.user();
  }

  Connection connection() throws SQLException {
    return pool.getConnection();
  }

  /**
   * Schema V1, then {@code legacy} rows without an instance key (as before V2), then the current
   * version, then {@code unowned} rows of {@link #UNOWNED_KEY}, and the audit of foreign rows.
   */
  OutboxDb prepare(String mainKey, int legacy, int unowned) {
    SchemaMigrator migrator = new SchemaMigrator(pool, OutboxTable.parse(TABLE));
    migrator.migrateTo("1");
    exec(
        "INSERT INTO outbox (message_id, aggregate_type, aggregate_id, event_type, payload)"
            + " SELECT 'legacy-' || g, 'order', 'legacy-agg-' || (g % 7), 'Legacy',"
            + " convert_to('{\"legacy\":' || g || '}', 'UTF8') FROM generate_series(1, ?) g",
        legacy);
    migrator.migrate();
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " payload) SELECT 'unowned-' || g, ?, 'order', 'u-agg-' || (g % 5), 'Unowned',"
            + " convert_to('{\"u\":' || g || '}', 'UTF8') FROM generate_series(1, ?) g",
        UNOWNED_KEY, unowned);
    installAudit(mainKey);
    return this;
  }

  private void installAudit(String mainKey) {
    if (!IDENTIFIER.matcher(mainKey).matches()) {
      throw new IllegalArgumentException("main key must be a plain identifier");
    }
    exec(
        "CREATE TABLE relay_audit (id BIGSERIAL PRIMARY KEY, message_id TEXT, instance_key TEXT,"
            + " old_owner TEXT, new_owner TEXT, old_status TEXT, new_status TEXT)");
    exec(
        "CREATE FUNCTION relay_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            + " INSERT INTO relay_audit (message_id, instance_key, old_owner, new_owner,"
            + " old_status, new_status) VALUES (OLD.message_id, OLD.instance_key,"
            + " OLD.lease_owner, NEW.lease_owner, OLD.status, NEW.status); RETURN NULL; END $$");
    exec(
        "CREATE TRIGGER relay_audit AFTER UPDATE ON outbox FOR EACH ROW"
            + " WHEN (OLD.instance_key IS DISTINCT FROM '"
            + mainKey
            + "') EXECUTE FUNCTION relay_audit_row()");
  }

  int exec(String sql, Object... params) {
    try (Connection c = pool.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      bind(ps, params);
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException("statement failed: " + sql, e);
    }
  }

  long count(String sql, Object... params) {
    try (Connection c = pool.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      bind(ps, params);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("query failed: " + sql, e);
    }
  }

  /** Rows still to be delivered (PENDING, AMBIGUOUS, IN_FLIGHT) of {@code key}. */
  long active(String key) {
    return count(
        "SELECT count(*) FROM outbox WHERE instance_key = ?"
            + " AND status IN ('PENDING', 'AMBIGUOUS', 'IN_FLIGHT')",
        key);
  }

  long published(String key) {
    return count(
        "SELECT count(*) FROM outbox WHERE instance_key = ? AND status = 'PUBLISHED'", key);
  }

  /** First column to second column, both as text, of every row of {@code sql}. */
  Map<String, String> map(String sql, Object... params) {
    Map<String, String> result = new LinkedHashMap<>();
    try (Connection c = pool.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      bind(ps, params);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          result.put(rs.getString(1), rs.getString(2));
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("query failed: " + sql, e);
    }
    return result;
  }

  /** Every column of the rows matching {@code where}, as JSON, by message id. */
  Map<String, String> snapshot(String where, Object... params) {
    return map("SELECT message_id, row_to_json(o)::text FROM outbox o WHERE " + where, params);
  }

  /** What the suite needs of each row of {@code key}, by message id. */
  Map<String, RowFacts> facts(String key) {
    Map<String, RowFacts> facts = new HashMap<>();
    try (Connection c = pool.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT message_id, seq, aggregate_id, status, abandoned_claims, attempts,"
                    + " last_failure_code, kafka_topic, kafka_partition, kafka_offset"
                    + " FROM outbox WHERE instance_key = ?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          facts.put(
              rs.getString(1),
              new RowFacts(
                  rs.getString(1),
                  rs.getLong(2),
                  rs.getString(3),
                  rs.getString(4),
                  rs.getInt(5),
                  rs.getInt(6),
                  rs.getString(7),
                  rs.getString(8),
                  rs.getObject(9) == null ? -1 : rs.getInt(9),
                  rs.getObject(10) == null ? -1 : rs.getLong(10)));
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("facts query failed", e);
    }
    return facts;
  }

  /** A row as the end-of-scenario checks see it. */
  record RowFacts(
      String messageId,
      long seq,
      String aggregateId,
      String status,
      int abandonedClaims,
      int attempts,
      String failureCode,
      String kafkaTopic,
      int kafkaPartition,
      long kafkaOffset) {}

  /**
   * The database goes away: it refuses new connections, then every backend on it is terminated (the
   * connectors', the listeners', this fixture's). Run from the maintenance database.
   */
  void goAway() {
    admin("ALTER DATABASE " + database + " ALLOW_CONNECTIONS false");
    admin(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"
            + database
            + "' AND pid <> pg_backend_pid()");
  }

  /** Lets connections in again; this fixture's own pool drops the connections that were cut. */
  void comeBack() {
    admin("ALTER DATABASE " + database + " ALLOW_CONNECTIONS true");
    pool.getHikariPoolMXBean().softEvictConnections();
  }

  /** Backends connected to this database right now (seen from the maintenance database). */
  long backends(String applicationName) {
    return adminCount(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '"
            + database
            + "' AND application_name = '"
            + applicationName
            + "'");
  }

  /** The database server's clock, read through the maintenance database (works in an outage). */
  static Instant serverNow() {
    try (Connection c = Postgres.server().getPostgresDatabase().getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT statement_timestamp()")) {
      rs.next();
      return rs.getTimestamp(1).toInstant();
    } catch (SQLException e) {
      throw new IllegalStateException("clock query failed", e);
    }
  }

  private static void admin(String sql) {
    try (Connection c = Postgres.server().getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("admin statement failed: " + sql, e);
    }
  }

  private static long adminCount(String sql) {
    try (Connection c = Postgres.server().getPostgresDatabase().getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException("admin query failed: " + sql, e);
    }
  }

  private static void bind(PreparedStatement ps, Object... params) throws SQLException {
    for (int i = 0; i < params.length; i++) {
      ps.setObject(i + 1, params[i]);
    }
  }

  @Override
  public void close() {
    pool.close();
  }
}
