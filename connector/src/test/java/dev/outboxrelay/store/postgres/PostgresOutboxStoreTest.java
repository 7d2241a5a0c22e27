package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.ManualClock;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreContract;
import dev.outboxrelay.store.memory.InMemoryOutboxStore.RowState;
import dev.outboxrelay.testing.Postgres;
import dev.outboxrelay.writer.EnqueueResult;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/** The store contract against a real PostgreSQL: one database for the class, truncated per test. */
class PostgresOutboxStoreTest extends OutboxStoreContract {
  static final OutboxTable TABLE = OutboxTable.parse("outbox");
  static HikariDataSource dataSource;
  private PostgresOutboxWriter euWriter;

  @BeforeAll
  static void database() {
    dataSource = Postgres.pool(Postgres.freshDatabase("store"), 8);
    new SchemaMigrator(dataSource, TABLE).migrate();
  }

  @AfterAll
  static void closePool() {
    dataSource.close();
  }

  @BeforeEach
  void emptyTable() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("TRUNCATE outbox RESTART IDENTITY");
    }
  }

  @Override
  protected OutboxStore newStore(ManualClock clock) {
    return new PostgresOutboxStore(dataSource, TABLE, clock, null);
  }

  @Override
  protected EnqueueResult enqueue(String instanceKey, OutboxMessage message) {
    PostgresOutboxWriter writer = new PostgresOutboxWriter(TABLE.tableName(), instanceKey);
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      EnqueueResult result = writer.enqueue(c, message);
      c.commit();
      return result;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  protected void insertLegacy(OutboxMessage message) {
    // Legacy rows predate V2's ownership check; replica mode skips triggers and NOT VALID checks
    // are still enforced, so drop to a raw insert with the check briefly bypassed.
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("ALTER TABLE outbox DROP CONSTRAINT outbox_instance_key_required");
      }
      try (PreparedStatement ps =
          c.prepareStatement(
              "INSERT INTO outbox (message_id, aggregate_type, aggregate_id, event_type, payload)"
                  + " VALUES (?, ?, ?, ?, ?)")) {
        ps.setString(1, message.messageId());
        ps.setString(2, message.aggregateType());
        ps.setString(3, message.aggregateId());
        ps.setString(4, message.eventType());
        ps.setBytes(5, message.payload());
        ps.executeUpdate();
      }
      try (Statement s = c.createStatement()) {
        s.execute(
            "ALTER TABLE outbox ADD CONSTRAINT outbox_instance_key_required"
                + " CHECK (instance_key IS NOT NULL) NOT VALID");
      }
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  protected RowState state(String messageId) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT message_id, instance_key, status, attempts, abandoned_claims,"
                    + " next_attempt_at, lease_owner, lease_token, lease_expires_at,"
                    + " last_failure_code, kafka_topic, kafka_partition, kafka_offset"
                    + " FROM outbox WHERE message_id = ?")) {
      ps.setString(1, messageId);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        String topic = rs.getString("kafka_topic");
        return new RowState(
            rs.getString("message_id"),
            rs.getString("instance_key"),
            MessageStatus.valueOf(rs.getString("status")),
            rs.getInt("attempts"),
            rs.getInt("abandoned_claims"),
            instant(rs.getTimestamp("next_attempt_at")),
            rs.getString("lease_owner"),
            rs.getLong("lease_token"),
            instant(rs.getTimestamp("lease_expires_at")),
            rs.getString("last_failure_code"),
            topic == null
                ? null
                : new KafkaCoordinates(
                    topic, rs.getInt("kafka_partition"), rs.getLong("kafka_offset")));
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Instant instant(Timestamp ts) {
    return ts == null ? null : ts.toInstant();
  }

  @Override
  protected void holdElsewhere(String messageId, Lease lease, Instant expiresAt) {
    // A legacy row can only be held if it was claimed before V2; the check is bypassed as above.
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("ALTER TABLE outbox DROP CONSTRAINT outbox_instance_key_required");
      }
      try (PreparedStatement ps =
          c.prepareStatement(
              "UPDATE outbox SET status = 'IN_FLIGHT', lease_owner = ?, lease_token = ?,"
                  + " lease_expires_at = ? WHERE message_id = ?")) {
        ps.setString(1, lease.owner());
        ps.setLong(2, lease.token());
        ps.setObject(3, OffsetDateTime.ofInstant(expiresAt, ZoneOffset.UTC));
        ps.setString(4, messageId);
        assertEquals(1, ps.executeUpdate());
      }
      try (Statement s = c.createStatement()) {
        s.execute(
            "ALTER TABLE outbox ADD CONSTRAINT outbox_instance_key_required"
                + " CHECK (instance_key IS NOT NULL) NOT VALID");
      }
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  protected void createWriter(String instanceKey) {
    euWriter = new PostgresOutboxWriter(TABLE.tableName(), instanceKey);
    assertEquals(instanceKey, euWriter.instanceKey());
  }
}
