package dev.outboxrelay.cli.command;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.cli.Database;
import dev.outboxrelay.cli.ExitCode;
import dev.outboxrelay.cli.LockTimeoutOption;
import dev.outboxrelay.cli.Text;
import dev.outboxrelay.cli.operator.OperatorStore;
import dev.outboxrelay.cli.operator.ParkedChange;
import dev.outboxrelay.store.OutboxStoreException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
    name = "park",
    description = {
      "Parks rows of one instance key that await delivery: FAILED with reason PARKED_BY_OPERATOR,"
          + " as the relay parks a poison row, so that no task claims them again until requeue"
          + " sends them (or discard deletes them). For a row that fails every task that takes it"
          + " (a converter's, a transform's or the broker's refusal), without waiting for its"
          + " attempts to run out.",
      "PENDING and AMBIGUOUS rows only, unless --in-flight: a row in flight may be in Kafka"
          + " already, or on its way; parked, its holder's outcome write is refused and counted as"
          + " a lost claim. Never a row in flight under an exactly-once claim (Kafka may have"
          + " committed it). Rows of other instance keys, legacy rows and parked or published rows"
          + " are never touched. One statement, so one snapshot: an id it leaves alone is named"
          + " with its reason.",
      "Exits with 3 when nothing was (or, with --dry-run, would be) parked, with 5 (partly done)"
          + " when some of the ids were and others were not."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  outbox-relay-cli park --instance-key orders --message-id A --dry-run",
      "  outbox-relay-cli park --instance-key orders --message-id A --in-flight"
    })
public final class ParkCommand extends InstanceCommand {
  @Option(
      names = "--message-id",
      paramLabel = "ID",
      required = true,
      description = "This row; repeat for several.")
  List<String> messageIds;

  @Option(
      names = "--in-flight",
      description =
          "Also park rows IN_FLIGHT under an at-least-once claim (a task holds them: their records"
              + " may be in Kafka already).")
  boolean inFlight;

  @Option(
      names = "--dry-run",
      description = "Park nothing: only say what would be parked (read only, no lock).")
  boolean dryRun;

  @Option(names = "--json", description = "Print JSON for machines.")
  boolean json;

  @Mixin LockTimeoutOption lockTimeoutOption;

  private Duration lockTimeout;

  @Override
  void validateOptions() {
    ParkedRowsCommand.requireValidMessageIds(messageIds);
    lockTimeout = lockTimeoutOption.lockTimeout();
  }

  @Override
  int run(Database database) {
    ParkedChange report;
    // Outside the try: its read of the payload's type changes nothing, and a failure there is no
    // change that may have been applied.
    OperatorStore store = database.operatorStore();
    try {
      report =
          oneRowPerId(() -> store.park(instanceKey, messageIds, inFlight, dryRun, lockTimeout));
    } catch (OutboxStoreException e) {
      if (dryRun) {
        throw e; // read only
      }
      throw CliException.changeFailed("park failed", e);
    }
    PrintWriter out = out();
    if (json) {
      ObjectNode node = Text.json().createObjectNode();
      node.put("instance_key", instanceKey);
      node.put("dry_run", dryRun);
      node.put(dryRun ? "would_park" : "parked", report.changed());
      ArrayNode inFlightIds = node.putArray(dryRun ? "would_park_in_flight" : "parked_in_flight");
      report.changedInFlight().forEach(inFlightIds::add);
      ArrayNode liveIds =
          node.putArray(dryRun ? "would_park_under_live_lease" : "parked_under_live_lease");
      report.changedUnderLiveLease().forEach(liveIds::add);
      SkippedRows.put(node, "not_parked", report.skipped());
      out.println(Text.toJson(node));
    } else {
      String rows = report.changed() + " row(s) of instance key " + Text.safe(instanceKey);
      out.println(
          (dryRun ? "dry run: " + rows + " would be parked" : "parked " + rows)
              + " (FAILED, PARKED_BY_OPERATOR)");
      if (!report.changedInFlight().isEmpty()) {
        out.println(
            (dryRun ? "in flight (would be parked):" : "in flight when parked:")
                + " their records may be in Kafka already, and a requeue may send them twice");
        report
            .changedInFlight()
            .forEach(
                id ->
                    out.println(
                        "  "
                            + Text.safe(id)
                            + (report.changedUnderLiveLease().contains(id)
                                ? "  (lease live: a running task "
                                    + (dryRun ? "holds" : "held")
                                    + " it; its outcome write counts as a lost claim)"
                                : "")));
      }
      SkippedRows.print(out, "not parked:", report.skipped());
    }
    if (report.changed() == 0) {
      err().println("error: nothing matched: no row " + (dryRun ? "would be" : "was") + " parked");
      return ExitCode.NOTHING_MATCHED;
    }
    return SkippedRows.exitCode(
        err(), dryRun ? "would not be parked" : "not parked", report.skipped());
  }
}
