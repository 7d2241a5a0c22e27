package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.operator.ParkedAction;
import picocli.CommandLine.Command;

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
      "Exits with 3 when nothing was (or, with --dry-run, would be) requeued, with 5 (partly done)"
          + " when some of the --message-ids were and others were not."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  outbox-relay-cli requeue --instance-key orders --message-id A --message-id B",
      "  outbox-relay-cli requeue --instance-key orders --correlation-id checkout-42",
      "  outbox-relay-cli requeue --instance-key orders --all --status EXHAUSTED"
    })
public final class RequeueCommand extends ParkedRowsCommand {
  @Override
  ParkedAction action() {
    return ParkedAction.REQUEUE;
  }
}
