package dev.outboxrelay.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One real PostgreSQL server per test JVM (embedded binaries from Maven, no Docker); every test
 * class asks for a fresh database of its own.
 */
public final class Postgres {
  private static final AtomicInteger DATABASES = new AtomicInteger();
  private static EmbeddedPostgres server;

  private Postgres() {}

  public static synchronized EmbeddedPostgres server() {
    if (server == null) {
      try {
        server =
            EmbeddedPostgres.builder()
                .setServerConfig("max_connections", "300")
                .setServerConfig("synchronous_commit", "on")
                .start();
      } catch (IOException e) {
        throw new UncheckedIOException("embedded PostgreSQL did not start", e);
      }
      Runtime.getRuntime().addShutdownHook(new Thread(Postgres::stopQuietly));
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
  public static int majorVersion() {
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

  /** Creates an empty database and returns its JDBC URL. */
  public static String freshDatabase(String prefix) {
    return createDatabase(prefix.toLowerCase() + "_" + DATABASES.incrementAndGet());
  }

  /** Creates an empty database of exactly this name and returns its JDBC URL. */
  public static String createDatabase(String name) {
    try (Connection c = server().getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE " + name);
    } catch (SQLException e) {
      throw new IllegalStateException("could not create database " + name, e);
    }
    return jdbcUrl(name);
  }

  public static String jdbcUrl(String database) {
    return "jdbc:postgresql://localhost:" + server().getPort() + "/" + database;
  }

  public static String user() {
    return "postgres";
  }

  /** A small pool on the given database, as the connector would open one. */
  public static HikariDataSource pool(String jdbcUrl, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl);
    config.setUsername(user());
    config.setMaximumPoolSize(size);
    config.setPoolName("test-pool");
    return new HikariDataSource(config);
  }
}
