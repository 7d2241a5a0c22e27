package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.sql.SQLException;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

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
    assertTrue(
        r.hasLine("lag: 2h \\d+m \\(age of the oldest PENDING, AMBIGUOUS or IN_FLIGHT row\\)"),
        out);
    assertTrue(r.hasLine("FAILED +us-failed-1 +POISON_PILL +3d \\d+h"), out);
    assertTrue(r.hasLine("EXHAUSTED +us-exhausted-1 +BROKER_TIMEOUT +\\S+.*"), out);
    assertFalse(out.contains("eu-"), out);
    assertFalse(out.contains("legacy"), out);
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
  }
}
