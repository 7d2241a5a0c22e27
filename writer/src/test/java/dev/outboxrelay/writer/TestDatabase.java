package dev.outboxrelay.writer;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A real PostgreSQL (embedded binaries from Maven, one server per test JVM) and a fresh database
 * per test, with the outbox table created by the committed docs/schema.sql: the plain SQL a user
 * applies with their own migration tool, the published log of schema version 9 included. No Flyway,
 * not even in tests.
 */
final class TestDatabase {
  /** The committed plain-SQL schema; the CLI's SchemaDocTest keeps it equal to the migrations. */
  static final Path SCHEMA_SQL = Path.of("../docs/schema.sql");

  private static final AtomicInteger DATABASES = new AtomicInteger();
  private static EmbeddedPostgres server;

  private final PGSimpleDataSource dataSource;

  private TestDatabase(String name) {
    dataSource = new PGSimpleDataSource();
    dataSource.setUrl("jdbc:postgresql://localhost:" + server().getPort() + "/" + name);
    dataSource.setUser("postgres");
  }

  /** A new database with no tables. */
  static TestDatabase empty(String prefix) {
    String name = prefix + "_" + DATABASES.incrementAndGet();
    try (Connection c = server().getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE " + name);
    } catch (SQLException e) {
      throw new IllegalStateException("could not create database " + name, e);
    }
    return new TestDatabase(name);
  }

  /** A new database with the table {@code outbox} of docs/schema.sql. */
  static TestDatabase withOutbox(String prefix) {
    TestDatabase db = empty(prefix);
    db.exec(schemaSql());
    return db;
  }

  static String schemaSql() {
    try {
      return Files.readString(SCHEMA_SQL);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static synchronized EmbeddedPostgres server() {
    if (server == null) {
      try {
        server = EmbeddedPostgres.builder().start();
      } catch (IOException e) {
        throw new UncheckedIOException("embedded PostgreSQL did not start", e);
      }
      Runtime.getRuntime().addShutdownHook(new Thread(TestDatabase::stopQuietly));
      checkVersion();
    }
    return server;
  }

  /**
   * Fails at once when the build asked for another PostgreSQL than the one that started: the
   * oldest-postgres run (pom.xml) swaps the binaries on the classpath, and a swap that did not
   * happen must not pass as a run on the oldest major.
   */
  private static void checkVersion() {
    String expected = System.getProperty("outbox.test.postgres.version", "");
    if (!expected.isEmpty() && majorVersion() != Integer.parseInt(expected.split("\\.")[0])) {
      throw new IllegalStateException(
          "PostgreSQL " + majorVersion() + " started, the build asked for " + expected);
    }
  }

  /** The server's major version, e.g. 13 or 17. */
  private static int majorVersion() {
    try (Connection c = server().getPostgresDatabase().getConnection()) {
      return c.getMetaData().getDatabaseMajorVersion();
    } catch (SQLException e) {
      throw new IllegalStateException("could not read the server's version", e);
    }
  }

  private static void stopQuietly() {
    try {
      server.close();
    } catch (IOException ignored) {
      // The JVM is exiting.
    }
  }

  /** The database's JDBC URL, for a connection configured otherwise. */
  String url() {
    return dataSource.getUrl();
  }

  DataSource dataSource() {
    return dataSource;
  }

  Connection connection() throws SQLException {
    return dataSource.getConnection();
  }

  /** Runs SQL text, several statements at once if need be, in auto-commit. */
  void exec(String sql) {
    try (Connection c = connection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("statement failed", e);
    }
  }

  /** Every row of {@code sql}, each as column label to value as text (null stays null). */
  List<Map<String, String>> rows(String sql, Object... params) {
    try (Connection c = connection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      List<Map<String, String>> rows = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        int columns = rs.getMetaData().getColumnCount();
        while (rs.next()) {
          Map<String, String> row = new TreeMap<>();
          for (int i = 1; i <= columns; i++) {
            row.put(rs.getMetaData().getColumnLabel(i), rs.getString(i));
          }
          rows.add(row);
        }
      }
      return rows;
    } catch (SQLException e) {
      throw new IllegalStateException("query failed: " + sql, e);
    }
  }

  long count(String sql, Object... params) {
    return Long.parseLong(rows(sql, params).get(0).values().iterator().next());
  }
}
