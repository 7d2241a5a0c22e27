package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.testing.Postgres;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.flywaydb.core.api.callback.Context;
import org.flywaydb.core.api.callback.Event;
import org.junit.jupiter.api.Test;

/**
 * Each migration runs without a statement timeout, under the configured lock timeout, and with the
 * table's schema alone on its search path.
 */
class MigrationSettingsCallbackTest {
  @Test
  void aMigrationRunsWithoutTheSessionsStatementTimeoutInItsTablesSchemaAndTheSettingsEndWithIt()
      throws SQLException {
    try (HikariDataSource pool = Postgres.pool(Postgres.freshDatabase("migration_timeouts"), 1);
        Connection c = pool.getConnection()) {
      // What a role's settings or the URL's options give a session (transaction-mode poolers).
      exec(c, "SET statement_timeout = '5s'");
      exec(c, "SET lock_timeout = '7s'");
      exec(c, "CREATE SCHEMA \"App\"");
      exec(c, "SET search_path = \"App\", public");
      for (Duration lockTimeout : new Duration[] {Duration.ofMillis(1500), Duration.ZERO}) {
        for (String schema : new String[] {null, "public"}) {
          c.setAutoCommit(false);
          new MigrationSettingsCallback(lockTimeout, schema)
              .handle(Event.BEFORE_EACH_MIGRATE, context(c));

          assertEquals("0", setting(c, "statement_timeout"));
          assertEquals(lockTimeout.isZero() ? "7s" : "1500ms", setting(c, "lock_timeout"));
          assertEquals(schema == null ? "\"App\"" : "public", setting(c, "search_path"));
          c.commit();
          c.setAutoCommit(true);
          assertEquals("5s", setting(c, "statement_timeout"), "ended with the transaction");
          assertEquals("7s", setting(c, "lock_timeout"));
          assertEquals("\"App\", public", setting(c, "search_path"));
        }
      }
    }
  }

  /** The migration's context as Flyway gives it to a callback: its connection. */
  private static Context context(Connection connection) {
    return (Context)
        Proxy.newProxyInstance(
            Context.class.getClassLoader(),
            new Class<?>[] {Context.class},
            (proxy, method, args) -> {
              if (method.getName().equals("getConnection")) {
                return connection;
              }
              throw new UnsupportedOperationException(method.getName());
            });
  }

  private static void exec(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static String setting(Connection c, String name) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW " + name)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
