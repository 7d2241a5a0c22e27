package dev.outboxrelay.cli;

import static dev.outboxrelay.cli.OutboxFixture.assertUnchangedExcept;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.cli.OutboxFixture.RowState;
import dev.outboxrelay.cli.command.PurgeCommand;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * purge deletes only old PUBLISHED rows of its own key, in bounded batches: entries of the
 * published log and rows published before schema version 9, still in the table.
 */
class PurgeCommandTest {
  private static final int EXTRA_OLD = 24;

  private OutboxFixture outbox;
  private Map<String, RowState> before;
  private final List<String> oldEuRows = new ArrayList<>(List.of("eu-published-old"));

  @BeforeEach
  void outbox() throws SQLException {
    outbox = OutboxFixture.populated("purge");
    for (int i = 0; i < EXTRA_OLD; i++) {
      String id = "eu-old-" + i;
      outbox.insert("eu", id, null);
      if (i % 2 == 0) { // published before schema version 9: still in the table
        outbox.update(id, "status = 'PUBLISHED', published_at = '2020-01-01Z'");
      } else { // from version 9 on: in the published log
        outbox.publishIntoLog(id, "TIMESTAMPTZ '2020-01-01Z'", i);
      }
      oldEuRows.add(id);
    }
    // Old entries of another key in the log: never purged for eu.
    outbox.insert("us", "us-old-log", null);
    outbox.publishIntoLog("us-old-log", "TIMESTAMPTZ '2020-01-01Z'", 99);
    // Old, but not PUBLISHED: never purged.
    outbox.update("eu-failed-2", "created_at = '2019-01-01Z'");
    before = outbox.snapshot();
  }

  @AfterEach
  void close() {
    outbox.close();
  }

  @Test
  void deletesOldPublishedRowsOfTheKeyInBatchesWithProgress() throws SQLException {
    Cli.Result r =
        outbox
            .cli()
            .forKey("eu", "purge", "--published-before", "2021-01-01", "--batch-size", "10");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertEquals(
        "deleted 10 (10 so far)\n"
            + "deleted 10 (20 so far)\n"
            + "deleted 5 (25 so far)\n"
            + "purged 25 PUBLISHED row(s) of instance key eu published before"
            + " 2021-01-01T00:00:00Z in 3 batch(es)\n",
        r.out());
    Map<String, RowState> after = outbox.snapshot();
    for (String id : oldEuRows) {
      assertFalse(after.containsKey(id), id + " is deleted");
    }
    Map<String, RowState> expected = new LinkedHashMap<>(before);
    oldEuRows.forEach(expected::remove);
    assertUnchangedExcept(expected, after);
    assertEquals(0, outbox.count("instance_key = 'eu' AND status = 'PUBLISHED'"));
    assertEquals(1, outbox.logCount("instance_key = 'eu'")); // eu-published-new, published now
    assertEquals(1, outbox.count("message_id = 'us-published-old'"));
    assertEquals(1, outbox.logCount("message_id = 'us-old-log'"));
    assertEquals(1, outbox.count("message_id = 'legacy-published-old'"));
  }

  /**
   * A batch that deletes nothing is not taken for "nothing left": a row still in the table that
   * another session holds locked is skipped, and purge says how many are left and to run it again,
   * instead of reporting the purge done. Run again once the lock is gone, it deletes the rest.
   */
  @Test
  void rowsLeftLockedBySomeoneElseAreReported() throws SQLException {
    try (java.sql.Connection holder = outbox.dataSource.getConnection();
        java.sql.Statement lock = holder.createStatement()) {
      holder.setAutoCommit(false);
      lock.execute("SELECT 1 FROM outbox WHERE message_id = 'eu-old-0' FOR UPDATE");

      Cli.Result r = outbox.cli().forKey("eu", "purge", "--published-before", "2021-01-01");

      assertEquals(ExitCode.PARTIAL, r.exitCode(), r::toString);
      assertEquals("error: partly done: rows published before the cutoff are left\n", r.err());
      assertEquals(
          "deleted 24 (24 so far)\n"
              + "purged 24 PUBLISHED row(s) of instance key eu published before"
              + " 2021-01-01T00:00:00Z in 1 batch(es)\n"
              + "1 more left: locked by another session (the relay's own retention, or a"
              + " transaction holding them); run purge again\n",
          r.out());
      assertEquals(1, outbox.count("message_id = 'eu-old-0'"));
      holder.rollback();
    }

    Cli.Result again = outbox.cli().forKey("eu", "purge", "--published-before", "2021-01-01");

    assertTrue(again.out().startsWith("deleted 1 (1 so far)\npurged 1 "), again::toString);
    assertEquals(0, outbox.count("message_id = 'eu-old-0'"));
    assertEquals(ExitCode.OK, again.exitCode(), again::toString);
  }

  /**
   * An entry of the published log that another session holds is waited for, at most --lock-timeout:
   * without a bound purge waited as long as the other session held it, saying nothing. It says what
   * the batches before deleted, and names the lock.
   */
  @Test
  void aLockedEntryOfThePublishedLogIsWaitedForAtMostTheLockTimeout() throws SQLException {
    try (java.sql.Connection holder = outbox.dataSource.getConnection();
        java.sql.Statement lock = holder.createStatement()) {
      holder.setAutoCommit(false);
      lock.execute("SELECT 1 FROM outbox_published WHERE message_id = 'eu-old-21' FOR UPDATE");

      Cli.Result r =
          assertTimeoutPreemptively(
              Duration.ofMinutes(2), // a hang guard only: without a bound it never returns
              () ->
                  outbox
                      .cli()
                      .forKey(
                          "eu",
                          "purge",
                          "--published-before",
                          "2021-01-01",
                          "--batch-size",
                          "5",
                          "--lock-timeout",
                          "100"));

      assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
      assertTrue(
          r.out()
              .endsWith(
                  "failed after deleting 10 in 2 batch(es), which stay deleted; the failed batch"
                      + " deleted nothing\n"),
          r::toString);
      assertTrue(
          r.err()
              .startsWith(
                  "error: purge failed: DB_LOCK_NOT_AVAILABLE (SQLState 55P03): another"
                      + " transaction held a lock"),
          r::toString);
      assertTrue(r.err().contains("--lock-timeout of migrate, requeue, discard, park and purge"));
      holder.rollback();
    }
    assertEquals(1, outbox.logCount("message_id = 'eu-old-21'"));
  }

  /** The rows left are counted up to a bound: they may be most of a huge published log. */
  @Test
  void rowsLeftAreCountedUpToABound() throws SQLException {
    long many = PurgeCommand.LEFT_COUNTED_UP_TO + 1;
    outbox.exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " status, published_at) SELECT 'eu-locked-' || g, 'eu', 'order', 'o', 'created',"
            + " 'PUBLISHED', '2020-01-01Z' FROM generate_series(1, "
            + many
            + ") g");
    try (java.sql.Connection holder = outbox.dataSource.getConnection();
        java.sql.Statement lock = holder.createStatement()) {
      holder.setAutoCommit(false);
      lock.execute("SELECT 1 FROM outbox WHERE message_id LIKE 'eu-locked-%' FOR UPDATE");

      Cli.Result r = outbox.cli().forKey("eu", "purge", "--published-before", "2021-01-01");

      assertEquals(ExitCode.PARTIAL, r.exitCode(), r::toString);
      assertTrue(
          r.out()
              .endsWith(
                  "\n"
                      + PurgeCommand.LEFT_COUNTED_UP_TO
                      + " or more left: locked by another"
                      + " session (the relay's own retention, or a transaction holding them); run purge"
                      + " again\n"),
          r::toString);
      holder.rollback();
    }
    Cli.Result dryRun =
        outbox.cli().forKey("eu", "purge", "--published-before", "2021-01-01", "--dry-run");
    assertTrue(dryRun.out().startsWith("dry run: " + many + " PUBLISHED row(s)"), dryRun::toString);
  }

  @Test
  void dryRunOnlyCounts() throws SQLException {
    Cli.Result r =
        outbox
            .cli()
            .forKey("eu", "purge", "--published-before", "2021-01-01T00:00:00Z", "--dry-run");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertEquals(
        "dry run: 25 PUBLISHED row(s) of instance key eu published before"
            + " 2021-01-01T00:00:00Z would be deleted\n",
        r.out());
    assertUnchangedExcept(before, outbox.snapshot());
  }

  @Test
  void anAgeIsTakenFromTheDatabaseClock() throws SQLException {
    // 2020 is more than 365 days ago; us-published-new was published just now.
    Cli.Result r = outbox.cli().forKey("us", "purge", "--published-before", "P365D");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertTrue(r.hasLine("purged 2 PUBLISHED row\\(s\\) of instance key us published before .*"));
    assertEquals(0, outbox.count("message_id = 'us-published-old'"));
    assertEquals(0, outbox.logCount("message_id = 'us-old-log'"));
    assertEquals(1, outbox.logCount("message_id = 'us-published-new'"));
    assertUnchangedExcept(before, outbox.snapshot(), "us-published-old", "us-old-log");
  }

  @Test
  void nothingOldEnoughDeletesNothing() throws SQLException {
    Cli.Result r = outbox.cli().forKey("eu", "purge", "--published-before", "2000-01-01");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertTrue(r.out().startsWith("purged 0 PUBLISHED row(s)"), r::toString);
    assertUnchangedExcept(before, outbox.snapshot());
  }

  @Test
  void aCutoffInTheFutureIsRefused() throws SQLException {
    Cli.Result r = outbox.cli().forKey("eu", "purge", "--published-before", "2999-01-01");

    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertTrue(
        r.err().startsWith("error: --published-before lies in the future by the database clock"),
        r::toString);
    // A usage error never repeats a typed value (its digits alone may be in the clock's
    // microseconds: "now ...51.929999Z").
    assertFalse(r.err().contains("2999-01-01"), r::toString);
    assertUnchangedExcept(before, outbox.snapshot());
  }

  /**
   * A batch that fails leaves the batches before it deleted, and says so with the progress lines.
   * The role may delete from the published log but not from the table: the second batch's table
   * delete fails, and undoes its log delete (one transaction).
   */
  @Test
  void aFailedBatchSaysWhatWasDeletedBeforeIt() throws SQLException {
    TestDatabase.ensurePasswordRole();
    String role = TestDatabase.PASSWORD_ROLE;
    outbox.exec("GRANT SELECT ON outbox, outbox_published TO " + role);
    outbox.exec("GRANT DELETE ON outbox_published TO " + role);
    outbox.exec("GRANT UPDATE (status) ON outbox TO " + role);
    Cli cli =
        new Cli()
            .env(ConnectionOptions.JDBC_URL_ENV, outbox.url)
            .env(ConnectionOptions.USER_ENV, role)
            .env(ConnectionOptions.PASSWORD_ENV, TestDatabase.PASSWORD);

    // eu's old rows: 12 in the published log, 13 in the table.
    Cli.Result r =
        cli.forKey("eu", "purge", "--published-before", "2021-01-01", "--batch-size", "10");

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertEquals(
        "deleted 10 (10 so far)\n"
            + "failed after deleting 10 in 1 batch(es), which stay deleted; the failed batch"
            + " deleted nothing\n",
        r.out());
    assertTrue(
        r.err().startsWith("error: purge failed: DB_PERMISSION_DENIED (SQLState 42501)"),
        r::toString);
    // The failed batch deleted nothing: its log entries and the table's rows stayed.
    assertEquals(2, outbox.logCount("instance_key = 'eu' AND published_at < '2021-01-01Z'"));
    assertEquals(13, outbox.count("instance_key = 'eu' AND status = 'PUBLISHED'"));
  }

  /**
   * A publication of deletes (Debezium's FOR ALL TABLES) with the published log's replica identity
   * taken away: PostgreSQL refuses the delete with 55000, which alone reads as a server in
   * recovery. purge names the cause and the fix, not the network.
   */
  @Test
  void aLogWithoutReplicaIdentityUnderAPublicationIsNamed() throws SQLException {
    outbox.exec("CREATE PUBLICATION everything FOR ALL TABLES");
    outbox.exec("ALTER TABLE outbox_published REPLICA IDENTITY DEFAULT");

    Cli.Result r = outbox.cli().forKey("eu", "purge", "--published-before", "2021-01-01");

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertTrue(
        r.err()
            .startsWith(
                "error: purge failed: PUBLISHED_LOG_WITHOUT_REPLICA_IDENTITY (SQLState 55000): a"
                    + " publication that publishes deletes includes the published log"),
        r::toString);
    assertUnchangedExcept(before, outbox.snapshot());
  }

  @Test
  void badCutoffsAreUsageErrors() {
    for (String cutoff : new String[] {"yesterday", "2021-01-01T00:00:00", "P-1D", "2021-13-01"}) {
      Cli.Result r = outbox.cli().forKey("eu", "purge", "--published-before", cutoff);
      assertEquals(ExitCode.USAGE, r.exitCode(), cutoff + " -> " + r);
    }
  }
}
