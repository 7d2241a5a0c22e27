package dev.outboxrelay.cli;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A batched discard or a purge ended by SIGTERM, in a CLI process of its own: the count it says is
 * the count of rows gone from the database. The JVM's threads run on while its shutdown hooks run,
 * so a count said at once missed the batches that committed after it.
 */
class EndedFromOutsideTest {
  private static final int ROWS = 20_000;
  private static final Pattern SAID =
      Pattern.compile("error: discard ended from outside after (\\d+) row\\(s\\) discarded");

  private OutboxFixture outbox;

  @BeforeEach
  void parkedRows() throws SQLException {
    outbox = OutboxFixture.populated("sigterm");
    outbox.exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " topic, payload, status, last_failure_code, parked_at)"
            + " SELECT 'bulk-' || g, 'bulk', 'order', 'agg-' || g, 'OrderPlaced', 'orders',"
            + " '\\x7b7d'::bytea, 'FAILED', 'POISON_PILL', now() - interval '1 day'"
            + " FROM generate_series(1, "
            + ROWS
            + ") g");
  }

  @AfterEach
  void close() {
    outbox.close();
  }

  @Test
  void aDiscardEndedBySigtermSaysExactlyHowManyRowsAreGone(@TempDir Path dir) throws Exception {
    String err = endedBySigterm(dir, () -> parked() < ROWS - 50, "discard", "--all");

    Matcher said = SAID.matcher(err);
    assertTrue(said.find(), err);
    assertEquals(ROWS - parked(), Long.parseLong(said.group(1)), err);
    assertTrue(err.contains("; it stopped between batches;"), err);
  }

  /** A purge as well: the batch in progress when the signal came committed without a line. */
  @Test
  void aPurgeEndedBySigtermSaysExactlyHowManyRowsAreGone(@TempDir Path dir) throws Exception {
    outbox.exec(
        "INSERT INTO outbox_published (seq, message_id, instance_key, attempts,"
            + " abandoned_claims, lease_token, published_at)"
            + " SELECT 1000000 + g, 'gone-' || g, 'bulk', 1, 0, 1, '2020-01-01Z'"
            + " FROM generate_series(1, "
            + ROWS
            + ") g");
    String err =
        endedBySigterm(
            dir, () -> logged() < ROWS - 50, "purge", "--published-before", "2021-01-01");

    Matcher said =
        Pattern.compile("error: purge ended from outside after (\\d+) row\\(s\\) deleted")
            .matcher(err);
    assertTrue(said.find(), err);
    assertEquals(ROWS - logged(), Long.parseLong(said.group(1)), err);
    assertTrue(err.contains("; it stopped between batches;"), err);
  }

  /**
   * Runs the CLI on instance key bulk, one row per batch, until {@code underWay}, ends it by
   * SIGTERM, and returns what it wrote to stderr.
   */
  private String endedBySigterm(Path dir, Callable<Boolean> underWay, String... command)
      throws Exception {
    Path err = dir.resolve("err.txt");
    List<String> line =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                OutboxRelayCli.class.getName()));
    line.addAll(List.of(command));
    line.addAll(List.of("--instance-key", "bulk", "--batch-size", "1"));
    ProcessBuilder builder =
        new ProcessBuilder(line)
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
            .redirectOutput(dir.resolve("out.txt").toFile())
            .redirectError(err.toFile());
    builder.environment().put(ConnectionOptions.JDBC_URL_ENV, outbox.url);
    builder.environment().put(ConnectionOptions.USER_ENV, TestDatabase.user());
    Process cli = builder.start();
    await(command[0] + " under way")
        .atMost(Duration.ofMinutes(1))
        .until(() -> underWay.call() || !cli.isAlive());
    assertTrue(cli.isAlive(), () -> command[0] + " ended by itself: " + read(err));

    cli.destroy(); // SIGTERM
    assertTrue(cli.waitFor(1, TimeUnit.MINUTES));
    return read(err);
  }

  private long logged() throws SQLException {
    return outbox.logCount("instance_key = 'bulk'");
  }

  private long parked() throws SQLException {
    return outbox.count("instance_key = 'bulk'");
  }

  private static String read(Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }
}
