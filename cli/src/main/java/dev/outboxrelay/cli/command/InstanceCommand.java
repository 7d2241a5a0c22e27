package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.cli.ColumnOptions;
import dev.outboxrelay.cli.InstanceKeyOption;
import dev.outboxrelay.cli.Text;
import dev.outboxrelay.cli.operator.MessageIdNotUniqueException;
import dev.outboxrelay.store.postgres.ColumnMapping;
import java.util.function.Supplier;
import picocli.CommandLine.Mixin;

/** A data command: bound to exactly one instance key, checked before connecting. */
abstract class InstanceCommand extends DatabaseCommand {
  @Mixin InstanceKeyOption instanceKeyOption;

  @Mixin ColumnOptions columnOptions;

  /** The validated key; set before {@link #run}. */
  String instanceKey;

  @Override
  final void validate() {
    instanceKey = instanceKeyOption.instanceKey();
    validateOptions();
  }

  void validateOptions() {}

  /**
   * Runs {@code byMessageId}, a change or dry run by message id; a requested id that several rows
   * of the key hold is a usage error naming --column-message-id (the column's name can only be
   * judged by its rows, so the store tells it), and the id, as the reports print ids.
   */
  <T> T oneRowPerId(Supplier<T> byMessageId) {
    try {
      return byMessageId.get();
    } catch (MessageIdNotUniqueException e) {
      throw CliException.usage(
          "--column-message-id "
              + columns().messageId()
              + " does not identify one row: message id "
              + Text.safe(e.messageId())
              + " is held by "
              + e.rows()
              + " rows of instance key "
              + Text.safe(instanceKey)
              + "; nothing was changed: give the column that holds each row's own id (the"
              + " connector's column.message.id)");
    }
  }

  /** A table adopted from Debezium names its message fields with {@code --column-*}. */
  @Override
  ColumnMapping columns() {
    return columnOptions.columns();
  }
}
