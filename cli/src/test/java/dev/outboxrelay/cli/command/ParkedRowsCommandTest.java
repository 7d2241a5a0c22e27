package dev.outboxrelay.cli.command;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** What a batched change ended from outside says (its shutdown hook's line). */
class ParkedRowsCommandTest {
  /**
   * The hook says how many rows the batches committed by the time the JVM ends, on standard error,
   * and nothing once the command has said what it did itself.
   */
  @Test
  void theHookSaysTheCommittedCountWhenItRunsUnlessTheCommandHasReported() {
    StringWriter err = new StringWriter();
    AtomicLong committed = new AtomicLong();
    AtomicBoolean changeEnded = new AtomicBoolean();
    Runnable hook =
        ParkedRowsCommand.endedFromOutsideReport(
            new PrintWriter(err), "requeue", "requeued", committed, changeEnded);
    committed.set(1500); // batches committed after the hook was registered

    hook.run();

    assertEquals(
        ParkedRowsCommand.endedFromOutsideMessage("requeue", "requeued", 1500)
            + System.lineSeparator(),
        err.toString());

    StringWriter afterTheReport = new StringWriter();
    changeEnded.set(true);
    ParkedRowsCommand.endedFromOutsideReport(
            new PrintWriter(afterTheReport), "requeue", "requeued", committed, changeEnded)
        .run();
    assertEquals("", afterTheReport.toString());
  }

  @Test
  void aChangeEndedFromOutsideSaysWhatItsCommittedBatchesDid() {
    assertEquals(
        "error: discard ended from outside after 2 row(s) discarded in the batches that"
            + " committed, which stay discarded; the batch in progress is rolled back unless its"
            + " commit went through; --dry-run counts what is left",
        ParkedRowsCommand.endedFromOutsideMessage("discard", "discarded", 2));
  }
}
