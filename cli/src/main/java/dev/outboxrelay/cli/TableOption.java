package dev.outboxrelay.cli;

import dev.outboxrelay.store.postgres.OutboxTable;
import picocli.CommandLine.Option;

/** Which outbox table: validated by {@link OutboxTable}, the only way a name reaches SQL. */
public final class TableOption {
  @Option(
      names = "--table",
      paramLabel = "TABLE",
      defaultValue = OutboxTable.DEFAULT_NAME,
      description = "Outbox table, as table or schema.table. Default: ${DEFAULT-VALUE}.")
  String table;

  public OutboxTable table() {
    try {
      return OutboxTable.parse(table);
    } catch (IllegalArgumentException e) {
      throw CliException.usage("--table: " + e.getMessage());
    }
  }
}
