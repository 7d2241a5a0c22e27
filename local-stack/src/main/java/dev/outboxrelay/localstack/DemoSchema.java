package dev.outboxrelay.localstack;

import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * Creates the outbox table with the connector's own migrations, the way legacy rows arise in real
 * databases: V1, then a row written without an instance key, then V2 (which requires one for every
 * new row but leaves the old ones as they are).
 */
final class DemoSchema {
  static final OutboxTable TABLE = OutboxTable.parse("outbox");

  private final DataSource dataSource;
  private final Console console;

  DemoSchema(DataSource dataSource, Console console) {
    this.dataSource = dataSource;
    this.console = console;
  }

  /** Returns the message id of a legacy row (one without an instance key), if there is one. */
  Optional<String> prepare() {
    SchemaMigrator migrator = new SchemaMigrator(dataSource, TABLE);
    Optional<String> version = migrator.currentVersion();
    if (version.isPresent()) {
      int applied = migrator.migrate();
      console.step(
          "Schema",
          "outbox table already at V"
              + version.get()
              + (applied > 0 ? ", " + applied + " newer migration(s) applied" : "")
              + "; no new legacy row written");
      return existingLegacyRow();
    }
    migrator.migrateTo("1");
    console.step("Schema", "V1 applied (outbox table, before instance keys existed)");
    String legacy = insertLegacyRow();
    console.detail("legacy row written with instance_key NULL, as rows from before V2 are");
    migrator.migrate();
    console.step(
        "Schema",
        "migrated to V"
            + SchemaMigrator.CURRENT_VERSION
            + " (from V2 on, every new row must name its instance key; older rows keep none)");
    return Optional.of(legacy);
  }

  private String insertLegacyRow() {
    String sql =
        "INSERT INTO "
            + TABLE.qualified()
            + " (aggregate_type, aggregate_id, event_type, payload) VALUES (?, ?, ?, ?)"
            + " RETURNING message_id";
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, "order");
      ps.setString(2, "order-0999");
      ps.setString(3, "OrderPlaced");
      ps.setBytes(
          4, "{\"orderId\":\"order-0999\",\"legacy\":true}".getBytes(StandardCharsets.UTF_8));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    } catch (SQLException e) {
      throw new StackException("could not write the legacy row: " + e.getMessage(), e);
    }
  }

  private Optional<String> existingLegacyRow() {
    String sql =
        "SELECT message_id FROM "
            + TABLE.qualified()
            + " WHERE instance_key IS NULL ORDER BY seq LIMIT 1";
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
    } catch (SQLException e) {
      throw new StackException("could not read the outbox table: " + e.getMessage(), e);
    }
  }
}
