package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SqlStates;
import dev.outboxrelay.writer.InstanceKeys;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The operator commands' reads and their one write (requeue), each statement in autocommit, each
 * bound to one instance key. Failures leave as {@link dev.outboxrelay.store.OutboxStoreException},
 * classified by SQLState and without driver text. Counts, lag and the retention delete are the
 * relay store's own (see {@code PostgresOutboxStore}).
 */
public final class OperatorStore {
  private final DataSource dataSource;
  private final OutboxTable table;
  private final OperatorSql sql;

  public OperatorStore(DataSource dataSource, OutboxTable table) {
    this.dataSource = dataSource;
    this.table = table;
    this.sql = new OperatorSql(table);
  }

  /** The oldest row of the key with this status (by insertion order), if any. */
  public Optional<OldestRow> oldest(String instanceKey, MessageStatus status) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.oldestWithStatus)) {
      ps.setString(1, InstanceKeys.requireValid(instanceKey));
      ps.setString(2, status.name());
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        return Optional.of(
            new OldestRow(
                rs.getString("message_id"),
                rs.getString("last_failure_code"),
                Duration.ofMillis(rs.getLong("age_ms"))));
      }
    } catch (SQLException e) {
      throw SqlStates.classify(e, "oldest-row");
    }
  }

  /** Up to {@code limit} rows of the key with this status and a seq above {@code afterSeq}. */
  public List<RowView> list(String instanceKey, MessageStatus status, long afterSeq, int limit) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.list)) {
      ps.setString(1, InstanceKeys.requireValid(instanceKey));
      ps.setString(2, status.name());
      ps.setLong(3, afterSeq);
      ps.setInt(4, limit);
      List<RowView> rows = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rows.add(row(rs, false));
        }
      }
      return rows;
    } catch (SQLException e) {
      throw SqlStates.classify(e, "list");
    }
  }

  /**
   * The row with this message id, only if it belongs to the key. Its payload and headers are read
   * only when {@code withPayload}; otherwise they never leave the database.
   */
  public Optional<RowView> inspect(String instanceKey, String messageId, boolean withPayload) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(withPayload ? sql.inspectWithPayload : sql.inspect)) {
      ps.setString(1, InstanceKeys.requireValid(instanceKey));
      ps.setString(2, messageId);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(row(rs, withPayload)) : Optional.empty();
      }
    } catch (SQLException e) {
      throw SqlStates.classify(e, "inspect");
    }
  }

  /** How many rows {@link #requeue} would requeue now. */
  public long countRequeueable(RequeueRequest request) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.countRequeueable.get(request.selector()))) {
      bindRequeueSelection(c, ps, request, 1);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw SqlStates.classify(e, "count-requeueable");
    }
  }

  /**
   * Sets the chosen rows that are still parked back to PENDING, due now, with a fresh attempt
   * budget and a bumped lease token. By message id: one statement, so all or none. By correlation
   * id or all: in batches of at most {@code batchSize} rows in insertion order, each its own
   * transaction, over the rows inserted before the requeue began; if it is interrupted, the batches
   * done stay done and running it again continues.
   */
  public RequeueReport requeue(RequeueRequest request, int batchSize) {
    if (batchSize < 1) {
      throw new IllegalArgumentException("batchSize must be positive");
    }
    if (request.selector() == RequeueRequest.Selector.MESSAGE_IDS) {
      return requeueMessageIds(request);
    }
    try (Connection c = dataSource.getConnection()) {
      long upToSeq;
      try (PreparedStatement ps = c.prepareStatement(sql.lastSeq);
          ResultSet rs = ps.executeQuery()) {
        rs.next();
        upToSeq = rs.getLong(1);
      }
      long requeued = 0;
      long afterSeq = 0;
      try (PreparedStatement ps = c.prepareStatement(sql.requeueBatch.get(request.selector()))) {
        while (true) {
          int next = bindRequeueSelection(c, ps, request, 1);
          ps.setLong(next++, afterSeq);
          ps.setLong(next++, upToSeq);
          ps.setInt(next++, batchSize);
          bindRequeueSelection(c, ps, request, next);
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            long last = rs.getLong("last_seq");
            if (rs.wasNull()) {
              return new RequeueReport(requeued, List.of());
            }
            requeued += rs.getLong("requeued");
            afterSeq = last;
          }
        }
      }
    } catch (SQLException e) {
      throw SqlStates.classify(e, "requeue");
    }
  }

  private RequeueReport requeueMessageIds(RequeueRequest request) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.requeueMessageIds)) {
      String key = InstanceKeys.requireValid(request.instanceKey());
      ps.setArray(1, c.createArrayOf("text", request.messageIds().toArray()));
      ps.setString(2, key);
      ps.setArray(3, c.createArrayOf("text", request.statusNames()));
      ps.setString(4, key);
      long requeued = 0;
      List<RequeueReport.Skipped> skipped = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          if (rs.getBoolean("requeued")) {
            requeued++;
          } else {
            skipped.add(skipped(request, rs));
          }
        }
      }
      return new RequeueReport(requeued, skipped);
    } catch (SQLException e) {
      throw SqlStates.classify(e, "requeue");
    }
  }

  private static RequeueReport.Skipped skipped(RequeueRequest request, ResultSet rs)
      throws SQLException {
    String messageId = rs.getString("message_id");
    String status = rs.getString("status");
    if (status == null) {
      return new RequeueReport.Skipped(messageId, RequeueReport.Reason.NOT_FOUND, null);
    }
    if (!rs.getBoolean("own")) {
      // Nothing about another instance's row is shown, not even its status.
      return new RequeueReport.Skipped(messageId, RequeueReport.Reason.OTHER_INSTANCE, null);
    }
    MessageStatus current = MessageStatus.valueOf(status);
    RequeueReport.Reason reason =
        RequeueRequest.PARKED.contains(current)
            ? RequeueReport.Reason.STATUS_NOT_SELECTED
            : RequeueReport.Reason.NOT_PARKED;
    return new RequeueReport.Skipped(messageId, reason, current);
  }

  /** Binds the selection from parameter {@code first} on; returns the next parameter index. */
  private static int bindRequeueSelection(
      Connection c, PreparedStatement ps, RequeueRequest request, int first) throws SQLException {
    int i = first;
    ps.setString(i++, InstanceKeys.requireValid(request.instanceKey()));
    ps.setArray(i++, c.createArrayOf("text", request.statusNames()));
    switch (request.selector()) {
      case MESSAGE_IDS -> ps.setArray(i++, c.createArrayOf("text", request.messageIds().toArray()));
      case CORRELATION_ID -> ps.setString(i++, request.correlationId());
      case ALL -> {
        // Nothing further: every parked row of the key.
      }
    }
    return i;
  }

  /** How many PUBLISHED rows of the key were published before the cutoff. */
  public long countPurgeable(String instanceKey, Instant publishedBefore) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.countPurgeable)) {
      ps.setString(1, InstanceKeys.requireValid(instanceKey));
      ps.setObject(2, OffsetDateTime.ofInstant(publishedBefore, ZoneOffset.UTC));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw SqlStates.classify(e, "count-purgeable");
    }
  }

  /** True when the outbox table exists (whoever created it). */
  public boolean tableExists() {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.tableExists)) {
      ps.setString(1, table.qualified());
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    } catch (SQLException e) {
      throw SqlStates.classify(e, "table-exists");
    }
  }

  private static RowView row(ResultSet rs, boolean withPayload) throws SQLException {
    return new RowView(
        rs.getLong("seq"),
        rs.getString("message_id"),
        rs.getString("instance_key"),
        MessageStatus.valueOf(rs.getString("status")),
        rs.getString("aggregate_type"),
        rs.getString("aggregate_id"),
        rs.getString("event_type"),
        rs.getString("topic"),
        rs.getString("correlation_id"),
        instant(rs, "created_at"),
        instant(rs, "deliver_before"),
        rs.getInt("attempts"),
        rs.getInt("abandoned_claims"),
        rs.getBoolean("isolated"),
        instant(rs, "next_attempt_at"),
        rs.getString("lease_owner"),
        rs.getLong("lease_token"),
        instant(rs, "lease_expires_at"),
        rs.getString("last_failure_code"),
        instant(rs, "published_at"),
        rs.getString("kafka_topic"),
        rs.getObject("kafka_partition", Integer.class),
        rs.getObject("kafka_offset", Long.class),
        rs.getObject("payload_bytes", Integer.class),
        withPayload ? rs.getBytes("payload") : null,
        withPayload ? rs.getString("headers") : null);
  }

  private static Instant instant(ResultSet rs, String column) throws SQLException {
    OffsetDateTime value = rs.getObject(column, OffsetDateTime.class);
    return value == null ? null : value.toInstant();
  }
}
