package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.cli.ExitCode;
import dev.outboxrelay.cli.TableOption;
import dev.outboxrelay.cli.operator.SchemaScript;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import java.util.concurrent.Callable;
import org.flywaydb.core.api.MigrationVersion;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
    name = "schema-sql",
    description = {
      "Prints the relay's migrations as plain SQL with the table filled in, for teams that run"
          + " their own migration tool. Needs no database. docs/schema.sql is this output for the"
          + " default table."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  outbox-relay-cli schema-sql > V100__outbox_relay.sql",
      "  outbox-relay-cli schema-sql --table app.outbox --after-version 2",
      "  outbox-relay-cli schema-sql --after-version 6 --to-version 7"
    })
public final class SchemaSqlCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin TableOption tableOption;

  @Option(
      names = "--after-version",
      paramLabel = "VERSION",
      description = "Only the migrations newer than VERSION: the upgrade from it.")
  String afterVersion;

  @Option(
      names = "--to-version",
      paramLabel = "VERSION",
      description =
          "Only the migrations up to VERSION: with --after-version, one step of an upgrade, to"
              + " apply each in its own transaction.")
  String toVersion;

  @Override
  public Integer call() {
    OutboxTable table = tableOption.table();
    MigrationVersion after = null;
    if (afterVersion != null) {
      after = SchemaVersions.parse("--after-version", afterVersion);
    }
    MigrationVersion to = null;
    if (toVersion != null) {
      to = SchemaVersions.parse("--to-version", toVersion);
      if (after != null && !to.isNewerThan(after.getVersion())) {
        throw CliException.usage("--to-version must be newer than --after-version");
      }
      if (!to.isAtLeast("1") || !to.getVersion().matches("\\d+")) {
        throw CliException.usage(
            "--to-version must be a version a migration has (1 to "
                + SchemaMigrator.CURRENT_VERSION
                + ")");
      }
    }
    spec.commandLine().getOut().print(SchemaScript.render(table, after, to));
    return ExitCode.OK;
  }
}
