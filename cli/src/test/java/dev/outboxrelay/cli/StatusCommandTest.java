package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.outboxrelay.cli.operator.OldestRow;
import dev.outboxrelay.store.BacklogSnapshot;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** status counts, lag and oldest parked rows of one key, never another key's or legacy rows. */
class StatusCommandTest {
  private static OutboxFixture outbox;

  @BeforeAll
  static void outbox() throws SQLException {
    outbox = OutboxFixture.populated("status");
  }

  @AfterAll
  static void close() {
    outbox.close();
  }

  /**
   * The snapshot's isolation and read-only mode are the transaction's alone, set by its first
   * statement: as a session setting (JDBC's setTransactionIsolation in pgjdbc, a statement before
   * the transaction) they could reach another server connection behind a pooler in transaction
   * mode, and stay on it.
   */
  @Test
  void theSnapshotIsTheTransactionsAloneNotTheSessions() {
    try (Database database = openDatabase()) {
      String settings =
          database.inOneReadOnlyTransaction(
              c -> {
                try (var s = c.createStatement();
                    var rs =
                        s.executeQuery(
                            "SELECT current_setting('transaction_isolation') || ','"
                                + " || current_setting('transaction_read_only') || ','"
                                + " || current_setting('default_transaction_isolation') || ','"
                                + " || current_setting('default_transaction_read_only')")) {
                  rs.next();
                  return rs.getString(1);
                }
              });
      assertEquals("repeatable read,on,read committed,off", settings);
    }
  }

  /**
   * status reads its figures in one snapshot: a row written between two of its statements is in
   * none of them, so the counts, the lag and the oldest rows agree. Nothing is written.
   */
  @Test
  void theFiguresAreReadInOneSnapshot() throws SQLException {
    try (Database database = openDatabase()) {
      long[] pending =
          database.inOneSnapshot(
              s -> {
                long before =
                    s.relayStore().inspect(Set.of("eu"), false).count(MessageStatus.PENDING);
                try {
                  outbox.insert("eu", "written-meanwhile", "c-snapshot");
                } catch (SQLException e) {
                  throw new AssertionError(e);
                }
                long after =
                    s.relayStore().inspect(Set.of("eu"), false).count(MessageStatus.PENDING);
                return new long[] {before, after};
              });

      assertEquals(pending[0], pending[1], "the row written meanwhile is not seen");
      assertEquals(
          pending[0] + 1,
          database.relayStore().inspect(Set.of("eu"), false).count(MessageStatus.PENDING),
          "but it was written");
    } finally {
      outbox.exec("DELETE FROM outbox WHERE message_id = 'written-meanwhile'");
    }
  }

  /**
   * Every figure is judged at one instant, the transaction's start, not at its own statement's: the
   * rows are as the first statement (a count, which may take minutes) saw them, so by a later clock
   * a live lease would look expired and the lag and ages would grow. Rows written after the
   * transaction began but before its first read are in the snapshot, and their times lie after its
   * start and before each of its statements: a lease that expires at the time of its write has not
   * expired at the start, and a row created half a millisecond before its write is less than half a
   * millisecond old then (0 ms), older than that by any later statement (at least 1 ms). Nothing
   * waits: each later statement simply runs later.
   */
  @Test
  void everyFigureIsJudgedAtTheTransactionsStart() throws SQLException {
    try (OutboxFixture clock = OutboxFixture.populated("status_clock");
        Database database = openDatabase(clock)) {
      Map<String, Long> figures =
          database.inOneSnapshot(
              s -> {
                // The transaction has begun; its first read below takes its snapshot.
                try {
                  clock.insert("clock", "clock-in-flight", null);
                  clock.update(
                      "clock-in-flight",
                      "status = 'IN_FLIGHT', lease_owner = 'worker-1', lease_token = 1,"
                          + " lease_expires_at = clock_timestamp(),"
                          + " created_at = clock_timestamp() - interval '500 microseconds'");
                  clock.insert("clock", "clock-failed", null);
                  clock.update(
                      "clock-failed",
                      "status = 'FAILED', last_failure_code = 'POISON_PILL',"
                          + " parked_at = clock_timestamp(),"
                          + " created_at = clock_timestamp() - interval '500 microseconds'");
                } catch (SQLException e) {
                  throw new AssertionError(e);
                }
                // What status reads, in its order.
                BacklogSnapshot backlog = s.relayStore().inspect(Set.of("clock"), true);
                Optional<OldestRow> failed =
                    s.operatorStore().oldest("clock", MessageStatus.FAILED);
                Map<String, Long> read = new LinkedHashMap<>();
                read.put("in flight", backlog.count(MessageStatus.IN_FLIGHT));
                read.put("failed", backlog.count(MessageStatus.FAILED));
                read.put("lag ms", backlog.lag().toMillis());
                read.put("oldest failed age ms", failed.orElseThrow().age().toMillis());
                read.put("expired leases", s.operatorStore().countExpiredLeases("clock"));
                return read;
              });

      Map<String, Long> expected = new LinkedHashMap<>();
      expected.put("in flight", 1L); // the rows written before the first read are in the snapshot
      expected.put("failed", 1L);
      expected.put("lag ms", 0L);
      expected.put("oldest failed age ms", 0L);
      expected.put("expired leases", 0L);
      assertEquals(expected, figures);

      // By a later transaction's start the lease has expired and the rows are older: judged by
      // their own statements' time, the figures above would have said so.
      Cli.Result later = clock.cli().forKey("clock", "status", "--json");
      assertEquals(ExitCode.OK, later.exitCode(), later::toString);
      assertEquals(1, later.json().get("expired_leases").asLong(), later::toString);
      assertTrue(later.json().get("lag_ms").asLong() >= 1, later::toString);
      assertTrue(later.json().get("oldest_failed").get("age_ms").asLong() >= 1, later::toString);
    }
  }

  @Test
  void jsonCountsOnlyTheKeysOwnRows() {
    Cli.Result r = outbox.cli().forKey("eu", "status", "--json");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    JsonNode json = r.json();
    assertEquals("eu", json.get("instance_key").asText());
    assertEquals("outbox", json.get("table").asText());
    JsonNode counts = json.get("counts");
    assertEquals(1, counts.get("PENDING").asLong());
    assertEquals(1, counts.get("IN_FLIGHT").asLong());
    assertEquals(1, counts.get("AMBIGUOUS").asLong());
    assertEquals(2, counts.get("FAILED").asLong());
    assertEquals(1, counts.get("EXHAUSTED").asLong());
    // eu-published-old in the table (published before schema version 9), eu-published-new in
    // the published log.
    assertEquals(2, counts.get("PUBLISHED").asLong());
    assertEquals(8, json.get("total").asLong(), "legacy rows and us rows are not counted");
    assertEquals(0, json.get("expired_leases").asLong(), "eu-in-flight's lease is live");

    // The oldest active row was created 2 hours ago by the database clock.
    assertTrue(json.get("lag_ms").asLong() >= Duration.ofHours(2).toMillis(), r::toString);
    JsonNode failed = json.get("oldest_failed");
    assertEquals("eu-failed-1", failed.get("message_id").asText());
    assertEquals("POISON_PILL", failed.get("reason_code").asText());
    assertTrue(failed.get("age_ms").asLong() >= Duration.ofDays(3).toMillis());
    JsonNode exhausted = json.get("oldest_exhausted");
    assertEquals("eu-exhausted-1", exhausted.get("message_id").asText());
    assertEquals("BROKER_TIMEOUT", exhausted.get("reason_code").asText());
    assertEquals("", r.err());
  }

  @Test
  void humanTableShowsCountsLagAndOldestParkedRows() {
    Cli.Result r = outbox.cli().forKey("us", "status");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    String out = r.out();
    assertTrue(out.startsWith("table outbox, instance key us\n"), out);
    assertTrue(r.hasLine("PENDING +1"), out);
    assertTrue(r.hasLine("FAILED +2"), out);
    assertTrue(r.hasLine("PUBLISHED +2"), out);
    assertTrue(r.hasLine("total +8"), out);
    assertTrue(r.hasLine("expired leases: 0 \\(IN_FLIGHT rows whose lease has expired\\)"), out);
    assertTrue(
        r.hasLine("lag: 2h \\d+m \\(age of the oldest PENDING, AMBIGUOUS or IN_FLIGHT row\\)"),
        out);
    assertTrue(r.hasLine("FAILED +us-failed-1 +POISON_PILL +3d \\d+h"), out);
    assertTrue(r.hasLine("EXHAUSTED +us-exhausted-1 +BROKER_TIMEOUT +\\S+.*"), out);
    assertFalse(out.contains("eu-"), out);
    assertFalse(out.contains("legacy"), out); // legacy-failed and legacy-exhausted are parked too
  }

  /**
   * IN_FLIGHT rows whose lease has expired (their claimer stopped) are counted apart from the live
   * ones, by the database clock, for the key only.
   */
  @Test
  void expiredLeasesAreCountedApartForTheKeyOnly() throws SQLException {
    try (OutboxFixture leases = OutboxFixture.populated("status_leases")) {
      for (String id : new String[] {"eu-abandoned-1", "eu-abandoned-2", "us-abandoned"}) {
        leases.insert(id.substring(0, 2), id, null);
        leases.update(
            id,
            "status = 'IN_FLIGHT', lease_owner = 'worker-2', lease_token = 2,"
                + " lease_expires_at = now() - interval '1 minute'");
      }
      // A legacy row (no key) with an expired lease is not counted either.
      leases.exec("ALTER TABLE outbox DROP CONSTRAINT outbox_instance_key_required");
      leases.update(
          "legacy-exhausted",
          "status = 'IN_FLIGHT', lease_owner = 'worker-0', lease_token = 1, parked_at = NULL,"
              + " lease_expires_at = now() - interval '1 minute'");
      leases.exec(
          "ALTER TABLE outbox ADD CONSTRAINT outbox_instance_key_required"
              + " CHECK (instance_key IS NOT NULL) NOT VALID");

      Cli.Result eu = leases.cli().forKey("eu", "status", "--json");
      assertEquals(ExitCode.OK, eu.exitCode(), eu::toString);
      assertEquals(3, eu.json().get("counts").get("IN_FLIGHT").asLong(), eu::toString);
      assertEquals(2, eu.json().get("expired_leases").asLong(), eu::toString);

      Cli.Result us = leases.cli().forKey("us", "status");
      assertEquals(ExitCode.OK, us.exitCode(), us::toString);
      assertTrue(us.hasLine("IN_FLIGHT +2"), us::toString);
      assertTrue(
          us.hasLine("expired leases: 1 \\(IN_FLIGHT rows whose lease has expired\\)"),
          us::toString);

      Cli.Result none = leases.cli().forKey("asia", "status", "--json");
      assertEquals(0, none.json().get("expired_leases").asLong(), none::toString);
    }
  }

  /**
   * A parked row whose created_at the application set to an infinite time has no age: shown as
   * unknown (null in JSON), and the lag is the oldest row's with a time; the subtraction failed,
   * and status with it, while such a row was the oldest.
   */
  @Test
  void aRowCreatedAtAnInfiniteTimeHasNoAge() throws SQLException {
    try (OutboxFixture infinite = OutboxFixture.populated("status_infinite")) {
      infinite.update("eu-failed-1", "created_at = '-infinity'");
      infinite.insert("eu", "eu-pending-ancient", null);
      infinite.update("eu-pending-ancient", "created_at = '-infinity'");

      Cli.Result json = infinite.cli().forKey("eu", "status", "--json");
      assertEquals(ExitCode.OK, json.exitCode(), json::toString);
      JsonNode failed = json.json().get("oldest_failed");
      assertEquals("eu-failed-1", failed.get("message_id").asText(), json::toString);
      assertTrue(failed.get("age_ms").isNull(), json::toString);
      long lag = json.json().get("lag_ms").asLong();
      assertTrue(lag >= Duration.ofHours(2).toMillis(), json::toString);
      assertTrue(lag < Duration.ofDays(1).toMillis(), json::toString);

      Cli.Result text = infinite.cli().forKey("eu", "status");
      assertEquals(ExitCode.OK, text.exitCode(), text::toString);
      assertTrue(text.hasLine("FAILED +eu-failed-1 +POISON_PILL +unknown"), text::toString);
    }
  }

  @Test
  void aKeyWithoutRowsIsAllZeros() {
    Cli.Result r = outbox.cli().forKey("asia", "status", "--json");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    JsonNode json = r.json();
    assertEquals(0, json.get("total").asLong());
    assertEquals(0, json.get("lag_ms").asLong());
    assertTrue(json.get("oldest_failed").isNull());
    assertTrue(json.get("oldest_exhausted").isNull());
    assertEquals(
        "note: instance key asia has no row in outbox: check the key if rows were expected\n",
        r.err(),
        "a mistyped key does not look like a healthy one");
  }

  /**
   * --no-count-published leaves out the one figure that reads every entry the published log keeps
   * (hundreds of millions at a week's retention): shown as not counted, null in JSON, out of the
   * total; the others are counted as ever.
   */
  @Test
  void thePublishedLogIsCountedUnlessLeftOut() {
    Cli.Result text = outbox.cli().forKey("eu", "status", "--no-count-published");
    assertEquals(ExitCode.OK, text.exitCode(), text::toString);
    assertTrue(text.hasLine("PUBLISHED +not counted"), text::toString);
    assertTrue(text.hasLine("FAILED +2"), text::toString);
    assertTrue(text.hasLine("total +6"), text::toString);

    Cli.Result json = outbox.cli().forKey("eu", "status", "--json", "--no-count-published");
    assertEquals(ExitCode.OK, json.exitCode(), json::toString);
    assertTrue(json.json().get("counts").get("PUBLISHED").isNull(), json::toString);
    assertEquals(1, json.json().get("counts").get("PENDING").asLong());
    assertEquals(6, json.json().get("total").asLong());

    Cli.Result counted = outbox.cli().forKey("eu", "status", "--json", "--count-published");
    assertEquals(2, counted.json().get("counts").get("PUBLISHED").asLong(), counted::toString);
  }

  /** The CLI's database, as a command opens it, for the table of this test's fixture. */
  private static Database openDatabase() {
    return openDatabase(outbox);
  }

  private static Database openDatabase(OutboxFixture fixture) {
    ConnectionOptions connection = new ConnectionOptions();
    new CommandLine(connection).parseArgs("--jdbc-url", fixture.url);
    return Database.open(
        connection.resolve(Map.of(ConnectionOptions.USER_ENV, TestDatabase.user())),
        OutboxTable.parse("outbox"));
  }
}
