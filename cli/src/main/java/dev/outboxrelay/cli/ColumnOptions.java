package dev.outboxrelay.cli;

import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.OutboxColumns;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * Which columns hold the message's fields, for a table the application writes under other names (a
 * Debezium outbox table adopted with {@code adopt-debezium-table}): the connector's {@code
 * column.*} settings, with the same defaults.
 */
public final class ColumnOptions {
  @Option(
      names = "--column-message-id",
      paramLabel = "COLUMN",
      defaultValue = "message_id",
      description =
          "The message id column (connector: column.message.id; Debezium: id). It must hold one"
              + " id per row: a change by an id that several rows hold is refused.")
  String messageId;

  @Option(
      names = "--column-aggregate-type",
      paramLabel = "COLUMN",
      defaultValue = "aggregate_type",
      description = "The aggregate type column (column.aggregate.type; Debezium: aggregatetype).")
  String aggregateType;

  @Option(
      names = "--column-aggregate-id",
      paramLabel = "COLUMN",
      defaultValue = "aggregate_id",
      description = "The aggregate id column (column.aggregate.id; Debezium: aggregateid).")
  String aggregateId;

  @Option(
      names = "--column-event-type",
      paramLabel = "COLUMN",
      defaultValue = "event_type",
      description = "The event type column (column.event.type; Debezium: type).")
  String eventType;

  @Option(
      names = "--column-payload",
      paramLabel = "COLUMN",
      defaultValue = "payload",
      description = "The payload column (column.payload; Debezium: payload).")
  String payload;

  public ColumnMapping columns() {
    Object[][] options = {
      {"--column-message-id", OutboxColumns.Row.MESSAGE_ID, messageId},
      {"--column-aggregate-type", OutboxColumns.Row.AGGREGATE_TYPE, aggregateType},
      {"--column-aggregate-id", OutboxColumns.Row.AGGREGATE_ID, aggregateId},
      {"--column-event-type", OutboxColumns.Row.EVENT_TYPE, eventType},
      {"--column-payload", OutboxColumns.Row.PAYLOAD, payload}
    };
    for (Object[] option : options) {
      requireColumn((String) option[0], (OutboxColumns.Row) option[1], (String) option[2]);
    }
    String shared = ColumnMapping.messageIdSharedWith(messageId, aggregateType, eventType, payload);
    if (shared != null) {
      throw CliException.usage("--column-message-id " + shared);
    }
    return new ColumnMapping(messageId, aggregateType, aggregateId, eventType, payload, List.of());
  }

  /**
   * A usage error naming {@code option} unless {@code column} may hold the message's {@code field}.
   */
  public static void requireColumn(String option, OutboxColumns.Row field, String column) {
    if (!ColumnMapping.isColumnName(column)) {
      throw CliException.usage(option + " must be " + ColumnMapping.COLUMN_RULE);
    }
    String misuse = ColumnMapping.misuse(field, column);
    if (misuse != null) {
      throw CliException.usage(option + " " + misuse);
    }
  }
}
