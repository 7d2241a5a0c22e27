package dev.outboxrelay.cli;

import static dev.outboxrelay.cli.OutboxFixture.assertUnchangedExcept;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.outboxrelay.cli.OutboxFixture.RowState;
import dev.outboxrelay.cli.operator.BatchProgress;
import dev.outboxrelay.cli.operator.OperatorStore;
import dev.outboxrelay.cli.operator.ParkedAction;
import dev.outboxrelay.cli.operator.ParkedSelection;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * requeue changes only parked rows of its own key, fenced by status: never another key's rows,
 * legacy rows, PUBLISHED or IN_FLIGHT rows.
 */
class RequeueCommandTest {
  private OutboxFixture outbox;
  private Map<String, RowState> before;

  @BeforeEach
  void outbox() throws SQLException {
    outbox = OutboxFixture.populated("requeue");
    before = outbox.snapshot();
    // Parked as the relay parks: a requeue that forgot parked_at would show.
    before.forEach(
        (id, row) -> {
          if (row.instanceKey() != null && Set.of("FAILED", "EXHAUSTED").contains(row.status())) {
            assertNotNull(row.parkedAt(), id);
          }
        });
  }

  @AfterEach
  void close() {
    outbox.close();
  }

  @Test
  void byMessageIdRequeuesOwnParkedRowsAndSaysWhyOthersWereNot() throws SQLException {
    Cli.Result r =
        outbox
            .cli()
            .forKey(
                "eu",
                "requeue",
                "--message-id",
                "eu-failed-1",
                "--message-id",
                "eu-exhausted-1",
                "--message-id",
                "eu-published-old",
                "--message-id",
                "eu-published-new",
                "--message-id",
                "us-published-new",
                "--message-id",
                "eu-in-flight",
                "--message-id",
                "us-failed-1",
                "--message-id",
                "legacy-failed",
                "--message-id",
                "no-such-id",
                "--message-id",
                "eu-failed-1");

    // Some requested ids were not requeued: partly done, not done.
    assertEquals(ExitCode.PARTIAL, r.exitCode(), r::toString);
    assertEquals(
        "error: partly done: 7 requested message id(s) not requeued (listed with their reasons)\n",
        r.err());
    assertTrue(r.out().startsWith("requeued 2 row(s) of instance key eu (EXHAUSTED, FAILED)\n"));
    assertTrue(r.hasLine("eu-published-old +NOT_PARKED +PUBLISHED"), r::toString);
    // In the published log: this key's is PUBLISHED, another key's is not shown.
    assertTrue(r.hasLine("eu-published-new +NOT_PARKED +PUBLISHED"), r::toString);
    assertTrue(r.hasLine("us-published-new +OTHER_INSTANCE +-"), r::toString);
    assertTrue(r.hasLine("eu-in-flight +NOT_PARKED +IN_FLIGHT"), r::toString);
    assertTrue(r.hasLine("us-failed-1 +OTHER_INSTANCE +-"), r::toString);
    assertTrue(r.hasLine("legacy-failed +OTHER_INSTANCE +-"), r::toString);
    assertTrue(r.hasLine("no-such-id +NOT_FOUND +-"), r::toString);

    Map<String, RowState> after = outbox.snapshot();
    assertRequeued(before.get("eu-failed-1"), after.get("eu-failed-1"));
    assertRequeued(before.get("eu-exhausted-1"), after.get("eu-exhausted-1"));
    assertUnchangedExcept(before, after, "eu-failed-1", "eu-exhausted-1");
  }

  /**
   * Another session requeues the row while this requeue waits for its lock: the row was FAILED, a
   * selected status, when this statement began, and is PENDING when its update gets the lock. It is
   * reported as no longer parked, without a status, not as parked but not selected.
   */
  @Test
  void aRowRequeuedMeanwhileIsReportedAsNoLongerParked() throws Exception {
    try (Connection other = outbox.dataSource.getConnection();
        Statement st = other.createStatement()) {
      other.setAutoCommit(false);
      st.executeUpdate(
          "UPDATE outbox SET status = 'PENDING', parked_at = NULL"
              + " WHERE message_id = 'eu-failed-1'");
      CompletableFuture<Cli.Result> requeue =
          CompletableFuture.supplyAsync(
              () ->
                  outbox
                      .cli()
                      .forKey(
                          "eu",
                          "requeue",
                          "--message-id",
                          "eu-failed-1",
                          "--lock-timeout",
                          "0")); // waits as long as the other session holds the row
      Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> outbox.waitingForALock(Database.APPLICATION_NAME));
      other.commit();

      Cli.Result r = requeue.get(30, TimeUnit.SECONDS);
      assertEquals(ExitCode.NOTHING_MATCHED, r.exitCode(), r::toString);
      assertTrue(r.hasLine("eu-failed-1 +NOT_PARKED +-"), r::toString);
    }
  }

  /**
   * A batch that meets a row another transaction holds gives up after --lock-timeout instead of
   * waiting, holding the rows it locked before, for as long as that transaction takes; the batches
   * before it stay requeued, and the error says how many rows they requeued (and how many of those
   * have a passed deadline).
   */
  @Test
  void aBatchThatCannotLockARowGivesUpAfterTheLockTimeoutKeepingTheBatchesBefore()
      throws Exception {
    outbox.update("us-failed-2", "deliver_before = now() - interval '1 hour'");
    before = outbox.snapshot();
    Cli.Result r =
        outbox.whileLocked(
            () ->
                outbox
                    .cli()
                    .forKey("us", "requeue", "--all", "--batch-size", "1", "--lock-timeout", "100"),
            "us-exhausted-1");

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertTrue(
        r.err()
            .startsWith(
                "error: requeue failed after requeuing 2 row(s) in the batches before the"
                    + " failure, which stay requeued, 1 of them with a deliver_before that has"
                    + " passed, which the relay records FAILED (DEADLINE_EXPIRED) again when it"
                    + " claims them (the failed batch changed nothing;"),
        r::toString);
    assertTrue(r.err().contains("(SQLState 55P03)"), r::toString);
    Map<String, RowState> after = outbox.snapshot();
    assertRequeued(before.get("us-failed-1"), after.get("us-failed-1"));
    assertRequeued(before.get("us-failed-2"), after.get("us-failed-2"));
    assertUnchangedExcept(before, after, "us-failed-1", "us-failed-2");
  }

  @Test
  void aLockTimeoutOutOfRangeIsAUsageError() {
    for (String timeout : new String[] {"-1", "3600001"}) {
      Cli.Result r =
          outbox.cli().forKey("eu", "requeue", "--all", "--lock-timeout", timeout, "--dry-run");
      assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
      assertEquals("error: --lock-timeout must be within 0 and 3600000 milliseconds\n", r.err());
    }
  }

  @Test
  void byCorrelationIdStaysWithinTheKey() throws SQLException {
    // c-1 is also on us-failed-1, us-exhausted-1, eu-in-flight and legacy-exhausted.
    Cli.Result r = outbox.cli().forKey("eu", "requeue", "--correlation-id", "c-1");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertEquals("requeued 2 row(s) of instance key eu (EXHAUSTED, FAILED)\n", r.out());
    Map<String, RowState> after = outbox.snapshot();
    assertRequeued(before.get("eu-failed-1"), after.get("eu-failed-1"));
    assertRequeued(before.get("eu-exhausted-1"), after.get("eu-exhausted-1"));
    assertUnchangedExcept(before, after, "eu-failed-1", "eu-exhausted-1");
  }

  @Test
  void allRequeuesEveryParkedRowOfTheKeyAndNothingElse() throws SQLException {
    Cli.Result r = outbox.cli().forKey("us", "requeue", "--all", "--json");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    JsonNode json = r.json();
    assertEquals(3, json.get("requeued").asLong());
    assertEquals(0, json.get("not_requeued").size());
    Map<String, RowState> after = outbox.snapshot();
    for (String id : List.of("us-failed-1", "us-failed-2", "us-exhausted-1")) {
      assertRequeued(before.get(id), after.get(id));
    }
    assertUnchangedExcept(before, after, "us-failed-1", "us-failed-2", "us-exhausted-1");
  }

  @Test
  void allAndCorrelationIdRunInBatchesWithTheSameResult() throws SQLException {
    Cli.Result all = outbox.cli().forKey("us", "requeue", "--all", "--batch-size", "1", "--json");
    assertEquals(ExitCode.OK, all.exitCode(), all::toString);
    assertEquals(3, all.json().get("requeued").asLong());
    Cli.Result byCorrelation =
        outbox.cli().forKey("eu", "requeue", "--correlation-id", "c-1", "--batch-size", "1");
    assertEquals(ExitCode.OK, byCorrelation.exitCode(), byCorrelation::toString);
    assertEquals("requeued 2 row(s) of instance key eu (EXHAUSTED, FAILED)\n", byCorrelation.out());

    Map<String, RowState> after = outbox.snapshot();
    List<String> requeued =
        List.of("us-failed-1", "us-failed-2", "us-exhausted-1", "eu-failed-1", "eu-exhausted-1");
    requeued.forEach(id -> assertRequeued(before.get(id), after.get(id)));
    assertUnchangedExcept(before, after, requeued.toArray(String[]::new));
  }

  @Test
  void aCancelledRequeueKeepsTheBatchesItFinishedAndARerunContinues() throws SQLException {
    // Another transaction holds the last parked row of "us": the batch that reaches it waits,
    // and the statement timeout cancels it.
    try (Connection holder = outbox.dataSource.getConnection()) {
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        s.executeQuery("SELECT 1 FROM outbox WHERE message_id = 'us-exhausted-1' FOR UPDATE")
            .close();
      }
      Cli.Result cancelled =
          outbox
              .cli()
              .forKey("us", "requeue", "--all", "--batch-size", "1", "--statement-timeout", "1");
      holder.rollback();

      assertEquals(ExitCode.DATABASE, cancelled.exitCode(), cancelled::toString);
      assertTrue(cancelled.err().contains("SQLState 57014"), cancelled::toString);
      assertTrue(cancelled.err().contains("run it again"), cancelled::toString);
      // What the finished batches did is said, not dropped with the failure; the cancelled batch,
      // which the server rolled back, is not said to have perhaps been applied.
      assertTrue(
          cancelled
              .err()
              .startsWith(
                  "error: requeue failed after requeuing 2 row(s) in the batches before the"
                      + " failure, which stay requeued (the failed batch changed nothing;"
                      + " --dry-run counts what is left): "),
          cancelled::toString);
      assertEquals(1, cancelled.err().lines().count(), cancelled::toString);
    }
    Map<String, RowState> partly = outbox.snapshot();
    assertRequeued(before.get("us-failed-1"), partly.get("us-failed-1"));
    assertRequeued(before.get("us-failed-2"), partly.get("us-failed-2"));
    assertUnchangedExcept(before, partly, "us-failed-1", "us-failed-2");

    Cli.Result rerun = outbox.cli().forKey("us", "requeue", "--all");
    assertEquals(ExitCode.OK, rerun.exitCode(), rerun::toString);
    assertEquals("requeued 1 row(s) of instance key us (EXHAUSTED, FAILED)\n", rerun.out());
    assertRequeued(before.get("us-exhausted-1"), outbox.snapshot().get("us-exhausted-1"));
  }

  @Test
  void batchSizeIsBounded() {
    for (String size : List.of("0", "100001")) {
      Cli.Result r = outbox.cli().forKey("eu", "requeue", "--all", "--batch-size", size);
      assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
      assertEquals("error: --batch-size must be between 1 and 100000\n", r.err());
    }
  }

  @Test
  void statusNarrowsTheSelection() throws SQLException {
    Cli.Result r = outbox.cli().forKey("eu", "requeue", "--all", "--status", "EXHAUSTED");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertEquals("requeued 1 row(s) of instance key eu (EXHAUSTED)\n", r.out());
    assertUnchangedExcept(before, outbox.snapshot(), "eu-exhausted-1");

    Cli.Result failedOnly =
        outbox
            .cli()
            .forKey("eu", "requeue", "--message-id", "eu-failed-1", "--status", "EXHAUSTED");
    assertEquals(ExitCode.NOTHING_MATCHED, failedOnly.exitCode(), failedOnly::toString);
    assertTrue(
        failedOnly.hasLine("eu-failed-1 +STATUS_NOT_SELECTED +FAILED"), failedOnly::toString);
  }

  @Test
  void dryRunOnlyCounts() throws SQLException {
    Cli.Result r = outbox.cli().forKey("eu", "requeue", "--all", "--dry-run");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertEquals(
        "dry run: 3 EXHAUSTED, FAILED row(s) of instance key eu would be requeued\n", r.out());
    assertUnchangedExcept(before, outbox.snapshot());

    Cli.Result json =
        outbox.cli().forKey("eu", "requeue", "--correlation-id", "c-9", "--dry-run", "--json");
    assertEquals(ExitCode.NOTHING_MATCHED, json.exitCode(), json::toString);
    assertEquals(0, json.json().get("would_requeue").asLong());

    // By message id, a dry run that would leave some of them says so by its exit code.
    Cli.Result some =
        outbox
            .cli()
            .forKey(
                "eu",
                "requeue",
                "--message-id",
                "eu-failed-1",
                "--message-id",
                "us-failed-1",
                "--message-id",
                "eu-failed-1",
                "--dry-run");
    assertEquals(ExitCode.PARTIAL, some.exitCode(), some::toString);
    assertTrue(
        some.err().startsWith("error: partly done: 1 requested message id(s) would not be"),
        some::toString);
    Cli.Result every =
        outbox.cli().forKey("eu", "requeue", "--message-id", "eu-failed-1", "--dry-run");
    assertEquals(ExitCode.OK, every.exitCode(), every::toString);
    assertUnchangedExcept(before, outbox.snapshot());
  }

  @Test
  void aRowThatChangedMeanwhileIsNotTouchedAgain() throws SQLException {
    assertEquals(
        ExitCode.OK,
        outbox.cli().forKey("eu", "requeue", "--message-id", "eu-failed-2").exitCode());
    Map<String, RowState> once = outbox.snapshot();

    Cli.Result again =
        outbox.cli().forKey("eu", "requeue", "--message-id", "eu-failed-2", "--json");

    assertEquals(ExitCode.NOTHING_MATCHED, again.exitCode(), again::toString);
    assertEquals("error: nothing matched: no parked row was requeued\n", again.err());
    JsonNode skipped = again.json().get("not_requeued").get(0);
    assertEquals("NOT_PARKED", skipped.get("reason").asText());
    assertEquals("PENDING", skipped.get("status").asText());
    assertUnchangedExcept(once, outbox.snapshot());
  }

  @Test
  void nothingToRequeueExitsWithThree() throws SQLException {
    Cli.Result r = outbox.cli().forKey("asia", "requeue", "--all");
    assertEquals(ExitCode.NOTHING_MATCHED, r.exitCode(), r::toString);
    assertUnchangedExcept(before, outbox.snapshot());
  }

  /**
   * The fixture's rows are parked as the relay parks them (parked_at set), so the relay's claim
   * passes them by until a requeue has cleared parked_at: a requeue that left it would set them
   * PENDING and yet never deliver them.
   */
  @Test
  void requeuedRowsAreClaimedAgainByTheRelay() {
    List<String> parked = List.of("eu-failed-1", "eu-failed-2", "eu-exhausted-1");
    try (PostgresOutboxStore store =
        new PostgresOutboxStore(
            outbox.dataSource, OutboxTable.parse("outbox"), RelayClock.database(), null)) {
      List<String> beforeRequeue = claim(store);
      assertTrue(beforeRequeue.stream().noneMatch(parked::contains), beforeRequeue::toString);

      Cli.Result r = outbox.cli().forKey("eu", "requeue", "--all");
      assertEquals(ExitCode.OK, r.exitCode(), r::toString);

      List<String> claimed = claim(store);
      assertTrue(claimed.containsAll(parked), claimed::toString);
    }
  }

  private static List<String> claim(PostgresOutboxStore store) {
    return store
        .claim(new ClaimRequest("relay", Set.of("eu"), 100, Duration.ofMinutes(1), 5, false))
        .claimed()
        .stream()
        .map(ClaimedMessage::messageId)
        .toList();
  }

  /**
   * A requeued row keeps its deliver_before: one that has passed makes the relay record it FAILED
   * (DEADLINE_EXPIRED) again at once, so the requeue says how many such rows it sent.
   */
  @Test
  void requeueSaysHowManyRowsHaveAPassedDeadline() throws SQLException {
    outbox.update(
        "eu-failed-2",
        "last_failure_code = 'DEADLINE_EXPIRED', deliver_before = now() - interval '1 hour'");
    outbox.update("eu-failed-1", "deliver_before = now() + interval '1 day'");
    outbox.update("us-failed-2", "deliver_before = now() - interval '1 hour'");

    Cli.Result dryRun = outbox.cli().forKey("eu", "requeue", "--all", "--dry-run");
    assertEquals(ExitCode.OK, dryRun.exitCode(), dryRun::toString);
    assertEquals(
        "dry run: 3 EXHAUSTED, FAILED row(s) of instance key eu would be requeued\n"
            + "1 of them have a deliver_before that has passed: the relay records them FAILED"
            + " (DEADLINE_EXPIRED) again when it claims them\n",
        dryRun.out());

    Cli.Result all = outbox.cli().forKey("eu", "requeue", "--all", "--batch-size", "1", "--json");
    assertEquals(ExitCode.OK, all.exitCode(), all::toString);
    assertEquals(3, all.json().get("requeued").asLong());
    assertEquals(1, all.json().get("deadline_passed").asLong(), all::toString);

    Cli.Result byId = outbox.cli().forKey("us", "requeue", "--message-id", "us-failed-2");
    assertEquals(ExitCode.OK, byId.exitCode(), byId::toString);
    assertTrue(byId.hasLine("1 of them have a deliver_before that has passed: .*"), byId::toString);

    Cli.Result none = outbox.cli().forKey("us", "requeue", "--message-id", "us-failed-1");
    assertEquals("requeued 1 row(s) of instance key us (EXHAUSTED, FAILED)\n", none.out());
  }

  /**
   * A batched requeue tells its progress (the shutdown hook that says what was done when the CLI is
   * ended from outside) how many of the rows it requeued have a passed deadline, batch by batch.
   */
  @Test
  void aBatchedRequeueTellsItsProgressTheRowsWithAPassedDeadline() throws SQLException {
    outbox.update("us-failed-2", "deliver_before = now() - interval '1 hour'");
    long[] told = {-1, -1};
    BatchProgress progress =
        new BatchProgress() {
          @Override
          public void committed(long changedSoFar) {
            throw new AssertionError("a requeue tells its passed deadlines too");
          }

          @Override
          public void committed(long changedSoFar, long deadlinePassedSoFar) {
            told[0] = changedSoFar;
            told[1] = deadlinePassedSoFar;
          }

          @Override
          public boolean stopRequested() {
            return false;
          }
        };
    new OperatorStore(outbox.dataSource, OutboxTable.parse("outbox"))
        .change(
            ParkedAction.REQUEUE,
            new ParkedSelection("us", ParkedSelection.Selector.ALL, null, null, null),
            1,
            Duration.ofSeconds(5),
            progress);

    assertEquals(3, told[0]);
    assertEquals(1, told[1]);
  }

  /**
   * By correlation id the rows are found by the id's first 200 characters (what the index of parked
   * rows holds), then by the whole id: a longer id sharing that prefix is another id.
   */
  @Test
  void aLongCorrelationIdIsMatchedWholeNotByItsPrefix() throws SQLException {
    String prefix = "t".repeat(200);
    for (String id : List.of("eu-long-a", "eu-long-b")) {
      outbox.insert("eu", id, prefix + "-" + id);
      outbox.update(id, "status = 'FAILED', last_failure_code = 'POISON_PILL', parked_at = now()");
    }
    Map<String, RowState> parked = outbox.snapshot();

    Cli.Result r = outbox.cli().forKey("eu", "requeue", "--correlation-id", prefix + "-eu-long-a");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertEquals("requeued 1 row(s) of instance key eu (EXHAUSTED, FAILED)\n", r.out());
    Map<String, RowState> after = outbox.snapshot();
    assertRequeued(parked.get("eu-long-a"), after.get("eu-long-a"));
    assertUnchangedExcept(parked, after, "eu-long-a");
  }

  /**
   * --all and --correlation-id select parked rows by parked_at, as the index of parked rows does. A
   * row parked by a relay older than schema version 7 after the table was migrated has no
   * parked_at: a requeue by its message id still sends it again.
   */
  @Test
  void aRowParkedWithoutParkedAtIsRequeuedByItsMessageId() throws SQLException {
    outbox.update("eu-failed-2", "parked_at = NULL");
    Map<String, RowState> parked = outbox.snapshot();

    Cli.Result all = outbox.cli().forKey("eu", "requeue", "--all", "--status", "FAILED");
    assertEquals("requeued 1 row(s) of instance key eu (FAILED)\n", all.out(), all::toString);
    assertEquals("FAILED", outbox.snapshot().get("eu-failed-2").status());

    Cli.Result byId = outbox.cli().forKey("eu", "requeue", "--message-id", "eu-failed-2");
    assertEquals(ExitCode.OK, byId.exitCode(), byId::toString);
    Map<String, RowState> after = outbox.snapshot();
    assertRequeued(parked.get("eu-failed-2"), after.get("eu-failed-2"));
    assertUnchangedExcept(parked, after, "eu-failed-1", "eu-failed-2");
  }

  @Test
  void onlyFailedOrExhaustedCanBeAskedFor() {
    Cli.Result r = outbox.cli().forKey("eu", "requeue", "--all", "--status", "PUBLISHED");
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertEquals("error: --status must be FAILED or EXHAUSTED\n", r.err());
  }

  private static void assertRequeued(RowState before, RowState after) {
    assertEquals(before.instanceKey(), after.instanceKey());
    assertNull(after.parkedAt(), "back among the rows awaiting delivery");
    assertEquals("PENDING", after.status());
    assertEquals(0, after.attempts());
    assertNull(after.nextAttemptAt());
    assertNull(after.lastFailureCode());
    assertNull(after.kafka(), "no dead-letter copy of the next attempt");
    assertEquals(false, after.isolated());
    assertNull(after.leaseOwner());
    assertNull(after.leaseExpiresAt());
    assertEquals(before.leaseToken() + 1, after.leaseToken(), "the lease token is bumped");
    assertEquals(before.abandonedClaims(), after.abandonedClaims(), "history is kept");
  }
}
