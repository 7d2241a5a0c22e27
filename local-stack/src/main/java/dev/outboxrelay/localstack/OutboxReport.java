package dev.outboxrelay.localstack;

import static dev.outboxrelay.store.postgres.OutboxColumns.Row.AGGREGATE_ID;
import static dev.outboxrelay.store.postgres.OutboxColumns.Row.ATTEMPTS;
import static dev.outboxrelay.store.postgres.OutboxColumns.Row.EVENT_TYPE;
import static dev.outboxrelay.store.postgres.OutboxColumns.Row.INSTANCE_KEY;
import static dev.outboxrelay.store.postgres.OutboxColumns.Row.KAFKA_OFFSET;
import static dev.outboxrelay.store.postgres.OutboxColumns.Row.KAFKA_PARTITION;
import static dev.outboxrelay.store.postgres.OutboxColumns.Row.KAFKA_TOPIC;
import static dev.outboxrelay.store.postgres.OutboxColumns.Row.LEASE_OWNER;
import static dev.outboxrelay.store.postgres.OutboxColumns.Row.LEASE_TOKEN;
import static dev.outboxrelay.store.postgres.OutboxColumns.Row.MESSAGE_ID;
import static dev.outboxrelay.store.postgres.OutboxColumns.Row.SEQ;
import static dev.outboxrelay.store.postgres.OutboxColumns.Row.STATUS;

import dev.outboxrelay.store.postgres.NamedSql;
import dev.outboxrelay.store.postgres.OutboxColumns;
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

/**
 * Reads outbox rows back: what the relay did to each, straight from the table and its published
 * log, by the columns the operator tools read ({@link OutboxColumns.Row}). From schema version 9
 * publishing moves a row out of the table into the published log, so a published row is read from
 * there: status PUBLISHED, its attempts, lease token and Kafka coordinates, no lease owner.
 */
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

  /**
   * The demo's rows by message id, in insertion order: the columns {@link Row} shows, of the rows
   * in the table and of the published log's entries (the same labels, in the same order).
   */
  private static final NamedSql ROWS =
      NamedSql.parse(
          """
          SELECT {columns} FROM {table}
          WHERE message_id = ANY (:message_ids)
          UNION ALL
          SELECT seq, message_id, instance_key, aggregate_id, event_type,
            CAST('PUBLISHED' AS text) AS status, attempts, CAST(NULL AS text) AS lease_owner,
            lease_token, kafka_topic, kafka_partition, kafka_offset
          FROM {published}
          WHERE message_id = ANY (:message_ids)
          ORDER BY seq"""
              .replace(
                  "{columns}",
                  OutboxColumns.Row.select(
                      null,
                      List.of(
                          SEQ,
                          MESSAGE_ID,
                          INSTANCE_KEY,
                          AGGREGATE_ID,
                          EVENT_TYPE,
                          STATUS,
                          ATTEMPTS,
                          LEASE_OWNER,
                          LEASE_TOKEN,
                          KAFKA_TOPIC,
                          KAFKA_PARTITION,
                          KAFKA_OFFSET)))
              .replace("{table}", DemoSchema.TABLE.qualified())
              .replace("{published}", DemoSchema.TABLE.qualifiedPublishedLog()));

  private final DataSource dataSource;

  OutboxReport(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  List<Row> rows(List<String> messageIds) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(ROWS.jdbc())) {
      Array ids = c.createArrayOf("text", messageIds.toArray());
      List<Row> rows = new ArrayList<>();
      try (ResultSet rs = ROWS.bind(ps).setArray("message_ids", ids).executeQuery()) {
        while (rs.next()) {
          rows.add(
              new Row(
                  rs.getLong(SEQ.label),
                  rs.getString(MESSAGE_ID.label),
                  rs.getString(INSTANCE_KEY.label),
                  rs.getString(AGGREGATE_ID.label),
                  rs.getString(EVENT_TYPE.label),
                  rs.getString(STATUS.label),
                  rs.getInt(ATTEMPTS.label),
                  rs.getString(LEASE_OWNER.label),
                  rs.getLong(LEASE_TOKEN.label),
                  rs.getString(KAFKA_TOPIC.label),
                  rs.getObject(KAFKA_PARTITION.label, Integer.class),
                  rs.getObject(KAFKA_OFFSET.label, Long.class)));
        }
      }
      return rows;
    } catch (SQLException e) {
      throw new StackException(
          "could not read the outbox table and its published log: " + e.getMessage(), e);
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
