package dev.outboxrelay.store.postgres;

import dev.outboxrelay.store.EnqueueResult;
import dev.outboxrelay.store.InstanceKeys;
import dev.outboxrelay.store.OutboxMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;

/**
 * Appends messages in the caller's own transaction: pass the connection that carries the business
 * change, and the row commits or rolls back with it. Bound to one instance key, checked when the
 * writer is created, before any connection or row exists.
 */
public final class PostgresOutboxWriter {
  private final String instanceKey;
  private final String insertSql;

  public PostgresOutboxWriter(OutboxTable table, String instanceKey) {
    this.instanceKey = InstanceKeys.requireValid(instanceKey);
    this.insertSql = new OutboxSql(table).insert;
  }

  public String instanceKey() {
    return instanceKey;
  }

  /**
   * Inserts the message using {@code transaction}; the caller commits. Returns {@link
   * EnqueueResult#DUPLICATE} without writing when the message id already exists.
   *
   * @throws SQLException as the driver raised it, so the caller's transaction handling applies
   */
  public EnqueueResult enqueue(Connection transaction, OutboxMessage message) throws SQLException {
    try (PreparedStatement ps = transaction.prepareStatement(insertSql)) {
      ps.setString(1, message.messageId());
      ps.setString(2, instanceKey);
      ps.setString(3, message.aggregateType());
      ps.setString(4, message.aggregateId());
      ps.setString(5, message.eventType());
      ps.setString(6, message.topic());
      ps.setBytes(7, message.payload());
      ps.setString(8, message.headersJson());
      ps.setString(9, message.correlationId());
      if (message.deliverBefore() == null) {
        ps.setNull(10, Types.TIMESTAMP_WITH_TIMEZONE);
      } else {
        ps.setObject(10, OffsetDateTime.ofInstant(message.deliverBefore(), ZoneOffset.UTC));
      }
      return ps.executeUpdate() == 1 ? EnqueueResult.ENQUEUED : EnqueueResult.DUPLICATE;
    }
  }
}
