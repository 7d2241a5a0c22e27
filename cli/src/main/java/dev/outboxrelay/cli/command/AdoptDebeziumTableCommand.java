package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.cli.ColumnOptions;
import dev.outboxrelay.cli.ExitCode;
import dev.outboxrelay.cli.InstanceKeyOption;
import dev.outboxrelay.cli.TableOption;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.DebeziumAdoption;
import dev.outboxrelay.store.postgres.OutboxColumns;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Prints the SQL that lets the relay take over a Debezium outbox table in place. Printed, not run:
 * it changes an application's table in production, so an operator reviews it, runs it with psql at
 * a chosen moment (its index builds take a while on a large table and must run outside a
 * transaction), or hands it to the team's migration tool.
 */
@Command(
    name = "adopt-debezium-table",
    description = {
      "Prints the SQL that adds the relay's columns, constraints, triggers and indexes to an"
          + " outbox table written for Debezium's outbox event router, without rewriting it or"
          + " changing a row: rows already there stay Debezium's, rows inserted afterwards get"
          + " the instance key and are the relay's. Needs no database."
          + " See docs/switching-from-debezium.md for the cut-over."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  outbox-relay-cli adopt-debezium-table --instance-key orders --grant-to order_service \\",
      "      > adopt.sql",
      "  outbox-relay-cli adopt-debezium-table --table app.outbox --instance-key orders \\",
      "      --id-column event_id --grant-to order_service"
    })
public final class AdoptDebeziumTableCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin TableOption tableOption;

  @Mixin InstanceKeyOption instanceKeyOption;

  @Option(
      names = "--id-column",
      paramLabel = "COLUMN",
      defaultValue = "id",
      description =
          "The event id column (EventRouter's table.field.event.id). Default: ${DEFAULT-VALUE}.")
  String idColumn;

  @Option(
      names = "--aggregate-id-column",
      paramLabel = "COLUMN",
      defaultValue = "aggregateid",
      description =
          "The aggregate id column (EventRouter's table.field.event.key). Default:"
              + " ${DEFAULT-VALUE}.")
  String aggregateIdColumn;

  @Option(
      names = "--grant-to",
      paramLabel = "ROLE",
      description =
          "A role that inserts rows and does not own the table: it needs USAGE on the new"
              + " sequence of seq. Repeatable.")
  List<String> grantees = new ArrayList<>();

  @Override
  public Integer call() {
    OutboxTable table = tableOption.table();
    String instanceKey = instanceKeyOption.instanceKey();
    ColumnMapping columns = columns();
    DebeziumAdoption adoption;
    try {
      adoption = new DebeziumAdoption(table, instanceKey, columns, grantees);
    } catch (IllegalArgumentException e) {
      throw CliException.usage("--grant-to: " + e.getMessage());
    }
    StringBuilder command =
        new StringBuilder("outbox-relay-cli adopt-debezium-table --table ")
            .append(table)
            .append(" --instance-key ")
            .append(shellWord(instanceKey))
            .append(" --id-column ")
            .append(columns.messageId())
            .append(" --aggregate-id-column ")
            .append(columns.aggregateId());
    grantees.forEach(role -> command.append(" --grant-to ").append(shellWord(role)));
    spec.commandLine().getOut().print(adoption.script(command.toString()));
    if (grantees.isEmpty()) {
      // The script gives seq a sequence's default: from its COMMIT on, an application role that
      // does not own the table cannot insert without USAGE on that sequence.
      spec.commandLine()
          .getErr()
          .println(
              "warning: no --grant-to: once the script commits, a role that inserts rows and does"
                  + " not own the table fails every insert (SQLState 42501) until it is granted"
                  + " USAGE on the sequence of seq; give each such role with --grant-to");
    }
    return ExitCode.OK;
  }

  /**
   * A value as a POSIX shell reads it back: as it is when plain, else single-quoted. Instance keys
   * and roles hold no line break (validated), so the script's comment line stays one line.
   */
  static String shellWord(String value) {
    if (value.matches("[A-Za-z0-9._/=:@+-]+")) {
      return value;
    }
    return "'" + value.replace("'", "'\\''") + "'";
  }

  /** Only the two columns the indexes name matter here; the others are the connector's. */
  private ColumnMapping columns() {
    ColumnOptions.requireColumn("--id-column", OutboxColumns.Row.MESSAGE_ID, idColumn);
    ColumnOptions.requireColumn(
        "--aggregate-id-column", OutboxColumns.Row.AGGREGATE_ID, aggregateIdColumn);
    return new ColumnMapping(
        idColumn,
        ColumnMapping.RELAY.aggregateType(),
        aggregateIdColumn,
        ColumnMapping.RELAY.eventType(),
        ColumnMapping.RELAY.payload(),
        List.of());
  }
}
