package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.InstanceKeyOption;
import picocli.CommandLine.Mixin;

/** A data command: bound to exactly one instance key, checked before connecting. */
abstract class InstanceCommand extends DatabaseCommand {
  @Mixin InstanceKeyOption instanceKeyOption;

  /** The validated key; set before {@link #run}. */
  String instanceKey;

  @Override
  final void validate() {
    instanceKey = instanceKeyOption.instanceKey();
    validateOptions();
  }

  void validateOptions() {}
}
