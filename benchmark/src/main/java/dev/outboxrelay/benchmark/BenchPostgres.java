package dev.outboxrelay.benchmark;

import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Real PostgreSQL (embedded binaries from Maven) with durable settings: every commit waits for its
 * WAL to be flushed to disk. One server for the whole run; each run gets a database of its own,
 * dropped afterwards.
 *
 * <p>The server runs with {@code wal_level=logical} by default, for every scenario alike: the
 * Debezium peer needs it, and it changes what an UPDATE or INSERT writes to the WAL (no prefix and
 * suffix compression of updated tuples, tuple data logged even beside a full-page image), so WAL
 * figures are only comparable under one setting. {@code pg_stat_statements} is preloaded for the
 * per-run cost figures ({@link RunCost}).
 */
final class BenchPostgres implements AutoCloseable {
  static final String USER = "postgres";
  static final OutboxTable TABLE = OutboxTable.parse("outbox");

  /** Settings that decide durability and speed, reported with every result. */
  static final List<String> REPORTED_SETTINGS =
      List.of(
          "server_version",
          "fsync",
          "synchronous_commit",
          "full_page_writes",
          "wal_sync_method",
          "wal_level",
          "wal_compression",
          "shared_buffers",
          "max_wal_size",
          "checkpoint_timeout",
          "autovacuum",
          "max_connections",
          "shared_preload_libraries");

  private final EmbeddedPostgres server;
  private final AtomicInteger databases = new AtomicInteger();
  private final ServerCpu cpu;

  /**
   * @param serverLog the file the server writes its log to (beside the run's report)
   */
  BenchPostgres(String sharedBuffers, String walLevel, String walCompression, Path serverLog)
      throws IOException, SQLException {
    File log = serverLog.toFile();
    server =
        EmbeddedPostgres.builder()
            .setServerConfig("wal_level", walLevel)
            .setServerConfig("wal_compression", walCompression)
            .setServerConfig("shared_preload_libraries", "pg_stat_statements")
            .setServerConfig("pg_stat_statements.track", "top")
            .setServerConfig("fsync", "on")
            .setServerConfig("synchronous_commit", "on")
            .setServerConfig("full_page_writes", "on")
            .setServerConfig("max_connections", "300")
            .setServerConfig("shared_buffers", sharedBuffers)
            // Bulk loading 1,000,000 rows must not trigger a checkpoint storm mid-measurement.
            .setServerConfig("max_wal_size", "8GB")
            .setServerConfig("checkpoint_timeout", "30min")
            // The server's own log, for what the figures cannot say (a stall: lock waits,
            // autovacuum, checkpoints, slow statements). Written by the server to the file for
            // its whole life, not through a pipe that is read only while it starts.
            .setServerConfig("log_lock_waits", "on")
            .setServerConfig("log_autovacuum_min_duration", "0")
            .setServerConfig("log_checkpoints", "on")
            .setServerConfig("log_min_duration_statement", "1000")
            .setOutputRedirector(ProcessBuilder.Redirect.appendTo(log))
            .setErrorRedirector(ProcessBuilder.Redirect.appendTo(log))
            .start();
    String dataDirectory;
    try (Connection c = admin();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW data_directory")) {
      rs.next();
      dataDirectory = rs.getString(1);
    }
    cpu = ServerCpu.of(Path.of(dataDirectory));
  }

  /** Creates an empty database with the outbox schema and returns its JDBC URL. */
  String freshDatabase(String prefix) throws SQLException {
    return freshDatabase(prefix, true);
  }

  /**
   * Creates an empty database (with the outbox schema if asked) and the statistics extensions the
   * cost figures read, and returns its JDBC URL.
   */
  String freshDatabase(String prefix, boolean outboxSchema) throws SQLException {
    String name = prefix + "_" + databases.incrementAndGet();
    try (Connection c = admin();
        Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE " + name);
    }
    String url = url(name);
    try (Connection c = connect(url);
        Statement s = c.createStatement()) {
      s.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      s.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
    }
    if (!outboxSchema) {
      return url;
    }
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(url);
    ds.setUser(USER);
    new SchemaMigrator(ds, TABLE).migrate();
    return url;
  }

  void dropDatabase(String url) throws SQLException {
    String name = url.substring(url.lastIndexOf('/') + 1);
    try (Connection c = admin();
        Statement s = c.createStatement()) {
      s.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    }
  }

  int port() {
    return server.getPort();
  }

  /**
   * CPU seconds (user + system) the PostgreSQL server has used so far: the postmaster, every live
   * child process (backends, WAL sender, autovacuum, background writers) and the children it has
   * reaped. NaN where /proc is not available.
   */
  double cpuSeconds() {
    return cpu.seconds();
  }

  String url(String database) {
    return "jdbc:postgresql://localhost:" + server.getPort() + "/" + database;
  }

  static Connection connect(String url) throws SQLException {
    Properties p = new Properties();
    p.setProperty("user", USER);
    p.setProperty("ApplicationName", "outbox-relay-benchmark");
    p.setProperty("reWriteBatchedInserts", "true");
    return DriverManager.getConnection(url, p);
  }

  Connection admin() throws SQLException {
    return connect(url("postgres"));
  }

  Map<String, String> settings() throws SQLException {
    Map<String, String> values = new LinkedHashMap<>();
    try (Connection c = admin();
        Statement s = c.createStatement()) {
      for (String name : REPORTED_SETTINGS) {
        try (ResultSet rs = s.executeQuery("SHOW " + name)) {
          rs.next();
          values.put(name, rs.getString(1));
        }
      }
      try (ResultSet rs = s.executeQuery("SELECT version()")) {
        rs.next();
        values.put("version", rs.getString(1));
      }
    }
    return values;
  }

  /** Flushes dirty buffers, so that a checkpoint does not land in the middle of a measurement. */
  void checkpoint() throws SQLException {
    try (Connection c = admin();
        Statement s = c.createStatement()) {
      s.execute("CHECKPOINT");
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}
