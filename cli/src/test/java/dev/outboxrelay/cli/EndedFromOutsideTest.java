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
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A batched discard ended by SIGTERM, in a CLI process of its own: the count it says is the count
 * of rows gone from the database. The JVM's threads run on while its shutdown hooks run, so a count
 * said at once missed the batches that committed after it.
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
    Path err = dir.resolve("err.txt");
    ProcessBuilder builder =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                OutboxRelayCli.class.getName(),
                "discard",
                "--instance-key",
                "bulk",
                "--all",
                "--batch-size",
                "1")
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
            .redirectOutput(dir.resolve("out.txt").toFile())
            .redirectError(err.toFile());
    builder.environment().put(ConnectionOptions.JDBC_URL_ENV, outbox.url);
    builder.environment().put(ConnectionOptions.USER_ENV, TestDatabase.user());
    Process cli = builder.start();
    await("the discard under way")
        .atMost(Duration.ofMinutes(1))
        .until(() -> parked() < ROWS - 50 || !cli.isAlive());
    assertTrue(cli.isAlive(), () -> "the discard ended by itself: " + read(err));

    cli.destroy(); // SIGTERM
    assertTrue(cli.waitFor(1, TimeUnit.MINUTES));

    Matcher said = SAID.matcher(read(err));
    assertTrue(said.find(), () -> read(err));
    assertEquals(ROWS - parked(), Long.parseLong(said.group(1)), () -> read(err));
    assertTrue(read(err).contains("; it stopped between batches;"), () -> read(err));
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
