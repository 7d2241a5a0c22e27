package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.ColumnOptions;
import dev.outboxrelay.cli.InstanceKeyOption;
import dev.outboxrelay.store.postgres.ColumnMapping;
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

  /** A table adopted from Debezium names its message fields with {@code --column-*}. */
  @Override
  ColumnMapping columns() {
    return columnOptions.columns();
  }
}
