package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.Statement;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A migration Flyway refuses for a reason of its own (here an applied migration whose checksum no
 * longer matches) fails the task naming Flyway's error code, and the task status says where to
 * look, not to create a table that exists.
 */
class RefusedMigrationTest {
  @Test
  void aMigrationFlywayRefusesNamesItsErrorCode() throws Exception {
    String url = Postgres.freshDatabase("refused_migration");
    try (HikariDataSource admin = Postgres.pool(url, 3)) {
      new SchemaMigrator(admin, OutboxTable.parse("outbox")).migrate();
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        s.execute("UPDATE outbox_schema_history SET checksum = 42 WHERE version = '1'");
      }
      OutboxSourceConfig config =
          new OutboxSourceConfig(
              Map.of(
                  "connection.url",
                  url,
                  "connection.user",
                  Postgres.user(),
                  "instance.keys",
                  "orders",
                  "schema.migrate.on.start",
                  "true"));

      OutboxStoreException e =
          assertThrows(
              OutboxStoreException.class, () -> new PostgresStoreProvider().migrate(config));

      assertEquals(
          "outbox store migrate failed: SCHEMA_MIGRATION_FAILED (Flyway VALIDATE_ERROR)",
          e.getMessage());
      assertEquals(OutboxStoreException.Kind.SCHEMA, e.kind());
    }
  }
}
