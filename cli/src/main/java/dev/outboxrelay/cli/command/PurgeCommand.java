package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.cli.Database;
import dev.outboxrelay.cli.ExitCode;
import dev.outboxrelay.cli.LockTimeoutOption;
import dev.outboxrelay.cli.Text;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
    name = "purge",
    description = {
      "Deletes PUBLISHED rows of one instance key published before a cutoff, in bounded batches"
          + " (each its own transaction), printing progress: entries of the published log, then"
          + " rows published before schema version 9, still in the table. No other row is ever"
          + " deleted.",
      "Safe to interrupt: rows deleted so far stay deleted, the rest stay as they were; ended"
          + " from outside, it stops between batches and says how many rows it deleted."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  outbox-relay-cli purge --instance-key orders --published-before P30D",
      "  outbox-relay-cli purge --instance-key orders --published-before 2024-01-01"
    })
public final class PurgeCommand extends InstanceCommand {
  static final int MAX_BATCH_SIZE = 100_000;

  /** Batches in a row that delete nothing while rows are left before the command stops. */
  static final int MAX_EMPTY_BATCHES = 3;

  /**
   * Rows left counted at most: a count of every one could read most of a huge published log (the
   * relay's own retention holding the entries this purge waited for, say).
   */
  public static final long LEFT_COUNTED_UP_TO = 10_000;

  @Option(
      names = "--published-before",
      required = true,
      paramLabel = "WHEN",
      description = "Cutoff: " + Cutoff.FORMS + ".")
  String publishedBefore;

  @Option(
      names = "--batch-size",
      defaultValue = "1000",
      paramLabel = "N",
      description =
          "Rows per delete statement (1 to " + MAX_BATCH_SIZE + "). Default: ${DEFAULT-VALUE}.")
  int batchSize;

  @Option(names = "--dry-run", description = "Only count the rows that would be deleted.")
  boolean dryRun;

  /**
   * A row still in the table that another session holds is skipped and counted as left, but an
   * entry of the published log is waited for (skipping it would lock each entry before its delete,
   * a WAL record more per relayed row, in the relay's retention too): without a bound, purge waited
   * as long as the other session held it, saying nothing. Each delete sets it for its own
   * transaction, as the relay's retention does: a session setting would stay, behind a pooler in
   * transaction mode, on the server connection for the pooler's other clients.
   */
  @Mixin LockTimeoutOption lockTimeoutOption;

  private Cutoff cutoff;
  private Duration lockTimeout;

  /**
   * A moment before the next batch after one that deleted nothing, growing with each (100 ms, 200
   * ms): a lock held a moment is let go meanwhile. False when interrupted (the flag restored).
   */
  private static boolean pause(int emptyBatches) {
    try {
      Thread.sleep(100L * emptyBatches); // an operator's command backing off, not a test wait
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  @Override
  void validateOptions() {
    if (batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
      throw CliException.usage("--batch-size must be between 1 and " + MAX_BATCH_SIZE);
    }
    cutoff = Cutoff.parse("--published-before", publishedBefore);
    lockTimeout = lockTimeoutOption.lockTimeout();
  }

  @Override
  int run(Database database) {
    PostgresOutboxStore store = database.relayStore();
    Instant now = store.now();
    Instant before = cutoff.resolve(now);
    if (before.isAfter(now)) {
      // A usage error never repeats a typed value: the cutoff is not shown.
      throw CliException.usage(
          "--published-before lies in the future by the database clock (now " + now + ")");
    }
    PrintWriter out = out();
    String rows =
        "PUBLISHED row(s) of instance key "
            + Text.safe(instanceKey)
            + " published before "
            + before;
    if (dryRun) {
      long count = database.operatorStore().countPurgeable(instanceKey, before, Long.MAX_VALUE);
      out.println("dry run: " + count + " " + rows + " would be deleted");
      return ExitCode.OK;
    }
    // Ended from outside (Ctrl-C, SIGTERM), the batch in progress may commit with no line saying
    // so: the hook stops the purge between batches and says how many rows are gone.
    EndedFromOutside progress =
        new EndedFromOutside(err(), "purge", "deleted", EndedFromOutside.BATCH_WAIT);
    Thread hook = new Thread(progress, "outbox-relay-cli purge ended");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      return purge(database, store, before, rows, progress);
    } finally {
      progress.changeOver();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook runs, or has run, and says what was done unless the report went out
      }
    }
  }

  private int purge(
      Database database,
      PostgresOutboxStore store,
      Instant before,
      String rows,
      EndedFromOutside progress) {
    PrintWriter out = out();
    Set<String> keys = Set.of(instanceKey);
    long total = 0;
    int batches = 0;
    int emptyBatches = 0;
    long remaining = 0;
    while (true) {
      if (progress.stopRequested()) {
        return ExitCode.PARTIAL; // the hook says what was done; the exit status is the signal's
      }
      // The relay's own retention delete, of this key's rows only: the published log's entries
      // first, then PUBLISHED rows still in the table (skipping locked ones).
      int deleted;
      try {
        deleted = store.deletePublished(keys, before, batchSize, lockTimeout);
        if (deleted == 0) {
          // None deleted is not "none left": the relay's own retention may have taken this
          // batch's rows from under it (the delete waited for their locks, then found them gone),
          // and rows still in the table that someone else has locked are skipped. One row left
          // is enough to go on (a look, not a count: the log may hold hundreds of millions).
          if (!database.operatorStore().hasPurgeable(instanceKey, before)) {
            break;
          }
          // Rows left after three tries, or when the wait between them was interrupted: said,
          // and counted (up to a bound), never taken for done.
          if (++emptyBatches == MAX_EMPTY_BATCHES || !pause(emptyBatches)) {
            remaining =
                database.operatorStore().countPurgeable(instanceKey, before, LEFT_COUNTED_UP_TO);
            break;
          }
          continue;
        }
      } catch (OutboxStoreException e) {
        progress.reported();
        // What was done goes with the progress lines; the failure itself is reported as any
        // other. The batches before stay deleted; the failed one is one transaction, undone.
        out.println(
            "failed after deleting "
                + total
                + " in "
                + batches
                + " batch(es), which stay deleted; the failed batch deleted nothing"
                + (e.mayHaveCommitted()
                    ? " unless its commit went through before the failure"
                    : ""));
        out.flush();
        throw e;
      }
      emptyBatches = 0;
      total += deleted;
      batches++;
      progress.committed(total);
      out.println("deleted " + deleted + " (" + total + " so far)");
      out.flush();
    }
    out.println("purged " + total + " " + rows + " in " + batches + " batch(es)");
    out.flush();
    progress.reported(); // said in full: the hook has nothing to add
    if (remaining > 0) {
      out.println(
          (remaining >= LEFT_COUNTED_UP_TO ? LEFT_COUNTED_UP_TO + " or" : remaining)
              + " more left: locked by another session (the relay's own retention, or a"
              + " transaction holding them); run purge again");
      err().println("error: partly done: rows published before the cutoff are left");
      return ExitCode.PARTIAL;
    }
    return ExitCode.OK;
  }
}
