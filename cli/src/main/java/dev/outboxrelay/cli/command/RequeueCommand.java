package dev.outboxrelay.cli.command;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.cli.Database;
import dev.outboxrelay.cli.ExitCode;
import dev.outboxrelay.cli.Text;
import dev.outboxrelay.cli.TextTable;
import dev.outboxrelay.cli.operator.RequeueFailedException;
import dev.outboxrelay.cli.operator.RequeueReport;
import dev.outboxrelay.cli.operator.RequeueRequest;
import dev.outboxrelay.store.MessageStatus;
import java.io.PrintWriter;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(
    name = "requeue",
    description = {
      "Sends parked (FAILED or EXHAUSTED) rows of one instance key again: sets them PENDING, due"
          + " now, with attempts 0, no failure code and a bumped lease token.",
      "Only rows still parked when the statement runs are changed; rows of other instance keys,"
          + " legacy rows and rows in any other status are never touched.",
      "By message id it is one statement (all or none); with --all or --correlation-id it runs in"
          + " batches (--batch-size), so a large parked set is never one long transaction. If a"
          + " batch fails, the batches before it stay requeued and the error says how many rows"
          + " they requeued.",
      "A requeued row keeps its deliver_before: the count of rows whose deadline has passed is"
          + " printed, since the relay records them FAILED (DEADLINE_EXPIRED) again at once.",
      "Exits with 3 when nothing was (or, with --dry-run, would be) requeued."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  outbox-relay-cli requeue --instance-key orders --message-id A --message-id B",
      "  outbox-relay-cli requeue --instance-key orders --correlation-id checkout-42",
      "  outbox-relay-cli requeue --instance-key orders --all --status EXHAUSTED"
    })
public final class RequeueCommand extends InstanceCommand {
  static final int MAX_MESSAGE_IDS = 10_000;
  static final int MAX_BATCH_SIZE = 100_000;

  @ArgGroup(exclusive = true, multiplicity = "1")
  Selection selection;

  /** Exactly one way to choose rows; --all must be explicit. */
  static final class Selection {
    @Option(
        names = "--message-id",
        paramLabel = "ID",
        required = true,
        description = "Requeue this row; repeat for several.")
    List<String> messageIds;

    @Option(
        names = "--correlation-id",
        paramLabel = "ID",
        required = true,
        description = "Requeue the parked rows with this correlation id.")
    String correlationId;

    @Option(
        names = "--all",
        required = true,
        description = "Requeue every parked row of the instance key.")
    boolean all;
  }

  @Option(
      names = "--status",
      paramLabel = "STATUS",
      description =
          "Only rows with this status, FAILED or EXHAUSTED; repeatable. Default: both. FAILED rows"
              + " are poison or dead-lettered: requeue them once the cause is fixed.")
  Set<MessageStatus> statuses;

  @Option(
      names = "--batch-size",
      paramLabel = "ROWS",
      defaultValue = "10000",
      description =
          "With --all or --correlation-id: requeue in batches of at most ROWS rows, one"
              + " transaction each, in insertion order (rows parked after the requeue began are"
              + " left for the next one; if interrupted, run it again). Default: ${DEFAULT-VALUE}.")
  int batchSize;

  @Option(names = "--dry-run", description = "Only count the rows that would be requeued.")
  boolean dryRun;

  @Option(names = "--json", description = "Print JSON for machines.")
  boolean json;

  private RequeueRequest request;

  @Override
  void validateOptions() {
    if (batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
      throw CliException.usage("--batch-size must be between 1 and " + MAX_BATCH_SIZE);
    }
    if (statuses != null && !RequeueRequest.PARKED.containsAll(statuses)) {
      throw CliException.usage("--status must be FAILED or EXHAUSTED");
    }
    RequeueRequest.Selector selector;
    if (selection.messageIds != null) {
      selector = RequeueRequest.Selector.MESSAGE_IDS;
      if (selection.messageIds.size() > MAX_MESSAGE_IDS) {
        throw CliException.usage("at most " + MAX_MESSAGE_IDS + " --message-id at a time");
      }
      if (selection.messageIds.stream().anyMatch(String::isBlank)) {
        throw CliException.usage("--message-id must not be blank");
      }
    } else if (selection.correlationId != null) {
      selector = RequeueRequest.Selector.CORRELATION_ID;
      if (selection.correlationId.isBlank()) {
        throw CliException.usage("--correlation-id must not be blank");
      }
    } else {
      selector = RequeueRequest.Selector.ALL;
    }
    request =
        new RequeueRequest(
            instanceKey,
            selector,
            selection.messageIds,
            selection.correlationId,
            statuses == null ? null : EnumSet.copyOf(statuses));
  }

  @Override
  int run(Database database) {
    PrintWriter out = out();
    String statusNames =
        request.statuses().stream().map(Enum::name).sorted().collect(Collectors.joining(", "));
    if (dryRun) {
      RequeueReport count = database.operatorStore().countRequeueable(request);
      if (json) {
        ObjectNode node = header();
        node.put("dry_run", true);
        node.put("would_requeue", count.requeued());
        node.put("deadline_passed", count.deadlinePassed());
        out.println(Text.toJson(node));
      } else {
        out.println(
            "dry run: "
                + count.requeued()
                + " "
                + statusNames
                + " row(s) of instance key "
                + Text.safe(instanceKey)
                + " would be requeued");
        printDeadlinePassed(out, count);
      }
      return count.requeued() == 0
          ? nothingMatched("no parked row would be requeued")
          : ExitCode.OK;
    }
    RequeueReport report;
    try {
      report = database.operatorStore().requeue(request, batchSize);
    } catch (RequeueFailedException e) {
      throw CliException.database(
          "requeue failed after requeuing "
              + e.requeued()
              + " row(s) in the batches before the failure, which stay requeued (the failed"
              + " batch may have been applied too if the connection was lost at its commit;"
              + " --dry-run counts what is left)",
          e.failure());
    }
    if (json) {
      ObjectNode node = header();
      node.put("dry_run", false);
      node.put("requeued", report.requeued());
      node.put("deadline_passed", report.deadlinePassed());
      ArrayNode skipped = node.putArray("not_requeued");
      for (RequeueReport.Skipped s : report.notRequeued()) {
        ObjectNode item = skipped.addObject();
        item.put("message_id", s.messageId());
        item.put("reason", s.reason().name());
        item.put("status", s.status() == null ? null : s.status().name());
      }
      out.println(Text.toJson(node));
    } else {
      out.println(
          "requeued "
              + report.requeued()
              + " row(s) of instance key "
              + Text.safe(instanceKey)
              + " ("
              + statusNames
              + ")");
      printDeadlinePassed(out, report);
      if (!report.notRequeued().isEmpty()) {
        out.println();
        out.println("not requeued:");
        TextTable table = new TextTable("MESSAGE ID", "REASON", "STATUS");
        for (RequeueReport.Skipped s : report.notRequeued()) {
          table.row(
              Text.safe(s.messageId()), s.reason(), s.status() == null ? "-" : s.status().name());
        }
        out.print(table.render());
      }
    }
    return report.requeued() == 0 ? nothingMatched("no parked row was requeued") : ExitCode.OK;
  }

  /**
   * A requeued row keeps its deliver_before: one that has passed makes the relay record the row
   * FAILED (DEADLINE_EXPIRED) again as soon as it claims it, so the count is said, not hidden.
   */
  private static void printDeadlinePassed(PrintWriter out, RequeueReport report) {
    if (report.deadlinePassed() > 0) {
      out.println(
          report.deadlinePassed()
              + " of them have a deliver_before that has passed: the relay records them FAILED"
              + " (DEADLINE_EXPIRED) again when it claims them");
    }
  }

  private ObjectNode header() {
    ObjectNode node = Text.json().createObjectNode();
    node.put("instance_key", instanceKey);
    ArrayNode statusArray = node.putArray("statuses");
    request.statuses().stream().map(Enum::name).sorted().forEach(statusArray::add);
    return node;
  }

  private int nothingMatched(String what) {
    err().println("error: nothing matched: " + what);
    return ExitCode.NOTHING_MATCHED;
  }
}
