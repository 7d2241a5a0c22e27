package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.store.postgres.ServerTooOldException;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigValue;
import org.junit.jupiter.api.Test;

/**
 * A server older than PostgreSQL 13 as validation, a task's start and its migration meet it. The
 * build runs no such server, so these databases say they are 12.22: {@code current_setting}, which
 * the relay reads {@code server_version_num} by, is shadowed ahead of pg_catalog in each one's
 * search_path, answering 120022 for that setting and pg_catalog's answer for every other.
 */
class ServerTooOldTest {
  private static final String VERSION_12 = "PostgreSQL 12.22";

  @Test
  void validationRefusesItOnTheUrl() throws SQLException {
    String url = Postgres.freshDatabase("too_old_validation");
    sayVersion12(url);

    List<String> errors =
        new OutboxSourceConnector()
                .validate(
                    Map.of(
                        "connection.url",
                        url,
                        "connection.user",
                        Postgres.user(),
                        "instance.keys",
                        "orders",
                        "connection.timeout.ms",
                        "2000"))
                .configValues()
                .stream()
                .filter(v -> v.name().equals("connection.url"))
                .map(ConfigValue::errorMessages)
                .findFirst()
                .orElseThrow();

    assertEquals(1, errors.size(), errors.toString());
    assertTrue(errors.get(0).contains(VERSION_12), errors.get(0));
  }

  @Test
  void aMigrationAtStartRefusesItBeforeCreatingAnything() throws SQLException {
    String url = Postgres.freshDatabase("too_old_migration");
    sayVersion12(url);

    OutboxStoreException e =
        assertThrows(
            OutboxStoreException.class,
            () -> new PostgresStoreProvider().migrate(MigrationOnStartTest.config(url, true)));

    assertEquals(ServerTooOldException.REASON_CODE, e.reasonCode());
    assertEquals(OutboxStoreException.Kind.SCHEMA, e.kind());
    assertTrue(e.getMessage().contains(VERSION_12), e.getMessage());
    assertEquals(List.of(), tablesIn(url), "nothing created");
  }

  /** Refused in validation, a table already current on it still runs: with a warning. */
  @Test
  void aTableAlreadyCurrentOnItIsRelayedWithAWarning() throws SQLException {
    String url = Postgres.freshDatabase("too_old_current");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, OutboxTable.parse("outbox")).migrate();
    }
    sayVersion12(url);
    long mark = LogCapture.get().mark();

    new PostgresStoreProvider().migrate(MigrationOnStartTest.config(url, true)); // nothing to do
    new PostgresStoreProvider().checkSchema(MigrationOnStartTest.config(url, false));

    List<LogCapture.Event> warnings =
        LogCapture.get()
            .matching(
                mark, l -> l.message().contains("reason=" + ServerTooOldException.REASON_CODE));
    assertEquals(1, warnings.size(), warnings.toString());
    assertEquals("WARN", warnings.get(0).level());
    assertTrue(warnings.get(0).message().contains(VERSION_12), warnings.get(0).message());
  }

  /** From now on, sessions of {@code url}'s database read server_version_num as 120022. */
  private static void sayVersion12(String url) throws SQLException {
    String database = url.substring(url.lastIndexOf('/') + 1);
    try (HikariDataSource admin = Postgres.pool(url, 1);
        Connection c = admin.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA pg12");
      s.execute(
          "CREATE FUNCTION pg12.current_setting(setting text) RETURNS text LANGUAGE sql STABLE"
              + " AS $$ SELECT CASE WHEN setting = 'server_version_num' THEN '120022'"
              + " ELSE pg_catalog.current_setting(setting) END $$");
      s.execute("ALTER DATABASE " + database + " SET search_path = public, pg12, pg_catalog");
    }
    try (HikariDataSource check = Postgres.pool(url, 1);
        Connection c = check.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_setting('server_version_num')")) {
      assertTrue(rs.next());
      assertEquals("120022", rs.getString(1), "the shadow answers");
    }
  }

  /** The tables of {@code url}'s database outside the catalogs. */
  private static List<String> tablesIn(String url) throws SQLException {
    try (HikariDataSource check = Postgres.pool(url, 1);
        Connection c = check.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT table_schema || '.' || table_name FROM information_schema.tables"
                    + " WHERE table_schema NOT IN ('pg_catalog', 'information_schema')")) {
      List<String> tables = new java.util.ArrayList<>();
      while (rs.next()) {
        tables.add(rs.getString(1));
      }
      return tables;
    }
  }
}
