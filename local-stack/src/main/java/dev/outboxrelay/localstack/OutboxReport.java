package dev.outboxrelay.localstack;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;

/** Reads outbox rows back: what the relay did to each, straight from the table. */
final class OutboxReport {
  record Row(
      long seq,
      String messageId,
      String instanceKey,
      String aggregateId,
      String eventType,
      String status,
      int attempts,
      String leaseOwner,
      long leaseToken,
      String kafkaTopic,
      Integer kafkaPartition,
      Long kafkaOffset) {

    /** Never claimed, changed or charged by any relay. */
    boolean untouched() {
      return "PENDING".equals(status) && attempts == 0 && leaseOwner == null && leaseToken == 0;
    }

    String kafka() {
      return kafkaTopic == null ? "-" : kafkaTopic + "-" + kafkaPartition + "@" + kafkaOffset;
    }
  }

  private final DataSource dataSource;

  OutboxReport(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  List<Row> rows(List<String> messageIds) {
    String sql =
        "SELECT seq, message_id, instance_key, aggregate_id, event_type, status, attempts, lease_owner,"
            + " lease_token, kafka_topic, kafka_partition, kafka_offset FROM "
            + DemoSchema.TABLE.qualified()
            + " WHERE message_id = ANY (?) ORDER BY seq";
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      Array ids = c.createArrayOf("text", messageIds.toArray());
      ps.setArray(1, ids);
      List<Row> rows = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rows.add(
              new Row(
                  rs.getLong("seq"),
                  rs.getString("message_id"),
                  rs.getString("instance_key"),
                  rs.getString("aggregate_id"),
                  rs.getString("event_type"),
                  rs.getString("status"),
                  rs.getInt("attempts"),
                  rs.getString("lease_owner"),
                  rs.getLong("lease_token"),
                  rs.getString("kafka_topic"),
                  (Integer) rs.getObject("kafka_partition"),
                  (Long) rs.getObject("kafka_offset")));
        }
      }
      return rows;
    } catch (SQLException e) {
      throw new StackException("could not read the outbox table: " + e.getMessage(), e);
    }
  }

  /** Waits until every row of {@code messageIds} is PUBLISHED (the relay saw Kafka's ack). */
  void awaitPublished(List<String> messageIds, Duration timeout) {
    Waiter.until(
        messageIds.size() + " rows turning PUBLISHED",
        timeout,
        () -> rows(messageIds).stream().allMatch(r -> "PUBLISHED".equals(r.status())),
        () -> {});
  }

  static List<String> table(List<Row> rows) {
    List<String> lines = new ArrayList<>();
    String format = "%5s  %-12s  %-11s  %-13s  %-10s  %8s  %s";
    lines.add(
        String.format(
            Locale.ROOT,
            format,
            "seq",
            "instance_key",
            "aggregate",
            "event_type",
            "status",
            "attempts",
            "kafka (topic-partition@offset)"));
    for (Row r : rows) {
      lines.add(
          String.format(
              Locale.ROOT,
              format,
              r.seq(),
              r.instanceKey() == null ? "NULL" : r.instanceKey(),
              r.aggregateId(),
              r.eventType(),
              r.status(),
              r.attempts(),
              r.kafka()));
    }
    return lines;
  }
}
