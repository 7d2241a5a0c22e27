package dev.outboxrelay.cli.command;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** What a batched change ended from outside says (its shutdown hook's line). */
class ParkedRowsCommandTest {
  @Test
  void aChangeEndedFromOutsideSaysWhatItsCommittedBatchesDid() {
    assertEquals(
        "error: discard ended from outside after 2 row(s) discarded in the batches that"
            + " committed, which stay discarded; the batch in progress is rolled back unless its"
            + " commit went through; --dry-run counts what is left",
        ParkedRowsCommand.endedFromOutsideMessage("discard", "discarded", 2));
  }
}
