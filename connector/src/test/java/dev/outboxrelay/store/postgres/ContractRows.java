package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.memory.InMemoryOutboxStore.RowState;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import javax.sql.DataSource;

/**
 * The store contract's look behind a PostgreSQL store's back, for the relay's own table and an
 * adopted one alike: a table name, the column that holds the message id, and the name of the NOT
 * VALID check that keeps instance keys required.
 */
record ContractRows(DataSource dataSource, String table, String idColumn, String keyCheck) {

  /**
   * The row's relay state as stored, or null when it does not exist: from the table, or, once
   * published, from the published log (schema version 9), where a row is PUBLISHED and holds no
   * lease.
   */
  RowState state(String messageId) {
    RowState row =
        read(
            "SELECT "
                + idColumn
                + "::text, instance_key, status, attempts, abandoned_claims,"
                + " next_attempt_at, lease_owner, lease_token, lease_expires_at,"
                + " last_failure_code, kafka_topic, kafka_partition, kafka_offset, seq,"
                + " lease_epoch, claim_batch, isolated FROM "
                + table
                + " WHERE "
                + idColumn
                + "::text = ?",
            messageId);
    if (row != null) {
      // Since schema version 9 publishing (and recovery's record of a covered row) moves the row
      // to the published log: a PUBLISHED row left in the table would be a regression.
      if (row.status() == MessageStatus.PUBLISHED) {
        throw new AssertionError("published row " + messageId + " still in the table");
      }
      return row;
    }
    return read(
        "SELECT message_id, instance_key, 'PUBLISHED' AS status, attempts, abandoned_claims,"
            + " NULL::timestamptz AS next_attempt_at, NULL AS lease_owner, lease_token,"
            + " NULL::timestamptz AS lease_expires_at, last_failure_code, kafka_topic,"
            + " kafka_partition, kafka_offset, seq, NULL::bigint AS lease_epoch,"
            + " NULL::bigint AS claim_batch, FALSE AS isolated FROM "
            + table
            + "_published WHERE message_id = ?",
        messageId);
  }

  private RowState read(String sql, String messageId) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, messageId);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        RowState row = row(rs);
        if (rs.next()) {
          throw new IllegalStateException("two rows for one message id");
        }
        return row;
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static RowState row(ResultSet rs) throws SQLException {
    String topic = rs.getString("kafka_topic");
    return new RowState(
        rs.getString(1),
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
            : new KafkaCoordinates(topic, rs.getInt("kafka_partition"), rs.getLong("kafka_offset")),
        rs.getLong("seq"),
        rs.getObject("lease_epoch", Long.class),
        rs.getObject("claim_batch", Long.class),
        rs.getBoolean("isolated"));
  }

  /** Sets the row's creation time; a legacy row's too, past the instance key check. */
  void backdate(String messageId, Instant createdAt) {
    updateBypassingKeyCheck(
        "UPDATE " + table + " SET created_at = ? WHERE " + idColumn + " = ?",
        OffsetDateTime.ofInstant(createdAt, ZoneOffset.UTC),
        messageId);
  }

  /**
   * Puts the row IN_FLIGHT under {@code lease}; a legacy row can only be held if it was claimed
   * before instance keys were required, so the check is bypassed for the update.
   */
  void holdElsewhere(String messageId, Lease lease, Instant expiresAt) {
    updateBypassingKeyCheck(
        "UPDATE "
            + table
            + " SET status = 'IN_FLIGHT', lease_owner = ?, lease_token = ?,"
            + " lease_expires_at = ? WHERE "
            + idColumn
            + " = ?",
        lease.owner(),
        lease.token(),
        OffsetDateTime.ofInstant(expiresAt, ZoneOffset.UTC),
        messageId);
  }

  /** Parks the row FAILED under the token and claim position, as another connector's task. */
  void parkElsewhere(String messageId, long token, long epoch, long batch, String reasonCode) {
    updateBypassingKeyCheck(
        "UPDATE "
            + table
            + " SET status = 'FAILED', lease_owner = NULL, lease_expires_at = NULL,"
            + " next_attempt_at = NULL, lease_token = ?, lease_epoch = ?, claim_batch = ?,"
            + " last_failure_code = ?, parked_at = now() WHERE "
            + idColumn
            + " = ?",
        token,
        epoch,
        batch,
        reasonCode,
        messageId);
  }

  /** Updates exactly one row, with the instance key check (which legacy rows fail) dropped. */
  private void updateBypassingKeyCheck(String update, Object... params) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("ALTER TABLE " + table + " DROP CONSTRAINT " + keyCheck);
      }
      try (PreparedStatement ps = c.prepareStatement(update)) {
        for (int i = 0; i < params.length; i++) {
          ps.setObject(i + 1, params[i]);
        }
        assertEquals(1, ps.executeUpdate());
      }
      try (Statement s = c.createStatement()) {
        s.execute(
            "ALTER TABLE "
                + table
                + " ADD CONSTRAINT "
                + keyCheck
                + " CHECK (instance_key IS NOT NULL) NOT VALID");
      }
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Instant instant(Timestamp ts) {
    return ts == null ? null : ts.toInstant();
  }
}
