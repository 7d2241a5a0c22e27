package dev.outboxrelay.cli.command;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** What a batched change ended from outside does and says (its shutdown hook). */
class EndedFromOutsideTest {
  /**
   * The hook asks the change to stop before its next batch and waits for it: the count it says is
   * the change's last, taken once it stopped, not the count when the hook began.
   */
  @Test
  void theHookStopsTheChangeBetweenBatchesAndSaysItsFinalCount() throws Exception {
    StringWriter err = new StringWriter();
    EndedFromOutside progress =
        new EndedFromOutside(new PrintWriter(err), "discard", "discarded", Duration.ofMinutes(1));
    CountDownLatch firstBatch = new CountDownLatch(1);
    Thread change =
        new Thread(
            () -> {
              progress.committed(1);
              firstBatch.countDown();
              // The batch in progress when the hook began commits after it asked to stop.
              await().atMost(Duration.ofMinutes(1)).until(progress::stopRequested);
              progress.committed(2);
              progress.changeOver();
            });
    change.setDaemon(true);
    change.start();
    firstBatch.await();

    progress.run();
    change.join(Duration.ofMinutes(1).toMillis());

    assertFalse(change.isAlive());
    assertEquals(
        EndedFromOutside.message("discard", "discarded", 2, true) + "\n",
        err.toString(),
        "the count once the change stopped, not the count when the hook began");
  }

  /** A batch that does not end within the wait: the count so far, and the batch's doubt said. */
  @Test
  void aBatchStillInProgressAfterTheWaitIsSaidToBeInDoubt() {
    StringWriter err = new StringWriter();
    EndedFromOutside progress =
        new EndedFromOutside(new PrintWriter(err), "requeue", "requeued", Duration.ofMillis(1));
    progress.committed(1500);

    progress.run();

    assertEquals(
        EndedFromOutside.message("requeue", "requeued", 1500, false) + "\n", err.toString());
  }

  /** A requeue's rows with a passed deadline are counted too, as its report on success does. */
  @Test
  void aRequeueEndedFromOutsideSaysHowManyOfItsRowsHaveAPassedDeadline() {
    StringWriter err = new StringWriter();
    EndedFromOutside progress =
        new EndedFromOutside(new PrintWriter(err), "requeue", "requeued", Duration.ofMillis(1));
    progress.committed(1500, 3);

    progress.run();

    assertEquals(
        "error: requeue ended from outside after 1500 row(s) requeued in the batches that"
            + " committed, which stay requeued, 3 of them with a deliver_before that has passed,"
            + " which the relay records FAILED (DEADLINE_EXPIRED) again when it claims them; the"
            + " batch in progress is rolled back unless its commit went through; --dry-run counts"
            + " what is left\n",
        err.toString());
  }

  /** The command said what it did (before the hook ran, or while it waited): nothing more. */
  @Test
  void nothingIsSaidOnceTheCommandHasReported() throws Exception {
    StringWriter before = new StringWriter();
    EndedFromOutside reportedFirst =
        new EndedFromOutside(new PrintWriter(before), "requeue", "requeued", Duration.ofMinutes(1));
    reportedFirst.reported();
    reportedFirst.run();
    assertEquals("", before.toString());
    assertFalse(reportedFirst.stopRequested(), "nothing left to stop");

    StringWriter meanwhile = new StringWriter();
    EndedFromOutside reportedWhileWaiting =
        new EndedFromOutside(
            new PrintWriter(meanwhile), "requeue", "requeued", Duration.ofMinutes(1));
    Thread change =
        new Thread(
            () -> {
              await()
                  .atMost(Duration.ofMinutes(1))
                  .pollInterval(Duration.ofMillis(10))
                  .until(reportedWhileWaiting::stopRequested);
              reportedWhileWaiting.reported(); // its last batch done: the full report went out
              reportedWhileWaiting.changeOver();
            });
    change.setDaemon(true);
    change.start();
    reportedWhileWaiting.run();
    change.join(Duration.ofMinutes(1).toMillis());
    assertFalse(change.isAlive(), "the change ended once asked to stop");
    assertEquals("", meanwhile.toString());
  }

  @Test
  void theLineSaysWhatTheCommittedBatchesDidAndWhetherABatchWasInProgress() {
    assertEquals(
        "error: discard ended from outside after 2 row(s) discarded in the batches that"
            + " committed, which stay discarded; the batch in progress is rolled back unless its"
            + " commit went through; --dry-run counts what is left",
        EndedFromOutside.message("discard", "discarded", 2, false));
    assertEquals(
        "error: discard ended from outside after 2 row(s) discarded in the batches that"
            + " committed, which stay discarded; it stopped between batches; --dry-run counts"
            + " what is left",
        EndedFromOutside.message("discard", "discarded", 2, true));
  }
}
