package dev.outboxrelay.benchmark;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.TreeMap;

/**
 * Outbox rows as the benchmark writes and checks them. Row {@code n} (1-based, in insertion order)
 * belongs to aggregate {@code (n - 1) % aggregates} and is that aggregate's {@code (n - 1) /
 * aggregates}-th event; its JSON payload, padded to about {@code payloadBytes}, starts with those
 * three numbers so that a consumer can check delivery and per-aggregate order cheaply: {@code
 * {"n":17,"a":16,"s":0,"p":"xxxx…"}}.
 */
final class Backlog {
  static final String INSTANCE_KEY = "bench";
  static final String AGGREGATE_TYPE = "order";
  static final String EVENT_TYPE = "OrderChanged";
  private static final int CHUNK = 50_000;

  private Backlog() {}

  /** The payload of row {@code n}, as the bulk insert writes it. */
  static byte[] payload(long n, int aggregates, int payloadBytes) {
    String head =
        "{\"n\":" + n + ",\"a\":" + (n - 1) % aggregates + ",\"s\":" + (n - 1) / aggregates;
    int pad = Math.max(0, payloadBytes - head.length() - 8);
    return (head + ",\"p\":\"" + "x".repeat(pad) + "\"}")
        .getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  static String aggregateId(long n, int aggregates) {
    return "agg-" + String.format("%05d", (n - 1) % aggregates);
  }

  /**
   * Inserts rows {@code from..to} with the given status, server-side, committing every 50,000 rows;
   * then vacuums and analyzes the table, as autovacuum would have done for a backlog that built up
   * over time.
   */
  static void insert(
      String url, long from, long to, int aggregates, int payloadBytes, String topic, String status)
      throws SQLException {
    insert(url, INSTANCE_KEY, from, to, aggregates, payloadBytes, topic, status);
  }

  /** {@link #insert} of rows of another instance key than the connector's. */
  static void insert(
      String url,
      String instanceKey,
      long from,
      long to,
      int aggregates,
      int payloadBytes,
      String topic,
      String status)
      throws SQLException {
    insertRows(url, instanceKey, from, to, aggregates, payloadBytes, topic, status);
    vacuum(url, BenchPostgres.TABLE.qualified());
  }

  /** {@link #insert} without the VACUUM: the INSERT statements alone, for the WAL figures. */
  static void insertRows(
      String url, long from, long to, int aggregates, int payloadBytes, String topic, String status)
      throws SQLException {
    insertRows(url, INSTANCE_KEY, from, to, aggregates, payloadBytes, topic, status);
  }

  private static void insertRows(
      String url,
      String instanceKey,
      long from,
      long to,
      int aggregates,
      int payloadBytes,
      String topic,
      String status)
      throws SQLException {
    String sql =
        "INSERT INTO "
            + BenchPostgres.TABLE.qualified()
            + " (instance_key, aggregate_type, aggregate_id, event_type, topic, payload, status,"
            + " published_at, kafka_topic, kafka_partition, kafka_offset)"
            + " SELECT ?, ?, 'agg-' || lpad(((g - 1) % ?)::text, 5, '0'), ?, ?,"
            + " convert_to(format('{\"n\":%s,\"a\":%s,\"s\":%s,\"p\":\"%s\"}', g, (g - 1) % ?,"
            + " (g - 1) / ?, repeat('x', greatest(0, ? - length(format('{\"n\":%s,\"a\":%s,\"s\":%s',"
            + " g, (g - 1) % ?, (g - 1) / ?)) - 8))), 'UTF8'),"
            + " ?, CASE WHEN ? = 'PUBLISHED' THEN now() END,"
            + " CASE WHEN ? = 'PUBLISHED' THEN ? END,"
            + " CASE WHEN ? = 'PUBLISHED' THEN 0 END,"
            + " CASE WHEN ? = 'PUBLISHED' THEN g END"
            + " FROM generate_series(?::bigint, ?::bigint) g";
    try (Connection c = BenchPostgres.connect(url)) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        for (long start = from; start <= to; start += CHUNK) {
          long end = Math.min(to, start + CHUNK - 1);
          int i = 1;
          ps.setString(i++, instanceKey);
          ps.setString(i++, AGGREGATE_TYPE);
          ps.setInt(i++, aggregates);
          ps.setString(i++, EVENT_TYPE);
          ps.setString(i++, topic);
          ps.setInt(i++, aggregates);
          ps.setInt(i++, aggregates);
          ps.setInt(i++, payloadBytes);
          ps.setInt(i++, aggregates);
          ps.setInt(i++, aggregates);
          ps.setString(i++, status);
          ps.setString(i++, status);
          ps.setString(i++, status);
          ps.setString(i++, topic);
          ps.setString(i++, status);
          ps.setString(i++, status);
          ps.setLong(i++, start);
          ps.setLong(i, end);
          ps.executeUpdate();
          c.commit();
        }
      }
    }
  }

  static void vacuum(Connection autocommit) throws SQLException {
    try (Statement s = autocommit.createStatement()) {
      s.execute("VACUUM (ANALYZE) " + BenchPostgres.TABLE.qualified());
    }
  }

  /**
   * VACUUM (ANALYZE) of a table, as autovacuum would have done for a backlog built over time; for
   * the relay's table, of its published log too (schema version 9), where the relay's publishes
   * write.
   */
  static void vacuum(String url, String table) throws SQLException {
    String tables =
        table.equals(BenchPostgres.TABLE.qualified())
            ? table + ", " + BenchPostgres.TABLE.qualifiedPublishedLog()
            : table;
    try (Connection c = BenchPostgres.connect(url);
        Statement s = c.createStatement()) {
      s.execute("VACUUM (ANALYZE) " + tables);
    }
  }

  /** SQL of the aggregate id of row {@code g}, as {@link #aggregateId} computes it. */
  static String aggregateIdSql(int aggregates) {
    return "'agg-' || lpad(((g - 1) % " + aggregates + ")::text, 5, '0')";
  }

  /** SQL of the JSON text of row {@code g}'s payload, as {@link #payload} builds it. */
  static String payloadSql(int aggregates, int payloadBytes) {
    String head = "g, (g - 1) % " + aggregates + ", (g - 1) / " + aggregates;
    return "format('{\"n\":%s,\"a\":%s,\"s\":%s,\"p\":\"%s\"}', "
        + head
        + ", repeat('x', greatest(0, "
        + payloadBytes
        + " - length(format('{\"n\":%s,\"a\":%s,\"s\":%s', "
        + head
        + ")) - 8)))";
  }

  /**
   * Inserts rows {@code from..to} into another table shape: {@code insertSql} is an INSERT … SELECT
   * over {@code generate_series(?::bigint, ?::bigint) g}, committed every 50,000 rows like {@link
   * #insert}.
   */
  static void insertSeries(String url, String insertSql, long from, long to) throws SQLException {
    try (Connection c = BenchPostgres.connect(url)) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(insertSql)) {
        for (long start = from; start <= to; start += CHUNK) {
          ps.setLong(1, start);
          ps.setLong(2, Math.min(to, start + CHUNK - 1));
          ps.executeUpdate();
          c.commit();
        }
      }
    }
  }

  /**
   * True while any row still awaits delivery or its outcome (PENDING, AMBIGUOUS, IN_FLIGHT). Such a
   * row is neither published nor parked, as the relay's due index (instance_key, seq) says, which
   * the look can then read instead of the table. Right after a drain either way meets every row the
   * drain deleted (0.1 s for 50,000), so a drain's clock stops when the look that found no row
   * active began (docs/benchmarks.md).
   */
  static boolean anyActive(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT EXISTS (SELECT 1 FROM "
                    + BenchPostgres.TABLE.qualified()
                    + " WHERE instance_key = '"
                    + INSTANCE_KEY
                    + "' AND published_at IS NULL AND parked_at IS NULL"
                    + " AND status IN ('PENDING', 'AMBIGUOUS', 'IN_FLIGHT'))")) {
      rs.next();
      return rs.getBoolean(1);
    }
  }

  /**
   * Rows per status: the relay's table, and its published log's entries as PUBLISHED (schema
   * version 9: publishing moves a row there; the naive relay's published rows stay in the table).
   */
  static Map<String, Long> statusCounts(Connection c) throws SQLException {
    Map<String, Long> counts = new TreeMap<>();
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT status, count(*) FROM "
                    + BenchPostgres.TABLE.qualified()
                    + " GROUP BY status"
                    + " UNION ALL SELECT 'PUBLISHED', count(*) FROM "
                    + BenchPostgres.TABLE.qualifiedPublishedLog()
                    + " HAVING count(*) > 0")) {
      while (rs.next()) {
        counts.merge(rs.getString(1), rs.getLong(2), Long::sum);
      }
    }
    return counts;
  }
}
