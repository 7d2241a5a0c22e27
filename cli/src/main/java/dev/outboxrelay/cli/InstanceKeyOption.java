package dev.outboxrelay.cli;

import dev.outboxrelay.writer.InstanceKeys;
import picocli.CommandLine.Option;

/**
 * The one instance key a data command works on. Rows of any other key, and legacy rows without a
 * key, are never read, changed or counted.
 */
public final class InstanceKeyOption {
  @Option(
      names = "--instance-key",
      required = true,
      paramLabel = "KEY",
      description = "The instance key whose rows to work on; exactly one.")
  String instanceKey;

  public String instanceKey() {
    if (instanceKey != null && instanceKey.contains(",")) {
      // The connector's instance.keys is a comma-separated list: such a key is never relayed.
      throw CliException.usage("--instance-key takes exactly one key; run once per key");
    }
    try {
      return InstanceKeys.requireValid(instanceKey);
    } catch (IllegalArgumentException e) {
      throw CliException.usage("--instance-key: " + e.getMessage());
    }
  }
}
