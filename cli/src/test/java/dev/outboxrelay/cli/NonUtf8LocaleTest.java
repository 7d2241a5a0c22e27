package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The CLI in a process of its own under {@code LANG=C} (kubectl exec, cron, a minimal image), where
 * Java 17's default charset is ASCII: its output is UTF-8 all the same, and an argument the JVM
 * could not decode is refused, naming its place, not searched for. Two FAILED rows, {@code ordre-é}
 * and {@code ordre-?}: a list printed both as {@code ordre-?}, and the id an operator copied from
 * it named the other row.
 */
class NonUtf8LocaleTest {
  /** Read only by every test: one fixture for the class. */
  private static OutboxFixture outbox;

  @BeforeAll
  static void rows() throws SQLException {
    outbox = OutboxFixture.populated("c_locale");
    outbox.exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " topic, payload, status, last_failure_code, parked_at) VALUES"
            + " ('ordre-é', 'loc', 'order', 'a', 'OrderPlaced', 'orders', '\\x7b7d'::bytea,"
            + " 'FAILED', 'POISON_PILL', now()),"
            + " ('ordre-?', 'loc', 'order', 'b', 'OrderPlaced', 'orders', '\\x7b7d'::bytea,"
            + " 'FAILED', 'POISON_PILL', now())");
  }

  @AfterAll
  static void close() {
    outbox.close();
  }

  @Test
  void listedIdsAreWrittenInUtf8() throws Exception {
    Result list = run("list --instance-key loc --status FAILED --json");

    assertEquals(0, list.exit, list.err);
    assertTrue(list.out.contains("\"ordre-é\""), list.out);
    assertTrue(list.out.contains("\"ordre-?\""), list.out);
  }

  /** The id arrives as {@code ordre-} and two U+FFFD: refused, without the value. */
  @Test
  void anArgumentTheLocaleCouldNotDecodeIsRefused() throws Exception {
    Result inspect = run("inspect --instance-key loc \"$(printf 'ordre-\\303\\251')\"");

    assertEquals(ExitCode.USAGE, inspect.exit, inspect.err);
    assertTrue(inspect.err.contains("error: argument 4 holds U+FFFD"), inspect.err);
    assertTrue(inspect.err.contains("LANG=C.UTF-8"), inspect.err);
    assertFalse(inspect.err.contains("ordre"), inspect.err);
    assertEquals("", inspect.out);
  }

  /**
   * Standard output that cannot be written (a full disk) still exits 6: the UTF-8 writer first
   * written over an OutputStreamWriter of its own never saw System.out's errors, and exited 0.
   */
  @Test
  void outputThatCannotBeWrittenStillExitsWithSix() throws Exception {
    Result list = run("list --instance-key loc --status FAILED --json", "/dev/full");

    assertEquals(ExitCode.OUTPUT, list.exit, list.err);
    assertTrue(list.err.contains("the output could not be written in full"), list.err);
  }

  private record Result(int exit, String out, String err) {}

  private Result run(String arguments) throws Exception {
    return run(arguments, null);
  }

  /**
   * {@code arguments}, a bash word list, to a CLI started under LANG=C, its standard output to
   * {@code stdout} (a file of its own when null).
   */
  private Result run(String arguments, String stdout) throws Exception {
    Path dir = Files.createTempDirectory("c-locale");
    try {
      String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      ProcessBuilder builder =
          new ProcessBuilder(
                  List.of(
                      "bash",
                      "-c",
                      "exec \"$0\" -cp \"$1\" " + OutboxRelayCli.class.getName() + " " + arguments,
                      java,
                      System.getProperty("java.class.path")))
              .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
              .redirectOutput(
                  stdout == null ? dir.resolve("out").toFile() : new java.io.File(stdout))
              .redirectError(dir.resolve("err").toFile());
      builder.environment().keySet().removeIf(k -> k.startsWith("LC_") || k.equals("LANGUAGE"));
      builder.environment().put("LANG", "C");
      builder.environment().put("LC_ALL", "C");
      builder.environment().remove("JAVA_TOOL_OPTIONS");
      builder.environment().put(ConnectionOptions.JDBC_URL_ENV, outbox.url);
      builder.environment().put(ConnectionOptions.USER_ENV, TestDatabase.user());
      Process cli = builder.start();
      assertTrue(cli.waitFor(2, TimeUnit.MINUTES), "the CLI did not end");
      return new Result(
          cli.exitValue(),
          stdout == null ? Files.readString(dir.resolve("out"), StandardCharsets.UTF_8) : "",
          Files.readString(dir.resolve("err"), StandardCharsets.UTF_8));
    } finally {
      try (var files = Files.list(dir)) {
        for (Path f : files.toList()) {
          Files.delete(f);
        }
      }
      Files.delete(dir);
    }
  }
}
