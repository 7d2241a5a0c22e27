package dev.outboxrelay.testing;

import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.DebeziumAdoption;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * An outbox table exactly as Debezium's outbox event router documentation creates it, written to as
 * such an application does (plain INSERTs of its five columns), and adopted by the relay with the
 * script of {@code outbox-relay-cli adopt-debezium-table}.
 */
public final class DebeziumOutboxTable {
  /** The columns as Debezium's documentation lists them ({@code \d outbox}). */
  public static final String CREATE =
      """
      CREATE TABLE outbox (
          id            uuid                   NOT NULL,
          aggregatetype character varying(255) NOT NULL,
          aggregateid   character varying(255) NOT NULL,
          type          character varying(255) NOT NULL,
          payload       jsonb
      )""";

  /** Debezium's column names, as the relay's {@code column.*} settings name them. */
  public static final ColumnMapping COLUMNS =
      new ColumnMapping("id", "aggregatetype", "aggregateid", "type", "payload", List.of());

  /** The relay's settings for this table: the {@code column.*} mapping. */
  public static final Map<String, String> COLUMN_SETTINGS =
      Map.of(
          "column.message.id", "id",
          "column.aggregate.type", "aggregatetype",
          "column.aggregate.id", "aggregateid",
          "column.event.type", "type",
          "column.payload", "payload");

  private final OutboxDb db;

  public DebeziumOutboxTable(OutboxDb db) throws SQLException {
    this.db = db;
    try (Connection c = db.connection();
        Statement s = c.createStatement()) {
      s.execute(CREATE);
    }
  }

  /** Inserts one event as the application does, in its own transaction; returns its id. */
  public UUID insert(String aggregateType, String aggregateId, String type, String payloadJson)
      throws SQLException {
    UUID id = UUID.randomUUID();
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)"
                    + " VALUES (?, ?, ?, ?, CAST(? AS jsonb))")) {
      ps.setObject(1, id);
      ps.setString(2, aggregateType);
      ps.setString(3, aggregateId);
      ps.setString(4, type);
      ps.setString(5, payloadJson);
      ps.executeUpdate();
    }
    return id;
  }

  /** Runs the adoption script, statement by statement, as psql would. */
  public void adopt(String instanceKey) throws SQLException {
    DebeziumAdoption adoption =
        new DebeziumAdoption(OutboxTable.parse("outbox"), instanceKey, COLUMNS, List.of());
    try (Connection c = db.connection();
        Statement s = c.createStatement()) {
      for (String statement : adoption.statements()) {
        s.execute(statement);
      }
    }
  }

  /** One row's columns as Debezium read them (text form, as pgoutput sends them). */
  public record DebeziumRow(
      String id, String aggregateType, String aggregateId, String type, String payload) {}

  public DebeziumRow row(UUID id) throws SQLException {
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT id::text, aggregatetype, aggregateid, type, payload::text"
                    + " FROM outbox WHERE id = ?")) {
      ps.setObject(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new AssertionError("no row " + id);
        }
        return new DebeziumRow(
            rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5));
      }
    }
  }

  /** How many rows of {@code instanceKey} (null: legacy rows) have {@code status}. */
  public long count(String instanceKey, String status) throws SQLException {
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT (SELECT count(*) FROM outbox"
                    + " WHERE instance_key IS NOT DISTINCT FROM ? AND status = ?)"
                    + " + (SELECT count(*) FROM outbox_published"
                    + " WHERE instance_key = ? AND ? = 'PUBLISHED')")) {
      // Published rows of the relay are in the published log (schema version 9).
      ps.setString(1, instanceKey);
      ps.setString(2, status);
      ps.setString(3, instanceKey);
      ps.setString(4, status);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
