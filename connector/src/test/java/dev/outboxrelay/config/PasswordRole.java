package dev.outboxrelay.config;

import static org.awaitility.Awaitility.await;

import dev.outboxrelay.testing.Postgres;
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

/**
 * A role that must log in with a password. The embedded server trusts every local connection, so
 * this prepends pg_hba.conf rules requiring scram-sha-256 for this one role and reloads the server;
 * every other role stays trusted.
 */
public final class PasswordRole {
  public static final String NAME = "outbox_config_password_role";
  public static final String PASSWORD = "correct-horse-battery-staple";

  private static boolean created;

  private PasswordRole() {}

  public static synchronized void ensureCreated() {
    if (created) {
      return;
    }
    try (Connection c = Postgres.server().getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      // Stored as SCRAM, as the rules below ask for (13's default is md5).
      s.execute("SET password_encryption = 'scram-sha-256'");
      s.execute("CREATE ROLE " + NAME + " LOGIN PASSWORD '" + PASSWORD + "'");
      Path hba;
      try (ResultSet rs = s.executeQuery("SHOW hba_file")) {
        rs.next();
        hba = Path.of(rs.getString(1));
      }
      String rules =
          "host all "
              + NAME
              + " 127.0.0.1/32 scram-sha-256\n"
              + "host all "
              + NAME
              + " ::1/128 scram-sha-256\n";
      Files.writeString(hba, rules + Files.readString(hba));
      s.execute("SELECT pg_reload_conf()");
    } catch (SQLException e) {
      throw new IllegalStateException("could not create the password role", e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    // The postmaster reloads asynchronously: wait until a wrong password is actually refused.
    await().atMost(Duration.ofSeconds(30)).until(PasswordRole::wrongPasswordIsRefused);
    created = true;
  }

  private static boolean wrongPasswordIsRefused() {
    Properties props = new Properties();
    props.setProperty("user", NAME);
    props.setProperty("password", "wrong");
    try (Connection c = new org.postgresql.Driver().connect(Postgres.jdbcUrl("postgres"), props)) {
      return false;
    } catch (SQLException e) {
      return "28P01".equals(e.getSQLState());
    }
  }
}
