package dev.outboxrelay.writer;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Objects;

/**
 * Appends messages in the caller's own transaction: pass the connection that carries the business
 * change, and the row commits or rolls back with it. The writer never commits, rolls back, changes
 * auto-commit or closes the connection; that is the caller's (or its framework's) business.
 *
 * <p>Bound to one table and one instance key, both checked when the writer is created, before any
 * connection or row exists. Immutable and thread-safe: create one per table and instance key and
 * share it.
 *
 * <p>The table must be at schema version 9 or later: the insert reads the table's published log
 * ({@link OutboxTableName#publishedLogQualified()}), which that version creates. Upgrade the table
 * (the connector of the same version migrates it on start, or {@code outbox-relay-cli migrate} or
 * {@code schema-sql}) before the applications that write with this writer.
 */
public final class PostgresOutboxWriter {
  private final OutboxTableName table;
  private final String instanceKey;
  private final OutboxInsert insert;

  /**
   * A writer for {@code table} ({@code table} or {@code schema.table}, see {@link
   * OutboxTableName#parse}) and the relay that owns its rows, {@code instanceKey}.
   *
   * @throws IllegalArgumentException if the table name or the instance key is not valid
   */
  public PostgresOutboxWriter(String table, String instanceKey) {
    this(OutboxTableName.parse(table), instanceKey);
  }

  /**
   * A writer for {@code table} and the relay that owns its rows, {@code instanceKey}.
   *
   * @throws IllegalArgumentException if the instance key is not valid (see {@link InstanceKeys})
   */
  public PostgresOutboxWriter(OutboxTableName table, String instanceKey) {
    this.instanceKey = InstanceKeys.requireValid(instanceKey);
    this.table = Objects.requireNonNull(table, "table");
    this.insert = new OutboxInsert(table);
  }

  public OutboxTableName table() {
    return table;
  }

  public String instanceKey() {
    return instanceKey;
  }

  /**
   * Inserts the message using {@code transaction}; the caller commits. Returns {@link
   * EnqueueResult#DUPLICATE} without writing when the message id already exists for this instance
   * key: in the outbox (awaiting delivery or parked) or in its published log, that is until
   * retention deletes the published entry. A retry that races the publish of the very same message
   * (the publish commits while the insert runs) can still insert it again; that duplicate is
   * delivered at least once, like any other.
   *
   * @throws MessageIdTakenException if the message id is used by a row of another instance key, or
   *     a legacy row without one: message ids are unique across the table
   * @throws SQLException as the driver raised it, so the caller's transaction handling applies
   */
  public EnqueueResult enqueue(Connection transaction, OutboxMessage message) throws SQLException {
    Objects.requireNonNull(transaction, "transaction");
    Objects.requireNonNull(message, "message");
    try (PreparedStatement ps = transaction.prepareStatement(insert.sql())) {
      OutboxInsert.bind(ps, instanceKey, message);
      if (ps.executeUpdate() == 1) {
        return EnqueueResult.ENQUEUED;
      }
    }
    if (takenElsewhere(transaction, message.messageId())) {
      throw new MessageIdTakenException(message.messageId());
    }
    return EnqueueResult.DUPLICATE;
  }

  /**
   * Whether the id that stopped the insert belongs to another instance key's row (or a legacy row):
   * that is no retry of this message, and reporting it DUPLICATE would lose the message.
   */
  private boolean takenElsewhere(Connection transaction, String messageId) throws SQLException {
    try (PreparedStatement ps = transaction.prepareStatement(insert.takenElsewhereSql())) {
      ps.setString(1, messageId);
      ps.setString(2, instanceKey);
      ps.setString(3, messageId);
      ps.setString(4, instanceKey);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  @Override
  public String toString() {
    return "PostgresOutboxWriter[table=" + table + ", instanceKey=" + instanceKey + "]";
  }
}
