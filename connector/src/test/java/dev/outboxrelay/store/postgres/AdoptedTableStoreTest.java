package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.ManualClock;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreContract;
import dev.outboxrelay.store.memory.InMemoryOutboxStore.RowState;
import dev.outboxrelay.testing.Postgres;
import dev.outboxrelay.writer.EnqueueResult;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/**
 * The store contract on a Debezium-style outbox table adopted in place ({@link DebeziumAdoption}),
 * read through a {@link ColumnMapping}: every claim, fence and outcome holds there exactly as on
 * the relay's own table. The ids here are free text, so the id column is a varchar and the payload
 * a text column (Debezium's documentation uses uuid and jsonb, which {@code DebeziumSwitchTest}
 * covers end to end).
 */
class AdoptedTableStoreTest extends OutboxStoreContract {
  static final OutboxTable TABLE = OutboxTable.parse("events");
  static final ColumnMapping COLUMNS =
      new ColumnMapping("id", "aggregatetype", "aggregateid", "type", "payload", List.of());
  static HikariDataSource dataSource;

  @BeforeAll
  static void database() throws SQLException {
    dataSource = Postgres.pool(Postgres.freshDatabase("adopted"), 8);
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE events (id varchar(255) NOT NULL, aggregatetype varchar(255) NOT NULL,"
              + " aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload text)");
      for (String statement : new DebeziumAdoption(TABLE, EU, COLUMNS, List.of()).statements()) {
        s.execute(statement);
      }
    }
  }

  @AfterAll
  static void closePool() {
    dataSource.close();
  }

  @BeforeEach
  void emptyTable() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("TRUNCATE events, events_published RESTART IDENTITY");
    }
  }

  @Override
  protected OutboxStore newStore(ManualClock clock) {
    return new PostgresOutboxStore(dataSource, TABLE, COLUMNS, clock, null);
  }

  /**
   * As an application writes the adopted table: its own columns, plus the instance key where it is
   * not the column default, and the optional relay columns the contract uses.
   */
  @Override
  protected EnqueueResult enqueue(String instanceKey, OutboxMessage message) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO events (id, aggregatetype, aggregateid, type, payload, instance_key,"
                    + " topic, headers, correlation_id, deliver_before)"
                    + " VALUES (?, ?, ?, ?, ?, ?, ?, CAST(? AS jsonb), ?, ?)"
                    + " ON CONFLICT ((id::text)) WHERE instance_key IS NOT NULL DO NOTHING")) {
      ps.setString(1, message.messageId());
      ps.setString(2, message.aggregateType());
      ps.setString(3, message.aggregateId());
      ps.setString(4, message.eventType());
      byte[] payload = message.payload();
      ps.setString(5, payload == null ? null : new String(payload, StandardCharsets.UTF_8));
      ps.setString(6, instanceKey);
      ps.setString(7, message.topic());
      ps.setString(8, message.headersJson());
      ps.setString(9, message.correlationId());
      ps.setObject(
          10,
          message.deliverBefore() == null
              ? null
              : OffsetDateTime.ofInstant(message.deliverBefore(), ZoneOffset.UTC));
      return ps.executeUpdate() == 1 ? EnqueueResult.ENQUEUED : EnqueueResult.DUPLICATE;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A row from before the adoption: no instance key, no seq. */
  @Override
  protected void insertLegacy(OutboxMessage message) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("ALTER TABLE events DROP CONSTRAINT events_instance_key_required");
      }
      try (PreparedStatement ps =
          c.prepareStatement(
              "INSERT INTO events (id, aggregatetype, aggregateid, type, payload, instance_key,"
                  + " seq) VALUES (?, ?, ?, ?, ?, NULL, NULL)")) {
        ps.setString(1, message.messageId());
        ps.setString(2, message.aggregateType());
        ps.setString(3, message.aggregateId());
        ps.setString(4, message.eventType());
        ps.setString(5, new String(message.payload(), StandardCharsets.UTF_8));
        ps.executeUpdate();
      }
      try (Statement s = c.createStatement()) {
        s.execute(
            "ALTER TABLE events ADD CONSTRAINT events_instance_key_required"
                + " CHECK (instance_key IS NOT NULL) NOT VALID");
      }
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  protected RowState state(String messageId) {
    return rows().state(messageId);
  }

  @Override
  protected void holdElsewhere(String messageId, Lease lease, Instant expiresAt) {
    rows().holdElsewhere(messageId, lease, expiresAt);
  }

  private ContractRows rows() {
    return new ContractRows(dataSource, "events", "id", "events_instance_key_required");
  }

  @Override
  protected void createWriter(String instanceKey) {
    PostgresOutboxWriter writer = new PostgresOutboxWriter(TABLE.tableName(), instanceKey);
    assertEquals(instanceKey, writer.instanceKey());
  }
}
