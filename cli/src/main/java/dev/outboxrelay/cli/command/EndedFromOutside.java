package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.operator.BatchProgress;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A batched requeue, discard or purge ended from outside (Ctrl-C, SIGTERM, a closed terminal): the
 * batches that committed stay done, and without a word nobody could tell how many rows they changed
 * (a discard's and a purge's are gone; a purge's batch in progress printed no line). As a shutdown
 * hook ({@link #run}) it asks the change to stop before its next batch and waits a while for that,
 * so that the count it says is what was done: the JVM's own threads go on running while hooks run,
 * and a count said at once missed the batches committed after it.
 */
final class EndedFromOutside implements BatchProgress, Runnable {
  /** How long the hook waits for the batch in progress: a batch takes well under a second. */
  static final Duration BATCH_WAIT = Duration.ofSeconds(10);

  private final PrintWriter err;
  private final String verb;
  private final String done;
  private final Duration batchWait;

  /** The committed batches' counts, read together by the hook. */
  private final AtomicReference<Committed> committed = new AtomicReference<>(new Committed(0, 0));

  private record Committed(long changed, long deadlinePassed) {}

  private final AtomicBoolean stop = new AtomicBoolean();
  private final AtomicBoolean reported = new AtomicBoolean();
  private final CountDownLatch changeOver = new CountDownLatch(1);

  EndedFromOutside(PrintWriter err, String verb, String done, Duration batchWait) {
    this.err = err;
    this.verb = verb;
    this.done = done;
    this.batchWait = batchWait;
  }

  @Override
  public void committed(long changedSoFar) {
    committed.set(new Committed(changedSoFar, 0));
  }

  @Override
  public void committed(long changedSoFar, long deadlinePassedSoFar) {
    committed.set(new Committed(changedSoFar, deadlinePassedSoFar));
  }

  @Override
  public boolean stopRequested() {
    return stop.get();
  }

  /** The command has said what it did itself: the hook has nothing to add. */
  void reported() {
    reported.set(true);
  }

  /** The change is over (done, failed or stopped), and its report out if it made one. */
  void changeOver() {
    changeOver.countDown();
  }

  /** The hook's work: stop the change between batches, then say what it did unless it did. */
  @Override
  public void run() {
    if (reported.get()) {
      return;
    }
    stop.set(true);
    boolean betweenBatches = awaitChangeOver();
    if (reported.get()) {
      return; // it ended by itself meanwhile and said so
    }
    Committed counts = committed.get();
    err.println(message(verb, done, counts.changed(), counts.deadlinePassed(), betweenBatches));
    err.flush();
  }

  private boolean awaitChangeOver() {
    try {
      return changeOver.await(batchWait.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * {@code betweenBatches}: the change stopped before a batch, so {@code committed} is exact; else
   * a batch was still in progress when the hook stopped waiting.
   */
  static String message(String verb, String done, long committed, boolean betweenBatches) {
    return message(verb, done, committed, 0, betweenBatches);
  }

  /**
   * ... and {@code deadlinePassed} of those rows with a deliver_before that has passed (a
   * requeue's: the relay records them FAILED again when it claims them), said as on success.
   */
  static String message(
      String verb, String done, long committed, long deadlinePassed, boolean betweenBatches) {
    return "error: "
        + verb
        + " ended from outside after "
        + committed
        + " row(s) "
        + done
        + " in the batches that committed, which stay "
        + done
        + ParkedRowsCommand.deadlinesPassed(deadlinePassed)
        + (betweenBatches
            ? "; it stopped between batches"
            : "; the batch in progress is rolled back unless its commit went through")
        + "; --dry-run counts what is left";
  }
}
