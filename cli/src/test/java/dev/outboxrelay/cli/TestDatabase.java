package dev.outboxrelay.cli;

import static org.awaitility.Awaitility.await;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One real PostgreSQL server per test JVM (embedded binaries from Maven, no Docker); each test asks
 * for a fresh database of its own.
 */
final class TestDatabase {
  static final String PASSWORD_ROLE = "outbox_cli_password_role";
  static final String PASSWORD = "cli-correct-password";

  private static final AtomicInteger DATABASES = new AtomicInteger();
  private static EmbeddedPostgres server;
  private static boolean passwordRoleCreated;

  private TestDatabase() {}

  static synchronized EmbeddedPostgres server() {
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
  static int majorVersion() {
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
  static String fresh(String prefix) {
    String name = prefix + "_" + DATABASES.incrementAndGet();
    try (Connection c = server().getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE " + name);
    } catch (SQLException e) {
      throw new IllegalStateException("could not create database " + name, e);
    }
    return url(name);
  }

  /** Creates a database as a copy of {@code template}, which must have no open connections. */
  static String copyOf(String template, String prefix) {
    String name = prefix + "_" + DATABASES.incrementAndGet();
    try (Connection c = server().getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE " + name + " TEMPLATE " + template);
    } catch (SQLException e) {
      throw new IllegalStateException("could not copy database " + template, e);
    }
    return url(name);
  }

  static String url(String database) {
    return "jdbc:postgresql://localhost:" + server().getPort() + "/" + database;
  }

  static String user() {
    return "postgres";
  }

  /** A connection as the superuser, for setting rows up and checking them. */
  static Connection connect(String url) throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", user());
    return new org.postgresql.Driver().connect(url, props);
  }

  /**
   * A role that must log in with a password. The embedded server trusts every local connection, so
   * this prepends pg_hba.conf rules requiring scram-sha-256 for this one role and reloads the
   * server; every other role stays trusted.
   */
  static synchronized void ensurePasswordRole() {
    if (passwordRoleCreated) {
      return;
    }
    try (Connection c = server().getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      // Stored as SCRAM, as the rules below ask for (13's default is md5).
      s.execute("SET password_encryption = 'scram-sha-256'");
      s.execute("CREATE ROLE " + PASSWORD_ROLE + " LOGIN PASSWORD '" + PASSWORD + "'");
      Path hba;
      try (ResultSet rs = s.executeQuery("SHOW hba_file")) {
        rs.next();
        hba = Path.of(rs.getString(1));
      }
      String rules =
          "host all "
              + PASSWORD_ROLE
              + " 127.0.0.1/32 scram-sha-256\n"
              + "host all "
              + PASSWORD_ROLE
              + " ::1/128 scram-sha-256\n";
      Files.writeString(hba, rules + Files.readString(hba));
      s.execute("SELECT pg_reload_conf()");
    } catch (SQLException e) {
      throw new IllegalStateException("could not create the password role", e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    // The postmaster reloads asynchronously: poll until a wrong password is actually refused. The
    // URL is taken here: the poller runs on another thread, and this one holds the class lock.
    String url = url("postgres");
    await().atMost(Duration.ofSeconds(30)).until(() -> wrongPasswordIsRefused(url));
    passwordRoleCreated = true;
  }

  private static boolean wrongPasswordIsRefused(String url) {
    Properties props = new Properties();
    props.setProperty("user", PASSWORD_ROLE);
    props.setProperty("password", "wrong");
    try (Connection c = new org.postgresql.Driver().connect(url, props)) {
      return false;
    } catch (SQLException e) {
      return "28P01".equals(e.getSQLState());
    }
  }
}
