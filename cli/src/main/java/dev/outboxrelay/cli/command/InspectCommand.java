package dev.outboxrelay.cli.command;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.cli.Database;
import dev.outboxrelay.cli.ExitCode;
import dev.outboxrelay.cli.Text;
import dev.outboxrelay.cli.operator.RowView;
import java.io.PrintWriter;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(
    name = "inspect",
    description = {
      "One row of the instance key: relay state and routing fields. The payload and headers are"
          + " neither read nor shown unless --payload is given. A published message is found in"
          + " the published log (no payload or headers kept there).",
      "Exits with 3 when the instance key has no row with this message id."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  outbox-relay-cli inspect --instance-key orders MESSAGE_ID",
      "  outbox-relay-cli inspect --instance-key orders MESSAGE_ID --payload"
    })
public final class InspectCommand extends InstanceCommand {
  @Parameters(index = "0", paramLabel = "MESSAGE_ID", description = "The row's message id.")
  String messageId;

  @Option(
      names = "--payload",
      description = "Also show the payload and headers (they may hold personal data).")
  boolean payload;

  @Option(names = "--json", description = "Print JSON for machines.")
  boolean json;

  @Override
  void validateOptions() {
    if (messageId.isBlank()) {
      throw CliException.usage("MESSAGE_ID must not be blank");
    }
    ParkedRowsCommand.requireStorable("MESSAGE_ID", messageId);
  }

  @Override
  int run(Database database) {
    Optional<RowView> found =
        oneRowPerId(() -> database.operatorStore().inspect(instanceKey, messageId, payload));
    if (found.isEmpty()) {
      throw CliException.nothingMatched(
          "instance key "
              + Text.safe(instanceKey)
              + " has no row with message id "
              + Text.safe(messageId));
    }
    RowView row = found.get();
    PrintWriter out = out();
    if (json) {
      ObjectNode node = Rows.json(row, payload);
      out.println(Text.toJson(node));
      return ExitCode.OK;
    }
    out.print(Rows.detailTable(row).render());
    out.println();
    if (payload) {
      out.print(Rows.payloadText(row));
    } else {
      out.println("payload and headers not shown: add --payload to show them");
    }
    return ExitCode.OK;
  }
}
