package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.cli.ConnectionOptions;
import dev.outboxrelay.cli.ConnectionSettings;
import dev.outboxrelay.cli.Database;
import dev.outboxrelay.cli.OutboxRelayCli;
import dev.outboxrelay.cli.TableOption;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * A command that connects to the database. Every option is checked before connecting, so a usage
 * error never opens a connection.
 */
abstract class DatabaseCommand implements Callable<Integer> {
  @ParentCommand OutboxRelayCli root;

  @Spec CommandSpec spec;

  @Mixin ConnectionOptions connection;

  @Mixin TableOption tableOption;

  @Override
  public final Integer call() {
    OutboxTable table = tableOption.table();
    ColumnMapping columns = columns();
    validate();
    ConnectionSettings settings = connection.resolve(root.env());
    try (Database database = open(settings, table, columns)) {
      return run(database);
    }
  }

  /** A failure to connect is reported as this command's. */
  private Database open(ConnectionSettings settings, OutboxTable table, ColumnMapping columns) {
    try {
      return Database.open(settings, table, columns, sessionSetup());
    } catch (OutboxStoreException e) {
      throw CliException.database(spec.name() + " could not connect", e);
    }
  }

  /** The columns holding the message's fields: the relay's own, unless the command takes them. */
  ColumnMapping columns() {
    return ColumnMapping.RELAY;
  }

  /** A statement each of the command's connections runs first, or null. */
  String sessionSetup() {
    return null;
  }

  /** Checks this command's own options; throws a usage {@link dev.outboxrelay.cli.CliException}. */
  void validate() {}

  abstract int run(Database database);

  PrintWriter out() {
    return spec.commandLine().getOut();
  }

  PrintWriter err() {
    return spec.commandLine().getErr();
  }
}
