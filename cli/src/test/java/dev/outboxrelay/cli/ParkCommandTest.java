package dev.outboxrelay.cli;

import static dev.outboxrelay.cli.OutboxFixture.assertUnchangedExcept;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.outboxrelay.cli.OutboxFixture.RowState;
import dev.outboxrelay.store.ReasonCodes;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * park parks only rows of its own key that await delivery (PENDING, AMBIGUOUS; IN_FLIGHT only when
 * asked): FAILED, PARKED_BY_OPERATOR, lease ended and token bumped, so requeue takes it back and no
 * outcome of an earlier claim applies. Never another key's rows, legacy rows, parked or published
 * rows.
 */
class ParkCommandTest {
  private OutboxFixture outbox;
  private Map<String, RowState> before;

  @BeforeEach
  void outbox() throws SQLException {
    outbox = OutboxFixture.populated("park");
    before = outbox.snapshot();
  }

  @AfterEach
  void close() {
    outbox.close();
  }

  @Test
  void parksRowsAwaitingDeliveryAndSaysWhyOthersWereNot() throws SQLException {
    Cli.Result r =
        outbox
            .cli()
            .forKey(
                "eu",
                "park",
                "--message-id",
                "eu-pending",
                "--message-id",
                "eu-ambiguous",
                "--message-id",
                "eu-in-flight",
                "--message-id",
                "eu-failed-1",
                "--message-id",
                "eu-published-new",
                "--message-id",
                "us-pending",
                "--message-id",
                "legacy-failed",
                "--message-id",
                "no-such-id");

    assertEquals(ExitCode.PARTIAL, r.exitCode(), r::toString);
    assertTrue(
        r.out().startsWith("parked 2 row(s) of instance key eu (FAILED, PARKED_BY_OPERATOR)\n"),
        r::toString);
    assertTrue(r.hasLine("eu-in-flight +IN_FLIGHT +IN_FLIGHT"), r::toString);
    assertTrue(r.hasLine("eu-failed-1 +SETTLED +FAILED"), r::toString);
    assertTrue(r.hasLine("eu-published-new +SETTLED +PUBLISHED"), r::toString);
    assertTrue(r.hasLine("us-pending +OTHER_INSTANCE +-"), r::toString);
    assertTrue(r.hasLine("legacy-failed +OTHER_INSTANCE +-"), r::toString);
    assertTrue(r.hasLine("no-such-id +NOT_FOUND +-"), r::toString);
    Map<String, RowState> after = outbox.snapshot();
    for (String id : new String[] {"eu-pending", "eu-ambiguous"}) {
      RowState parked = after.get(id);
      assertEquals("FAILED", parked.status(), id);
      assertEquals(ReasonCodes.PARKED_BY_OPERATOR, parked.lastFailureCode(), id);
      assertNotNull(parked.parkedAt(), id + " is out of the rows awaiting delivery");
      assertNull(parked.nextAttemptAt(), id);
      assertEquals(before.get(id).leaseToken() + 1, parked.leaseToken(), id);
      assertEquals(before.get(id).attempts(), parked.attempts(), id + ": no attempt charged");
    }
    assertUnchangedExcept(before, after, "eu-pending", "eu-ambiguous");

    // Parked as the relay parks a poison row: requeue takes it back.
    Cli.Result requeued =
        outbox.cli().forKey("eu", "requeue", "--message-id", "eu-pending", "--status", "FAILED");
    assertEquals(ExitCode.OK, requeued.exitCode(), requeued::toString);
    assertEquals("PENDING", outbox.snapshot().get("eu-pending").status());
  }

  @Test
  void aRowInFlightIsParkedOnlyWhenAskedAndItsHolderIsFencedOff() throws SQLException {
    // A Kafka position left from an earlier life of the row: an operator's park has no copy.
    outbox.update(
        "eu-in-flight", "kafka_topic = 'orders-dlq', kafka_partition = 0, kafka_offset = 3");
    Cli.Result r =
        outbox.cli().forKey("eu", "park", "--message-id", "eu-in-flight", "--in-flight", "--json");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    JsonNode json = r.json();
    assertEquals(1, json.get("parked").asLong());
    assertEquals(0, json.get("not_parked").size());
    assertEquals("[\"eu-in-flight\"]", json.get("parked_in_flight").toString(), r::toString);
    assertEquals(
        "[\"eu-in-flight\"]", json.get("parked_under_live_lease").toString(), "worker-1's lease");
    RowState parked = outbox.snapshot().get("eu-in-flight");
    assertEquals("FAILED", parked.status());
    assertNull(parked.leaseOwner());
    assertNull(parked.leaseExpiresAt());
    assertNull(parked.kafka(), "no dead-letter copy: discard --dead-lettered leaves it");
    assertEquals(8, parked.leaseToken(), "token 7 bumped: worker-1's outcome cannot apply");
    assertUnchangedExcept(before, outbox.snapshot(), "eu-in-flight");
  }

  /**
   * A row a stopped or failed task left in flight (its lease expired) is parked without the live
   * lease's warning, in the dry run as in the park.
   */
  @Test
  void aRowLeftInFlightUnderAnExpiredLeaseIsNotSaidLive() throws SQLException {
    Cli.Result live =
        outbox
            .cli()
            .forKey("eu", "park", "--message-id", "eu-in-flight", "--in-flight", "--dry-run");
    assertTrue(
        live.hasLine("  eu-in-flight  \\(lease live: a running task holds it; .*\\)"),
        live::toString);

    outbox.update("eu-in-flight", "lease_expires_at = now() - interval '1 minute'");
    for (boolean dryRun : new boolean[] {true, false}) {
      Cli.Result r =
          dryRun
              ? outbox
                  .cli()
                  .forKey("eu", "park", "--message-id", "eu-in-flight", "--in-flight", "--dry-run")
              : outbox.cli().forKey("eu", "park", "--message-id", "eu-in-flight", "--in-flight");

      assertEquals(ExitCode.OK, r.exitCode(), r::toString);
      assertTrue(r.hasLine("  eu-in-flight"), r::toString);
      assertTrue(r.out().lines().noneMatch(l -> l.contains("lease live")), r::toString);
    }
    assertEquals("FAILED", outbox.snapshot().get("eu-in-flight").status());
  }

  /**
   * The rows that were in flight when parked are named: their records may be in Kafka already, and
   * a requeue may send them twice. Also a row that the statement's snapshot saw PENDING and that a
   * relay claimed while the park waited for its lock: it is parked IN_FLIGHT, and said so.
   */
  @Test
  void theRowsParkedInFlightAreNamedEvenOneClaimedWhileTheParkWaited() throws Exception {
    try (Connection claimer = outbox.dataSource.getConnection();
        Statement st = claimer.createStatement()) {
      claimer.setAutoCommit(false);
      st.executeUpdate(
          "UPDATE outbox SET status = 'IN_FLIGHT', lease_owner = 'worker-2',"
              + " lease_token = lease_token + 1, lease_expires_at = now() + interval '1 hour'"
              + " WHERE message_id = 'eu-pending'");
      CompletableFuture<Cli.Result> park =
          CompletableFuture.supplyAsync(
              () ->
                  outbox
                      .cli()
                      .forKey(
                          "eu",
                          "park",
                          "--message-id",
                          "eu-pending",
                          "--message-id",
                          "eu-ambiguous",
                          "--in-flight",
                          "--lock-timeout",
                          "0")); // waits as long as the claim holds the row
      Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> outbox.waitingForALock(Database.APPLICATION_NAME));
      claimer.commit();

      Cli.Result r = park.get(30, TimeUnit.SECONDS);
      assertEquals(ExitCode.OK, r.exitCode(), r::toString);
      assertTrue(r.out().startsWith("parked 2 row(s) of instance key eu"), r::toString);
      assertTrue(r.hasLine("in flight when parked: .*requeue may send them twice"), r::toString);
      assertTrue(
          r.hasLine("  eu-pending  \\(lease live: a running task held it; .*lost claim\\)"),
          r::toString);
      assertTrue(r.out().lines().noneMatch(l -> l.startsWith("  eu-ambiguous")), r::toString);
    }
    assertEquals("FAILED", outbox.snapshot().get("eu-pending").status());
  }

  /**
   * A park that meets a row another transaction holds (a task's publish of it, say) gives up after
   * --lock-timeout, changing nothing: waiting without limit, it held the rows it had locked before
   * it (eu-pending comes first in seq order), and the relay's writes to them waited on it.
   */
  @Test
  void aParkThatCannotLockARowGivesUpAfterTheLockTimeoutAndChangesNothing() throws Exception {
    Cli.Result r = outbox.whileLocked(() -> parkPendingAndAmbiguous("100"), "eu-ambiguous");

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertEquals("", r.out());
    assertEquals(
        "error: park failed: DB_LOCK_NOT_AVAILABLE (SQLState 55P03): another transaction held a"
            + " lock on the table, one of its rows or an entry of its published log for longer than"
            + " the lock timeout"
            + " (--lock-timeout of migrate, requeue, discard, park and purge); what waited for it was"
            + " rolled back: run the command again when that transaction has ended\n",
        r.err());
    assertUnchangedExcept(before, outbox.snapshot());
  }

  /**
   * A park whose connection is lost before its reply came cannot tell whether its commit went
   * through, and says so instead of a plain failure. (Here the server ended it while it waited for
   * a lock, before its commit: nothing was parked, as a rerun or inspect would show.)
   */
  @Test
  void aParkWhoseConnectionIsLostSaysTheChangeMayHaveBeenApplied() throws Exception {
    Cli.Result r = outbox.endedWhileWaiting(() -> parkPendingAndAmbiguous("0"), "eu-ambiguous");

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertEquals(
        "error: park failed: DB_UNAVAILABLE (SQLState 57P01): the database is unreachable or"
            + " unavailable; check --jdbc-url, the network and that the server accepts"
            + " connections; the change may have been applied before the connection was lost:"
            + " run it again (it reports what is done) or inspect the ids\n",
        r.err());
    assertUnchangedExcept(before, outbox.snapshot());
  }

  /** Parks eu-pending and eu-ambiguous by message id, waiting at most {@code lockTimeout} ms. */
  private Cli.Result parkPendingAndAmbiguous(String lockTimeout) {
    return outbox
        .cli()
        .forKey(
            "eu",
            "park",
            "--message-id",
            "eu-pending",
            "--message-id",
            "eu-ambiguous",
            "--lock-timeout",
            lockTimeout);
  }

  @Test
  void dryRunChangesNothingAndNothingToParkExitsWithThree() throws SQLException {
    Cli.Result dry =
        outbox
            .cli()
            .forKey("eu", "park", "--message-id", "eu-pending", "--message-id", "x", "--dry-run");
    assertEquals(ExitCode.PARTIAL, dry.exitCode(), dry::toString);
    assertEquals(
        "error: partly done: 1 requested message id(s) would not be parked (listed with their"
            + " reasons)\n",
        dry.err());
    assertTrue(
        dry.out()
            .startsWith(
                "dry run: 1 row(s) of instance key eu would be parked (FAILED,"
                    + " PARKED_BY_OPERATOR)\n"),
        dry::toString);
    assertTrue(dry.hasLine("x +NOT_FOUND +-"), dry::toString);
    assertUnchangedExcept(before, outbox.snapshot());

    Cli.Result none = outbox.cli().forKey("eu", "park", "--message-id", "eu-failed-2");
    assertEquals(ExitCode.NOTHING_MATCHED, none.exitCode(), none::toString);
    assertTrue(none.err().endsWith("error: nothing matched: no row was parked\n"), none::toString);
    assertUnchangedExcept(before, outbox.snapshot());
  }

  /**
   * A row in flight under an exactly-once claim may be committed in Kafka though not yet recorded:
   * parked, the next start's recovery could not record it, and a requeue would send it twice.
   */
  @Test
  void aRowInFlightUnderAnExactlyOnceClaimIsNeverParked() throws SQLException {
    outbox.exec(
        "UPDATE outbox SET lease_epoch = 42, claim_batch = 1 WHERE message_id = 'eu-in-flight'");
    Map<String, RowState> leased = outbox.snapshot();

    Cli.Result r =
        outbox.cli().forKey("eu", "park", "--message-id", "eu-in-flight", "--in-flight", "--json");

    assertEquals(ExitCode.NOTHING_MATCHED, r.exitCode(), r::toString);
    JsonNode refused = r.json().get("not_parked").get(0);
    assertEquals("IN_FLIGHT_EXACTLY_ONCE", refused.get("reason").asText(), r::toString);
    assertEquals("IN_FLIGHT", refused.get("status").asText());
    assertUnchangedExcept(leased, outbox.snapshot());
  }

  @Test
  void aRepeatedIdCountsOnceAndADryRunOfARowInFlightLocksNothing() throws SQLException {
    Cli.Result dry =
        outbox
            .cli()
            .forKey(
                "eu",
                "park",
                "--message-id",
                "eu-in-flight",
                "--message-id",
                "eu-in-flight",
                "--message-id",
                "nope",
                "--message-id",
                "nope",
                "--in-flight",
                "--dry-run",
                "--json");
    assertEquals(ExitCode.PARTIAL, dry.exitCode(), dry::toString); // "nope" would not be
    assertEquals(1, dry.json().get("would_park").asLong(), dry::toString);
    assertEquals("[\"eu-in-flight\"]", dry.json().get("would_park_in_flight").toString());
    assertEquals(1, dry.json().get("not_parked").size(), dry::toString);
    assertUnchangedExcept(before, outbox.snapshot());

    Cli.Result twice =
        outbox
            .cli()
            .forKey(
                "eu", "park", "--message-id", "eu-pending", "--message-id", "eu-pending", "--json");
    assertEquals(ExitCode.OK, twice.exitCode(), twice::toString);
    assertEquals(1, twice.json().get("parked").asLong(), twice::toString);
  }

  @Test
  void aBlankIdIsAUsageError() {
    Cli.Result blank = outbox.cli().forKey("eu", "park", "--message-id", " ");
    assertEquals(ExitCode.USAGE, blank.exitCode(), blank::toString);
  }
}
