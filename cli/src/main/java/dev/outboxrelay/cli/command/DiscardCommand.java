package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.operator.ParkedAction;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(
    name = "discard",
    description = {
      "Deletes parked (FAILED or EXHAUSTED) rows of one instance key that are not to be sent:"
          + " a dead-lettered row whose copy in the dead-letter topic was dealt with, a row whose"
          + " event no longer matters. They are never relayed and leave no entry in the published"
          + " log, so their message ids may be enqueued again.",
      "Only rows still parked when the statement runs are deleted; rows of other instance keys,"
          + " legacy rows and rows in any other status are never touched.",
      "A FAILED row whose dead-letter record Kafka confirmed shows where that copy is (the kafka"
          + " line of inspect, kafka_topic/partition/offset in list --json); --dead-lettered"
          + " deletes only such rows, leaving those that have no copy anywhere else.",
      "By message id it is one statement (all or none); with --all or --correlation-id it runs in"
          + " batches (--batch-size), so a large parked set is never one long transaction. If a"
          + " batch fails, the batches before it stay discarded and the error says how many rows"
          + " they discarded.",
      "Exits with 3 when nothing was (or, with --dry-run, would be) discarded, with 5 (partly done)"
          + " when some of the --message-ids were and others were not."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  outbox-relay-cli discard --instance-key orders --message-id A --message-id B",
      "  outbox-relay-cli discard --instance-key orders --all --status FAILED --dry-run",
      "  outbox-relay-cli discard --instance-key orders --all --dead-lettered"
    })
public final class DiscardCommand extends ParkedRowsCommand {
  @Option(
      names = "--dead-lettered",
      description =
          "With --all or --correlation-id: only FAILED rows whose dead-letter record Kafka"
              + " confirmed (their copy is in the dead-letter topic). Rows parked without one are"
              + " left, exactly once those whose transaction aborted too.")
  boolean deadLettered;

  @Override
  boolean deadLetteredOnly() {
    return deadLettered;
  }

  @Override
  ParkedAction action() {
    return ParkedAction.DISCARD;
  }
}
