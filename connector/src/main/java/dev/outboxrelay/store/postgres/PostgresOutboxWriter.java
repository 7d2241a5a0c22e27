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
  private final NamedSql insert;

  public PostgresOutboxWriter(OutboxTable table, String instanceKey) {
    this.instanceKey = InstanceKeys.requireValid(instanceKey);
    this.insert = new OutboxSql(table).insert;
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
    try (PreparedStatement ps = transaction.prepareStatement(insert.jdbc())) {
      OffsetDateTime deliverBefore =
          message.deliverBefore() == null
              ? null
              : OffsetDateTime.ofInstant(message.deliverBefore(), ZoneOffset.UTC);
      int inserted =
          insert
              .bind(ps)
              .setString("message_id", message.messageId())
              .setString("instance_key", instanceKey)
              .setString("aggregate_type", message.aggregateType())
              .setString("aggregate_id", message.aggregateId())
              .setString("event_type", message.eventType())
              .setString("topic", message.topic())
              .setBytes("payload", message.payload())
              .setString("headers", message.headersJson())
              .setString("correlation_id", message.correlationId())
              .setObject("deliver_before", deliverBefore, Types.TIMESTAMP_WITH_TIMEZONE)
              .executeUpdate();
      return inserted == 1 ? EnqueueResult.ENQUEUED : EnqueueResult.DUPLICATE;
    }
  }
}
