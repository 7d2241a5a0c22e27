package dev.outboxrelay.cli;

import static dev.outboxrelay.cli.OutboxFixture.assertUnchangedExcept;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.outboxrelay.cli.OutboxFixture.RowState;
import dev.outboxrelay.cli.operator.BatchProgress;
import dev.outboxrelay.cli.operator.OperatorStore;
import dev.outboxrelay.cli.operator.ParkedAction;
import dev.outboxrelay.cli.operator.ParkedChangeStoppedException;
import dev.outboxrelay.cli.operator.ParkedSelection;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * discard deletes only parked rows of its own key, fenced by status: never another key's rows,
 * legacy rows, PUBLISHED or IN_FLIGHT rows. It shares requeue's selection (RequeueCommandTest
 * covers its corners); these tests hold the delete to it.
 */
class DiscardCommandTest {
  private OutboxFixture outbox;
  private Map<String, RowState> before;

  @BeforeEach
  void outbox() throws SQLException {
    outbox = OutboxFixture.populated("discard");
    before = outbox.snapshot();
  }

  @AfterEach
  void close() {
    outbox.close();
  }

  /**
   * Another session takes the parked row back into flight (a requeue and a claim, committed while
   * this discard waits for the row's lock): the row was FAILED when the discard began and is in
   * flight when it gets the lock. The discard re-checks the row as it now is and leaves it:
   * deleted, a row a task is sending would be lost.
   */
  @Test
  void aRowTakenBackIntoFlightMeanwhileIsNotDiscarded() throws Exception {
    try (Connection other = outbox.dataSource.getConnection();
        Statement st = other.createStatement()) {
      other.setAutoCommit(false);
      st.executeUpdate(
          "UPDATE outbox SET status = 'IN_FLIGHT', parked_at = NULL, lease_owner = 'w',"
              + " lease_expires_at = now() + interval '1 minute', lease_token = lease_token + 1"
              + " WHERE message_id = 'eu-failed-1'");
      CompletableFuture<Cli.Result> discard =
          CompletableFuture.supplyAsync(
              () ->
                  outbox
                      .cli()
                      .forKey(
                          "eu",
                          "discard",
                          "--message-id",
                          "eu-failed-1",
                          "--lock-timeout",
                          "0")); // waits as long as the other session holds the row
      Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> outbox.waitingForALock(Database.APPLICATION_NAME));
      other.commit();

      Cli.Result r = discard.get(30, TimeUnit.SECONDS);
      assertEquals(ExitCode.NOTHING_MATCHED, r.exitCode(), r::toString);
    }
    RowState row = outbox.snapshot().get("eu-failed-1");
    assertEquals("IN_FLIGHT", row.status(), "not deleted");
    assertEquals(
        before.get("eu-failed-1").leaseToken() + 1, row.leaseToken(), "as the claim left it");
  }

  @Test
  void byMessageIdDiscardsOwnParkedRowsAndSaysWhyOthersWereNot() throws SQLException {
    Cli.Result r =
        outbox
            .cli()
            .forKey(
                "eu",
                "discard",
                "--message-id",
                "eu-failed-1",
                "--message-id",
                "eu-exhausted-1",
                "--message-id",
                "eu-published-new",
                "--message-id",
                "eu-in-flight",
                "--message-id",
                "us-failed-1",
                "--message-id",
                "legacy-failed",
                "--message-id",
                "no-such-id");

    assertEquals(ExitCode.PARTIAL, r.exitCode(), r::toString);
    assertTrue(r.out().startsWith("discarded 2 row(s) of instance key eu (EXHAUSTED, FAILED)\n"));
    assertTrue(r.out().contains("\nnot discarded:\n"), r::toString);
    assertTrue(r.hasLine("eu-published-new +NOT_PARKED +PUBLISHED"), r::toString);
    assertTrue(r.hasLine("eu-in-flight +NOT_PARKED +IN_FLIGHT"), r::toString);
    assertTrue(r.hasLine("us-failed-1 +OTHER_INSTANCE +-"), r::toString);
    assertTrue(r.hasLine("legacy-failed +OTHER_INSTANCE +-"), r::toString);
    assertTrue(r.hasLine("no-such-id +NOT_FOUND +-"), r::toString);
    assertDiscarded("eu-failed-1", "eu-exhausted-1");
  }

  /**
   * A batched change tells what its committed batches did as each commits, so that a run ended from
   * outside (Ctrl-C, SIGTERM) can still say it: a discard's rows are gone.
   */
  @Test
  void aBatchedDiscardTellsWhatEachCommittedBatchDid() {
    List<Long> committed = new java.util.concurrent.CopyOnWriteArrayList<>();
    OperatorStore store = new OperatorStore(outbox.dataSource, OutboxTable.parse("outbox"));

    store.change(
        ParkedAction.DISCARD,
        new ParkedSelection("us", ParkedSelection.Selector.ALL, null, null, null, false),
        1,
        Duration.ZERO,
        progress(committed, () -> false));

    assertEquals(List.of(1L, 2L, 3L), committed);
  }

  /**
   * Asked to stop (the CLI's JVM being ended), a batched change ends before its next batch, saying
   * what the committed batches did: nothing in progress, so that count is exact.
   */
  @Test
  void aBatchedDiscardAskedToStopEndsBeforeItsNextBatch() throws SQLException {
    List<Long> committed = new java.util.concurrent.CopyOnWriteArrayList<>();
    OperatorStore store = new OperatorStore(outbox.dataSource, OutboxTable.parse("outbox"));

    ParkedChangeStoppedException stopped =
        assertThrows(
            ParkedChangeStoppedException.class,
            () ->
                store.change(
                    ParkedAction.DISCARD,
                    new ParkedSelection(
                        "us", ParkedSelection.Selector.ALL, null, null, null, false),
                    1,
                    Duration.ZERO,
                    progress(committed, () -> committed.size() == 1)));

    assertEquals(1, stopped.changed());
    assertEquals(List.of(1L), committed);
    assertEquals(2, outbox.count("instance_key = 'us' AND status IN ('FAILED', 'EXHAUSTED')"));
  }

  private static BatchProgress progress(
      List<Long> committed, java.util.function.BooleanSupplier stop) {
    return new BatchProgress() {
      @Override
      public void committed(long changedSoFar) {
        committed.add(changedSoFar);
      }

      @Override
      public boolean stopRequested() {
        return stop.getAsBoolean();
      }
    };
  }

  @Test
  void allDiscardsEveryParkedRowOfTheKeyInBatches() throws SQLException {
    Cli.Result r = outbox.cli().forKey("us", "discard", "--all", "--batch-size", "1", "--json");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    JsonNode json = r.json();
    assertEquals(3, json.get("discarded").asLong());
    assertEquals(0, json.get("not_discarded").size());
    assertFalse(json.has("deadline_passed"), r::toString); // a requeue's concern only
    assertDiscarded("us-failed-1", "us-failed-2", "us-exhausted-1");
  }

  /**
   * A discard in batches takes the rows parked before it began: not one the relay parks while it
   * runs, even below the last seq it saw (a row in flight then, dead-lettered meanwhile), which the
   * operator never saw parked and no dry run counted. Its parked_at stands here for a park after
   * the start.
   */
  @Test
  void aBatchedDiscardLeavesARowParkedAfterItBegan() throws SQLException {
    outbox.update("us-failed-1", "parked_at = statement_timestamp() + interval '1 hour'");
    before = outbox.snapshot();
    Cli.Result r = outbox.cli().forKey("us", "discard", "--all", "--batch-size", "1", "--json");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertEquals(2, r.json().get("discarded").asLong(), r::toString);
    assertDiscarded("us-failed-2", "us-exhausted-1");
  }

  @Test
  void statusAndCorrelationIdNarrowTheSelection() throws SQLException {
    // c-1 is also on eu-exhausted-1 (EXHAUSTED), rows of another key and a legacy row.
    Cli.Result r =
        outbox.cli().forKey("eu", "discard", "--correlation-id", "c-1", "--status", "FAILED");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertEquals("discarded 1 row(s) of instance key eu (FAILED)\n", r.out());
    assertDiscarded("eu-failed-1");
  }

  /**
   * --dead-lettered deletes only FAILED rows whose dead-letter record Kafka confirmed (the relay
   * writes its position into the row's Kafka columns, as the fixture's *-failed-2 rows have it): a
   * FAILED row without a copy elsewhere stays, and so does another key's row with a copy.
   */
  @Test
  void deadLetteredDiscardsOnlyRowsWithAConfirmedCopy() throws SQLException {
    Cli.Result dryRun =
        outbox.cli().forKey("eu", "discard", "--all", "--dead-lettered", "--dry-run");
    assertEquals(ExitCode.OK, dryRun.exitCode(), dryRun::toString);
    assertEquals(
        "dry run: 1 FAILED, dead-lettered row(s) of instance key eu would be discarded\n",
        dryRun.out());

    Cli.Result r =
        outbox
            .cli()
            .forKey("eu", "discard", "--all", "--dead-lettered", "--batch-size", "1", "--json");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertEquals(1, r.json().get("discarded").asLong(), r::toString);
    assertTrue(r.json().get("dead_lettered_only").asBoolean(), r::toString);
    assertDiscarded("eu-failed-2");
  }

  /**
   * Only a FAILED row holds a dead-letter copy's position: an EXHAUSTED row with one left from an
   * earlier life (a requeue by an older CLI, say) is not taken for a dead-lettered row.
   */
  @Test
  void deadLetteredTakesFailedRowsOnly() throws SQLException {
    outbox.update(
        "eu-exhausted-1", "kafka_topic = 'orders-dlq', kafka_partition = 0, kafka_offset = 2");
    before = outbox.snapshot();

    Cli.Result r =
        outbox
            .cli()
            .forKey(
                "eu",
                "discard",
                "--all",
                "--dead-lettered",
                "--status",
                "FAILED",
                "--status",
                "EXHAUSTED");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertDiscarded("eu-failed-2");
  }

  @Test
  void deadLetteredIsRefusedWhereItCannotChoose() throws SQLException {
    Cli.Result byId =
        outbox.cli().forKey("eu", "discard", "--message-id", "eu-failed-2", "--dead-lettered");
    assertEquals(ExitCode.USAGE, byId.exitCode(), byId::toString);
    assertTrue(
        byId.err().contains("--dead-lettered goes with --all or --correlation-id"), byId::toString);

    Cli.Result exhausted =
        outbox.cli().forKey("eu", "discard", "--all", "--dead-lettered", "--status", "EXHAUSTED");
    assertEquals(ExitCode.USAGE, exhausted.exitCode(), exhausted::toString);
    assertTrue(exhausted.err().contains("--status must include it"), exhausted::toString);
    assertUnchangedExcept(before, outbox.snapshot());
  }

  @Test
  void dryRunOnlyCountsAndNothingToDiscardExitsWithThree() throws SQLException {
    Cli.Result r = outbox.cli().forKey("eu", "discard", "--all", "--dry-run");
    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertEquals(
        "dry run: 3 EXHAUSTED, FAILED row(s) of instance key eu would be discarded\n", r.out());

    Cli.Result none = outbox.cli().forKey("asia", "discard", "--all");
    assertEquals(ExitCode.NOTHING_MATCHED, none.exitCode(), none::toString);
    assertEquals("error: nothing matched: no parked row was discarded\n", none.err());
    assertUnchangedExcept(before, outbox.snapshot());
  }

  @Test
  void aCancelledDiscardKeepsTheBatchesItFinishedAndSaysHowMany() throws SQLException {
    try (Connection holder = outbox.dataSource.getConnection()) {
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        s.executeQuery("SELECT 1 FROM outbox WHERE message_id = 'us-exhausted-1' FOR UPDATE")
            .close();
      }
      Cli.Result cancelled =
          outbox
              .cli()
              .forKey("us", "discard", "--all", "--batch-size", "1", "--statement-timeout", "1");
      holder.rollback();

      assertEquals(ExitCode.DATABASE, cancelled.exitCode(), cancelled::toString);
      assertTrue(
          cancelled
              .err()
              .startsWith(
                  "error: discard failed after discarding 2 row(s) in the batches before the"
                      + " failure, which stay discarded"),
          cancelled::toString);
      assertTrue(
          cancelled.err().contains("discard or purge keeps the batches"), cancelled::toString);
    }
    assertDiscarded("us-failed-1", "us-failed-2");
  }

  /** By message id, one statement: a row it cannot lock in time fails it whole. */
  @Test
  void aDiscardByIdThatCannotLockARowGivesUpAfterTheLockTimeoutAndChangesNothing()
      throws Exception {
    Cli.Result r =
        outbox.whileLocked(
            () ->
                outbox
                    .cli()
                    .forKey(
                        "eu",
                        "discard",
                        "--message-id",
                        "eu-failed-1",
                        "--message-id",
                        "eu-exhausted-1",
                        "--lock-timeout",
                        "100"),
            "eu-exhausted-1");

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertTrue(
        r.err().startsWith("error: discard failed: DB_LOCK_NOT_AVAILABLE (SQLState 55P03): "),
        r::toString);
    assertUnchangedExcept(before, outbox.snapshot());
  }

  /** As a park's (ParkCommandTest): a lost reply may hide a commit, and the error says so. */
  @Test
  void aDiscardByIdWhoseConnectionIsLostSaysTheChangeMayHaveBeenApplied() throws Exception {
    Cli.Result r =
        outbox.endedWhileWaiting(
            () ->
                outbox
                    .cli()
                    .forKey("eu", "discard", "--message-id", "eu-failed-1", "--lock-timeout", "0"),
            "eu-failed-1");

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertTrue(r.err().startsWith("error: discard failed: DB_UNAVAILABLE ("), r::toString);
    assertTrue(
        r.err()
            .endsWith(
                "; the change may have been applied before the connection was lost: run"
                    + " it again (it reports what is done) or inspect the ids\n"),
        r::toString);
    assertUnchangedExcept(before, outbox.snapshot());
  }

  /** The rows are gone, and no other row changed. */
  private void assertDiscarded(String... ids) throws SQLException {
    Map<String, RowState> after = outbox.snapshot();
    for (String id : ids) {
      assertTrue(before.containsKey(id), id);
      assertFalse(after.containsKey(id), id + " must be deleted");
    }
    assertUnchangedExcept(before, after, ids);
  }
}
