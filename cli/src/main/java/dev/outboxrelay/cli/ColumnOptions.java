package dev.outboxrelay.cli;

import dev.outboxrelay.store.postgres.ColumnMapping;
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
      description = "The message id column (connector: column.message.id; Debezium: id).")
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
    String[][] options = {
      {"--column-message-id", messageId},
      {"--column-aggregate-type", aggregateType},
      {"--column-aggregate-id", aggregateId},
      {"--column-event-type", eventType},
      {"--column-payload", payload}
    };
    for (String[] option : options) {
      if (!ColumnMapping.isColumnName(option[1])) {
        throw CliException.usage(option[0] + " must be " + ColumnMapping.COLUMN_RULE);
      }
    }
    return new ColumnMapping(messageId, aggregateType, aggregateId, eventType, payload, List.of());
  }
}
