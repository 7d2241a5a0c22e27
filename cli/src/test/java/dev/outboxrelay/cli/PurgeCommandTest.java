package dev.outboxrelay.cli;

import static dev.outboxrelay.cli.OutboxFixture.assertUnchangedExcept;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.cli.OutboxFixture.RowState;
import java.sql.SQLException;
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
    assertTrue(r.err().contains("lies in the future by the database clock"), r::toString);
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
