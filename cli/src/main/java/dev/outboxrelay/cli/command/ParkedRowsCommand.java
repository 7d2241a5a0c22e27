package dev.outboxrelay.cli.command;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.cli.Database;
import dev.outboxrelay.cli.ExitCode;
import dev.outboxrelay.cli.LockTimeoutOption;
import dev.outboxrelay.cli.Text;
import dev.outboxrelay.cli.operator.OperatorStore;
import dev.outboxrelay.cli.operator.ParkedAction;
import dev.outboxrelay.cli.operator.ParkedChange;
import dev.outboxrelay.cli.operator.ParkedChangeFailedException;
import dev.outboxrelay.cli.operator.ParkedChangeStoppedException;
import dev.outboxrelay.cli.operator.ParkedSelection;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.writer.StorableText;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * A command that changes parked (FAILED or EXHAUSTED) rows of one instance key, {@code requeue} or
 * {@code discard}: the same selection, batches, dry run and report; only the write differs.
 */
abstract class ParkedRowsCommand extends InstanceCommand {
  static final int MAX_MESSAGE_IDS = 10_000;
  static final int MAX_BATCH_SIZE = 100_000;

  @ArgGroup(exclusive = true, multiplicity = "1")
  Selection selection;

  /** What every command taking --message-id requires of the ids, as a usage error. */
  static void requireValidMessageIds(List<String> messageIds) {
    if (messageIds.size() > MAX_MESSAGE_IDS) {
      throw CliException.usage("at most " + MAX_MESSAGE_IDS + " --message-id at a time");
    }
    if (messageIds.stream().anyMatch(String::isBlank)) {
      throw CliException.usage("--message-id must not be blank");
    }
    for (int i = 0; i < messageIds.size(); i++) {
      requireStorable("--message-id " + (i + 1), messageIds.get(i));
    }
  }

  /**
   * What no row can hold, refused as a usage error naming the option (and position), not the value:
   * U+0000, which PostgreSQL's text refuses (the database's error named neither the option nor the
   * id), and a UTF-16 surrogate without its pair (possible in a Windows command line), which the
   * driver would send as '?' and so match another row's id.
   */
  static void requireStorable(String option, String value) {
    if (value.indexOf('\0') >= 0) {
      throw CliException.usage(option + " holds the character U+0000, which no row can hold");
    }
    if (StorableText.hasUnpairedSurrogate(value)) {
      throw CliException.usage(
          option
              + " holds a UTF-16 surrogate without its pair (no character), which would be sent"
              + " as '?' and could match another row");
    }
  }

  /** Exactly one way to choose rows; --all must be explicit. */
  static final class Selection {
    @Option(
        names = "--message-id",
        paramLabel = "ID",
        required = true,
        description = "This row; repeat for several.")
    List<String> messageIds;

    @Option(
        names = "--correlation-id",
        paramLabel = "ID",
        required = true,
        description = "The parked rows with this correlation id.")
    String correlationId;

    @Option(names = "--all", required = true, description = "Every parked row of the instance key.")
    boolean all;
  }

  @Option(
      names = "--status",
      paramLabel = "STATUS",
      description =
          "Only rows with this status, FAILED or EXHAUSTED; repeatable. Default: both. FAILED rows"
              + " are poison or dead-lettered, EXHAUSTED ones spent their attempts.")
  Set<MessageStatus> statuses;

  @Option(
      names = "--batch-size",
      paramLabel = "ROWS",
      defaultValue = "10000",
      description =
          "With --all or --correlation-id: change at most ROWS rows (1 to "
              + MAX_BATCH_SIZE
              + ") per transaction, in insertion order (rows parked after the command began are"
              + " left for the next run; if interrupted, run it again). Default: ${DEFAULT-VALUE}.")
  int batchSize;

  @Option(names = "--dry-run", description = "Only count the rows that would be changed.")
  boolean dryRun;

  @Option(names = "--json", description = "Print JSON for machines.")
  boolean json;

  @Mixin LockTimeoutOption lockTimeoutOption;

  private ParkedSelection request;
  private Duration lockTimeout;

  /** What this command does to the rows. */
  abstract ParkedAction action();

  /** Only FAILED rows whose dead-letter record Kafka confirmed (discard --dead-lettered). */
  boolean deadLetteredOnly() {
    return false;
  }

  @Override
  final void validateOptions() {
    if (batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
      throw CliException.usage("--batch-size must be between 1 and " + MAX_BATCH_SIZE);
    }
    lockTimeout = lockTimeoutOption.lockTimeout();
    if (statuses != null && !ParkedSelection.PARKED.containsAll(statuses)) {
      throw CliException.usage("--status must be FAILED or EXHAUSTED");
    }
    ParkedSelection.Selector selector;
    if (selection.messageIds != null) {
      selector = ParkedSelection.Selector.MESSAGE_IDS;
      requireValidMessageIds(selection.messageIds);
    } else if (selection.correlationId != null) {
      selector = ParkedSelection.Selector.CORRELATION_ID;
      if (selection.correlationId.isBlank()) {
        throw CliException.usage("--correlation-id must not be blank");
      }
      requireStorable("--correlation-id", selection.correlationId);
    } else {
      selector = ParkedSelection.Selector.ALL;
    }
    Set<MessageStatus> chosen = statuses == null ? null : EnumSet.copyOf(statuses);
    if (deadLetteredOnly()) {
      if (selector == ParkedSelection.Selector.MESSAGE_IDS) {
        throw CliException.usage(
            "--dead-lettered goes with --all or --correlation-id (by --message-id you name the"
                + " rows: inspect shows each one's dead-letter copy)");
      }
      if (chosen == null) {
        chosen = EnumSet.of(MessageStatus.FAILED);
      } else if (!chosen.contains(MessageStatus.FAILED)) {
        throw CliException.usage("--dead-lettered selects FAILED rows: --status must include it");
      }
    }
    request =
        new ParkedSelection(
            instanceKey,
            selector,
            selection.messageIds,
            selection.correlationId,
            chosen,
            deadLetteredOnly());
  }

  @Override
  final int run(Database database) {
    PrintWriter out = out();
    String verb = action().verb();
    String done = action().pastTense();
    String statusNames =
        request.statuses().stream().map(Enum::name).sorted().collect(Collectors.joining(", "))
            + (request.deadLetteredOnly() ? ", dead-lettered" : "");
    if (dryRun) {
      ParkedChange count = oneRowPerId(() -> database.operatorStore().countParked(request));
      if (json) {
        ObjectNode node = header();
        node.put("dry_run", true);
        node.put("would_" + verb, count.changed());
        putDeadlinePassed(node, count);
        out.println(Text.toJson(node));
      } else {
        out.println(
            "dry run: "
                + count.changed()
                + " "
                + statusNames
                + " row(s) of instance key "
                + Text.safe(instanceKey)
                + " would be "
                + done);
        printDeadlinePassed(out, count);
      }
      if (count.changed() == 0) {
        return nothingMatched("no parked row would be " + done);
      }
      // 0 unless by message id. A dry run counts only: why is what the change (or inspect) says.
      return SkippedRows.exitCode(
          err(),
          request.messageIds().size() - count.changed(),
          "would not be " + done,
          "a dry run counts only: inspect them to see why");
    }
    EndedFromOutside progress =
        new EndedFromOutside(err(), verb, done, EndedFromOutside.BATCH_WAIT);
    Thread endedFromOutside = new Thread(progress, "outbox-relay-cli " + verb + " ended");
    boolean batched = request.selector() != ParkedSelection.Selector.MESSAGE_IDS;
    if (batched) {
      Runtime.getRuntime().addShutdownHook(endedFromOutside);
    }
    try {
      return changeAndReport(database, statusNames, progress);
    } finally {
      progress.changeOver();
      if (batched) {
        try {
          Runtime.getRuntime().removeShutdownHook(endedFromOutside);
        } catch (IllegalStateException shuttingDown) {
          // the hook runs, or has run, and says what was done unless the report went out
        }
      }
    }
  }

  /** The change itself, and its report; {@code progress} told once the report is out. */
  private int changeAndReport(Database database, String statusNames, EndedFromOutside progress) {
    String verb = action().verb();
    String done = action().pastTense();
    PrintWriter out = out();
    ParkedChange report;
    // Outside the try: its read of the payload's type changes nothing, and a failure there is no
    // change that may have been applied.
    OperatorStore store = database.operatorStore();
    try {
      report = oneRowPerId(() -> store.change(action(), request, batchSize, lockTimeout, progress));
    } catch (ParkedChangeStoppedException e) {
      // Stopped by the shutdown hook, which says what was done; the JVM is ending, and its exit
      // status is the signal's, not this.
      return ExitCode.PARTIAL;
    } catch (ParkedChangeFailedException e) {
      throw CliException.database(
          verb
              + " failed after "
              + action().gerund()
              + " "
              + e.changed()
              + " row(s) in the batches before the failure, which stay "
              + done
              + deadlinePassedOf(e.deadlinePassed())
              + (e.failure().mayHaveCommitted()
                  ? " (the failed batch may have been applied too if the connection was lost at its"
                      + " commit; --dry-run counts what is left)"
                  : " (the failed batch changed nothing; --dry-run counts what is left)"),
          e.failure());
    } catch (OutboxStoreException e) {
      if (request.selector() != ParkedSelection.Selector.MESSAGE_IDS) {
        throw e; // batched: failed reading where to stop, before any batch changed a row
      }
      throw CliException.changeFailed(verb + " failed", e);
    }
    if (json) {
      ObjectNode node = header();
      node.put("dry_run", false);
      node.put(done, report.changed());
      putDeadlinePassed(node, report);
      SkippedRows.put(node, "not_" + done, report.skipped());
      out.println(Text.toJson(node));
    } else {
      out.println(
          done
              + " "
              + report.changed()
              + " row(s) of instance key "
              + Text.safe(instanceKey)
              + " ("
              + statusNames
              + ")");
      printDeadlinePassed(out, report);
      SkippedRows.print(out, "not " + done + ":", report.skipped());
    }
    out.flush();
    progress.reported(); // said in full: the hook has nothing to add
    if (report.changed() == 0) {
      return nothingMatched("no parked row was " + done);
    }
    return SkippedRows.exitCode(err(), "not " + done, report.skipped());
  }

  /**
   * A requeued row keeps its deliver_before: one that has passed makes the relay record the row
   * FAILED (DEADLINE_EXPIRED) again as soon as it claims it, so the count is said, not hidden. A
   * discarded row has none left.
   */
  private void printDeadlinePassed(PrintWriter out, ParkedChange change) {
    if (action() == ParkedAction.REQUEUE && change.deadlinePassed() > 0) {
      out.println(
          change.deadlinePassed()
              + " of them have a deliver_before that has passed: the relay records them FAILED"
              + " (DEADLINE_EXPIRED) again when it claims them");
    }
  }

  /**
   * The rows with a passed deadline among those a failed batched requeue's earlier batches sent,
   * said as on success: they are requeued all the same.
   */
  private String deadlinePassedOf(long deadlinePassed) {
    return action() == ParkedAction.REQUEUE ? deadlinesPassed(deadlinePassed) : "";
  }

  /**
   * ", N of them with a deliver_before that has passed, ...", the clause a requeue's report on
   * failure (here and in {@link EndedFromOutside}) adds to its count; nothing for none.
   */
  static String deadlinesPassed(long deadlinePassed) {
    return deadlinePassed > 0
        ? ", "
            + deadlinePassed
            + " of them with a deliver_before that has passed, which the relay records FAILED"
            + " (DEADLINE_EXPIRED) again when it claims them"
        : "";
  }

  private void putDeadlinePassed(ObjectNode node, ParkedChange change) {
    if (action() == ParkedAction.REQUEUE) {
      node.put("deadline_passed", change.deadlinePassed());
    }
  }

  private ObjectNode header() {
    ObjectNode node = Text.json().createObjectNode();
    node.put("instance_key", instanceKey);
    ArrayNode statusArray = node.putArray("statuses");
    request.statuses().stream().map(Enum::name).sorted().forEach(statusArray::add);
    if (request.deadLetteredOnly()) {
      node.put("dead_lettered_only", true);
    }
    return node;
  }

  private int nothingMatched(String what) {
    err().println("error: nothing matched: " + what);
    return ExitCode.NOTHING_MATCHED;
  }
}
