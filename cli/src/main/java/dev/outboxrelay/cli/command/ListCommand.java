package dev.outboxrelay.cli.command;

import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.cli.Database;
import dev.outboxrelay.cli.ExitCode;
import dev.outboxrelay.cli.Text;
import dev.outboxrelay.cli.operator.RowView;
import dev.outboxrelay.store.MessageStatus;
import java.io.PrintWriter;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(
    name = "list",
    description = {
      "Rows of one instance key with one status, oldest first: relay state and routing fields,"
          + " never payloads or headers (see inspect --payload). PUBLISHED: the published log's"
          + " entries and the rows published before schema version 9, by seq."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  outbox-relay-cli list --instance-key orders --status EXHAUSTED --limit 20",
      "  outbox-relay-cli list --instance-key orders --status FAILED --json"
    })
public final class ListCommand extends InstanceCommand {
  static final int MAX_LIMIT = 10_000;

  @Option(
      names = "--status",
      required = true,
      paramLabel = "STATUS",
      description = "One of: ${COMPLETION-CANDIDATES}.")
  MessageStatus status;

  @Option(
      names = "--limit",
      defaultValue = "50",
      paramLabel = "N",
      description = "At most N rows (1 to " + MAX_LIMIT + "). Default: ${DEFAULT-VALUE}.")
  int limit;

  @Option(
      names = "--after-seq",
      defaultValue = "0",
      paramLabel = "SEQ",
      description = "Only rows after this seq: the next page.")
  long afterSeq;

  @Option(
      names = "--json",
      description =
          "Print a JSON array for machines (a full page's next --after-seq goes to stderr).")
  boolean json;

  @Override
  void validateOptions() {
    if (limit < 1 || limit > MAX_LIMIT) {
      throw CliException.usage("--limit must be between 1 and " + MAX_LIMIT);
    }
    if (afterSeq < 0) {
      throw CliException.usage("--after-seq must not be negative");
    }
  }

  @Override
  int run(Database database) {
    List<RowView> rows = database.operatorStore().list(instanceKey, status, afterSeq, limit);
    PrintWriter out = out();
    if (json) {
      ArrayNode array = Text.json().createArrayNode();
      rows.forEach(row -> array.add(Rows.json(row, false)));
      out.println(Text.toJson(array));
      if (rows.size() == limit) {
        // stdout stays one JSON array; a script pages by the last row's seq, a human reads this.
        out.flush();
        err().println(nextPage(rows));
        err().flush();
      }
      return ExitCode.OK;
    }
    if (rows.isEmpty()) {
      out.println("no " + status + " rows for instance key " + Text.safe(instanceKey));
      return ExitCode.OK;
    }
    out.print(Rows.summaryTable(rows).render());
    if (rows.size() == limit) {
      out.println();
      out.println(nextPage(rows));
    }
    return ExitCode.OK;
  }

  /** The hint after a full page: the next page starts after its last row. */
  private static String nextPage(List<RowView> rows) {
    return "more rows may follow: add --after-seq " + rows.get(rows.size() - 1).seq();
  }
}
