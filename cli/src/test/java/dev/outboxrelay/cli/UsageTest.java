package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.postgres.SchemaMigrator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Usage errors exit with 1 before any connection is opened, and never echo a secret. */
class UsageTest {
  private static final String SENTINEL = "SENTINEL-secret-91";

  /** Nothing listens here: a usage error must be reported before connecting. */
  private static final Cli CLI =
      new Cli().env(ConnectionOptions.JDBC_URL_ENV, "jdbc:postgresql://127.0.0.1:9/never");

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "no command                | ''",
        "missing instance key      | status",
        "two instance keys         | status --instance-key eu --instance-key us",
        "a list of keys            | status --instance-key eu,us",
        "bad table                 | status --instance-key eu --table Outbox;drop",
        "list without status       | list --instance-key eu",
        "list limit too large      | list --instance-key eu --status FAILED --limit 100000",
        "requeue without selection | requeue --instance-key eu",
        "requeue with two          | requeue --instance-key eu --all --correlation-id c",
        "purge without cutoff      | purge --instance-key eu",
        "purge batch of zero       | purge --instance-key eu --published-before P1D --batch-size 0",
        "purge age out of range    | purge --instance-key eu --published-before P1000000000000D",
        "purge instant too early   | purge --instance-key eu --published-before -10000-01-01T00:00Z",
        "purge instant too late    | purge --instance-key eu --published-before +10000-01-01T00:00Z",
        "inspect without id        | inspect --instance-key eu",
        "schema-sql bad version    | schema-sql --after-version x.y",
        "schema-sql to before after| schema-sql --after-version 7 --to-version 7",
        "schema-sql bad to version | schema-sql --to-version x",
        "schema-sql to no migration| schema-sql --to-version 0",
        "schema-sql to between two | schema-sql --after-version 3 --to-version 3.5",
      })
  void exitsWithOne(String name, String args) {
    Cli.Result r = CLI.run(args.isEmpty() ? new String[0] : args.split(" "));
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertTrue(r.err().startsWith("error: "), r::toString);
    assertFalse(r.err().contains("DB_"), "no connection was attempted: " + r);
  }

  /** A blank key is refused by the key's own rule, not taken for something else. */
  @Test
  void aBlankInstanceKeyIsRefusedAsBlank() {
    for (String key : new String[] {" ", ""}) {
      Cli.Result r = CLI.run("status", "--instance-key", key);
      assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
      assertEquals("error: --instance-key: instance key must not be blank\n", r.err());
    }
  }

  /** A key that looks like another (a zero-width space pasted after it) is refused too. */
  @Test
  void anInstanceKeyThatLooksLikeAnotherIsRefused() {
    Cli.Result lookalike = CLI.run("status", "--instance-key", "orders\u200b");
    assertEquals(ExitCode.USAGE, lookalike.exitCode(), lookalike::toString);
    assertTrue(
        lookalike.err().startsWith("error: --instance-key: instance key must not contain format"),
        lookalike::toString);
  }

  /**
   * An id no row can hold is refused before connecting, naming the option and its position: U+0000
   * (the database refused it naming nothing), a surrogate without its pair (sent as '?', it could
   * match another row's id).
   */
  @Test
  void anIdNoRowCanHoldIsRefusedNamingTheOption() {
    String nul = "a\u0000b";
    String lone = "a\ud83db";
    Cli.Result park =
        CLI.run("park", "--instance-key", "eu", "--message-id", "ok", "--message-id", lone);
    assertEquals(ExitCode.USAGE, park.exitCode(), park::toString);
    assertEquals(
        "error: --message-id 2 holds a UTF-16 surrogate without its pair (no character), which"
            + " would be sent as '?' and could match another row\n",
        park.err());
    Cli.Result requeue = CLI.run("requeue", "--instance-key", "eu", "--correlation-id", nul);
    assertEquals(ExitCode.USAGE, requeue.exitCode(), requeue::toString);
    assertEquals(
        "error: --correlation-id holds the character U+0000, which no row can hold\n",
        requeue.err());
    Cli.Result inspect = CLI.run("inspect", "--instance-key", "eu", nul);
    assertEquals(ExitCode.USAGE, inspect.exitCode(), inspect::toString);
    assertTrue(
        inspect.err().startsWith("error: MESSAGE_ID holds the character U+0000"),
        inspect::toString);
    Cli.Result discard = CLI.run("discard", "--instance-key", "eu", "--message-id", nul);
    assertEquals(ExitCode.USAGE, discard.exitCode(), discard::toString);
  }

  @Test
  void anUnknownOptionIsNamedButItsValueIsNot() {
    Cli.Result r = CLI.run("status", "--instance-key", "eu", "--pasword=" + SENTINEL, SENTINEL);

    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertTrue(
        r.err().startsWith("error: unknown option --pasword; 1 unexpected argument(s), not shown"));
    assertFalse(r.err().contains(SENTINEL), r::toString);
  }

  /**
   * picocli quotes the argument it found where a value was expected, or the value it could not
   * convert: an empty {@code $USER} in a script puts the password there.
   */
  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "option without its value | status --instance-key eu --user --password=SENTINEL-secret-91",
        "value taken as an option | status --instance-key eu --user --password SENTINEL-secret-91",
        "a value not a number     | list --instance-key eu --status FAILED --limit SENTINEL-secret-91",
        "a value not an enum      | list --instance-key eu --status SENTINEL-secret-91",
        "a cutoff not a duration  | purge --instance-key eu --published-before SENTINEL-secret-91",
      })
  void aRejectedValueIsNotEchoedButItsOptionIsNamed(String name, String args) {
    Cli.Result r = CLI.run(args.split(" "));

    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertFalse(r.err().contains(SENTINEL), r::toString);
    assertFalse(r.err().contains("secret"), r::toString);
    assertTrue(r.err().matches("(?s)error: [^\n]*--[a-z-]+.*"), r::toString);
  }

  /** A value holding quotes is hidden whole; words of the message stay as they are. */
  @Test
  void aValueWithQuotesIsHiddenWholeAndTheMessageStaysReadable() {
    Cli.Result quoted =
        CLI.run("status", "--instance-key", "eu", "--user", "--password=pa'ss'word-91");
    assertEquals(ExitCode.USAGE, quoted.exitCode(), quoted::toString);
    assertFalse(quoted.err().contains("ss'word"), quoted::toString);
    assertFalse(quoted.err().contains("ss"), quoted::toString);
    assertTrue(
        quoted
            .err()
            .startsWith(
                "error: Expected parameter for option '--user' but found '(a value, not shown)'"),
        quoted::toString);

    Cli.Result word =
        CLI.run("list", "--instance-key", "eu", "--status", "FAILED", "--limit", "option");
    assertTrue(
        word.err()
            .startsWith(
                "error: Invalid value for option '--limit': '(a value, not shown)' is not an int"),
        word::toString);
  }

  /** What picocli names that is no value stays readable: a missing option with its label. */
  @Test
  void aMissingOptionIsNamedWithItsLabel() {
    Cli.Result r = CLI.run("status");
    assertTrue(
        r.err().startsWith("error: Missing required option: '--instance-key=KEY'"), r::toString);
    Cli.Result id = CLI.run("inspect", "--instance-key", "eu");
    assertFalse(id.err().contains("not shown"), id::toString);
  }

  /** An unknown argument that does not look like an option is a value: counted, not shown. */
  @Test
  void anUnknownArgumentThatLooksLikeAValueIsNotShown() {
    Cli.Result r = CLI.run("status", "--instance-key", "eu", "--pasword", "-Secr3t-91");
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertFalse(r.err().contains("Secr3t"), r::toString);
    assertTrue(r.err().startsWith("error: unknown option --pasword"), r::toString);
  }

  /** No @file expansion: arguments read from a file would escape the redaction. */
  @Test
  void anAtFileIsNotExpanded() throws java.io.IOException {
    java.nio.file.Path file = java.nio.file.Files.createTempFile("cli-args", ".txt");
    java.nio.file.Files.writeString(file, "--user\n--password=pa'ss'word-91\n");
    try {
      Cli.Result r = CLI.run("status", "--instance-key", "eu", "@" + file);
      assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
      assertFalse(r.err().contains("ss"), r::toString);
    } finally {
      java.nio.file.Files.delete(file);
    }
  }

  @Test
  void anInvalidUrlIsNotEchoed() {
    Cli.Result r =
        new Cli()
            .env(ConnectionOptions.JDBC_URL_ENV, "jdbc:mysql://db/app?password=" + SENTINEL)
            .run("status", "--instance-key", "eu");
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertFalse(r.err().contains(SENTINEL), r::toString);
    assertFalse(r.err().contains("mysql"), r::toString);
  }

  @Test
  void aDatabaseIsRequired() {
    Cli.Result r = new Cli().run("status", "--instance-key", "eu");
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertEquals("error: no database given: pass --jdbc-url or set OUTBOX_JDBC_URL\n", r.err());
  }

  @Test
  void passwordAndPasswordFileExcludeEachOther() {
    Cli.Result r =
        CLI.run("status", "--instance-key", "eu", "--password", SENTINEL, "--password-file", "f");
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertEquals("error: give either --password or --password-file, not both\n", r.err());
  }

  /**
   * Without a terminal (output redirected to a file or a pipe, as with --json) there is nowhere to
   * prompt without echo: refused, instead of a prompt on stdout and an echoed line.
   */
  @Test
  void aPasswordPromptWithoutATerminalIsAUsageError() {
    Cli.Result r =
        CLI.run(
            "status",
            "--instance-key",
            "eu",
            "--jdbc-url",
            "jdbc:postgresql://127.0.0.1:1/app",
            "--password",
            "--json");
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertEquals(
        "error: --password without a value needs a terminal to prompt on: set OUTBOX_PASSWORD"
            + " or use --password-file\n",
        r.err());
    assertEquals("", r.out());
  }

  /**
   * Credentials where the driver would not take them for credentials: user:password@host for the
   * host name (it would look it up), ;password=... for part of the database name or of another
   * parameter's value (the server would quote it). Refused, the URL not shown.
   */
  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "ops:" + SENTINEL + "@127.0.0.1:1/app | user or password before its host",
        "127.0.0.1:1/app;password=" + SENTINEL + " | password in its hosts, its database name",
        "127.0.0.1:1/app?user=ops;password="
            + SENTINEL
            + " | password in its hosts, its database name"
      })
  void credentialsTheDriverWouldMisreadAreAUsageErrorAndNotShown(String rest, String what) {
    Cli.Result r =
        CLI.run("status", "--instance-key", "eu", "--jdbc-url", "jdbc:postgresql://" + rest);
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertTrue(r.err().startsWith("error: the JDBC URL has a " + what), r::toString);
    assertFalse(r.err().contains(SENTINEL) || r.out().contains(SENTINEL), r::toString);
  }

  /**
   * An option given blank (a script's unset variable: {@code --user "$OPS_USER"}) is refused,
   * named, and not taken for absent: options win over the environment, whose database or role would
   * otherwise be used instead. Both variables are set here, to what would be used.
   */
  @ParameterizedTest(name = "{0} {1}")
  @CsvSource(
      delimiter = '|',
      value = {
        "--jdbc-url  | ''  | OUTBOX_JDBC_URL",
        "--jdbc-url  | ' ' | OUTBOX_JDBC_URL",
        "--user      | ''  | OUTBOX_USER",
        "--user      | ' ' | OUTBOX_USER",
      })
  void aBlankConnectionOptionIsRefusedNotReplacedByTheEnvironment(
      String option, String blank, String variable) {
    Cli withEnvironment =
        new Cli()
            .env(ConnectionOptions.JDBC_URL_ENV, "jdbc:postgresql://127.0.0.1:9/never")
            .env(ConnectionOptions.USER_ENV, "ops");
    for (String[] args :
        new String[][] {
          {"status", "--instance-key", "eu", option, blank},
          {"status", "--instance-key", "eu", option + "=" + blank}
        }) {
      Cli.Result r = withEnvironment.run(args);
      assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
      assertEquals(
          "error: "
              + option
              + " is blank: give a value, or leave the option out to use "
              + variable
              + "\n",
          r.err());
    }
  }

  /**
   * A blank password file is refused, named; an empty --password is one without a value (prompted
   * for, here refused without a terminal), never the environment's password.
   */
  @Test
  void aBlankPasswordOptionIsRefusedNotReplacedByTheEnvironment() {
    Cli withPassword = new Cli().env(ConnectionOptions.PASSWORD_ENV, SENTINEL);
    for (String blank : new String[] {"", " "}) {
      Cli.Result file =
          withPassword.run(
              "status",
              "--instance-key",
              "eu",
              "--jdbc-url",
              "jdbc:postgresql://127.0.0.1:9/never",
              "--password-file",
              blank);
      assertEquals(ExitCode.USAGE, file.exitCode(), file::toString);
      assertEquals("error: --password-file is blank: give the file's path\n", file.err());
    }
    Cli.Result password =
        withPassword.run(
            "status",
            "--instance-key",
            "eu",
            "--jdbc-url",
            "jdbc:postgresql://127.0.0.1:9/never",
            "--password",
            "");
    assertEquals(ExitCode.USAGE, password.exitCode(), password::toString);
    assertTrue(
        password.err().startsWith("error: --password without a value needs a terminal"),
        password::toString);
  }

  @Test
  void anUnreadablePasswordFileIsAUsageError() {
    Cli.Result r =
        CLI.run("status", "--instance-key", "eu", "--password-file", "/nonexistent/" + SENTINEL);
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertEquals("error: --password-file cannot be read\n", r.err());
  }

  /**
   * Flyway's parser also takes its special words (current, latest, next) and an underscore for a
   * dot: none names a shipped migration, so both version options take plain numbers only, refused
   * before connecting without repeating the value.
   */
  @ParameterizedTest(name = "{0} {1}")
  @CsvSource({
    "migrate, --target, current",
    "migrate, --target, next",
    "migrate, --target, latest",
    "migrate, --target, LATEST",
    "migrate, --target, 1_2",
    "migrate, --target, -1",
    "migrate, --target, 2.",
    "migrate, --target, ' 2'",
    "schema-sql, --after-version, current",
    "schema-sql, --after-version, next",
    "schema-sql, --after-version, latest",
    "schema-sql, --after-version, 1_2",
    "schema-sql, --after-version, ''",
    "schema-sql, --to-version, latest",
  })
  void aSchemaVersionIsNumbersOnly(String command, String option, String version) {
    Cli.Result r = CLI.run(command, option, version);

    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertEquals("error: " + option + " must be a schema version such as 2\n", r.err());
    assertEquals("", r.out());
  }

  /** A version newer than the shipped migrations: migrate refuses it, schema-sql too. */
  @ParameterizedTest(name = "{0} {1}")
  @CsvSource({
    "migrate, --target",
    "schema-sql, --after-version",
    "schema-sql, --to-version",
  })
  void aSchemaVersionNewerThanTheLatestIsRefused(String command, String option) {
    String next = Integer.toString(Integer.parseInt(SchemaMigrator.CURRENT_VERSION) + 1);
    for (String version : new String[] {next, "999", SchemaMigrator.CURRENT_VERSION + ".1"}) {
      Cli.Result r = CLI.run(command, option, version);

      assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
      assertEquals(
          "error: "
              + option
              + " is newer than the latest version this CLI knows ("
              + SchemaMigrator.CURRENT_VERSION
              + ")\n",
          r.err());
      assertEquals("", r.out());
    }
  }

  @Test
  void helpAndVersionExitWithZero() {
    Cli.Result help = new Cli().run("--help");
    assertEquals(ExitCode.OK, help.exitCode());
    for (String command :
        new String[] {
          "status",
          "list",
          "inspect",
          "requeue",
          "purge",
          "migrate",
          "schema-sql",
          "adopt-debezium-table"
        }) {
      assertTrue(help.out().contains("  " + command + " "), command);
      Cli.Result commandHelp = new Cli().run(command, "--help");
      assertEquals(ExitCode.OK, commandHelp.exitCode(), command);
      assertTrue(commandHelp.out().contains("Exit codes:"), command);
    }
    assertEquals(ExitCode.OK, new Cli().run("--version").exitCode());
  }

  /**
   * Each option checked against a range says it in its help, and the range it says is the one
   * enforced: one past either end is a usage error, the upper end itself is taken (the command then
   * fails connecting, to a port nothing listens on).
   */
  @ParameterizedTest(name = "{0} {1}")
  @CsvSource(
      delimiter = '|',
      value = {
        "requeue | --batch-size        | 1 | 100000 | --instance-key eu --all",
        "discard | --batch-size        | 1 | 100000 | --instance-key eu --all",
        "purge   | --batch-size        | 1 | 100000 | --instance-key eu --published-before P1D",
        "status  | --connect-timeout   | 1 | 3600   | --instance-key eu",
        "status  | --statement-timeout | 0 | 86400  | --instance-key eu",
      })
  void theHelpStatesTheRangeEachOptionIsCheckedAgainst(
      String command, String option, int low, int high, String rest) {
    String help = new Cli().run(command, "--help").out().replaceAll("\\s+", " ");
    String optionHelp = help.substring(help.indexOf(" " + option + "=")); // not the synopsis
    optionHelp = optionHelp.substring(0, Math.min(optionHelp.length(), 400));
    assertTrue(optionHelp.contains(low + " to " + high), optionHelp);
    for (int outside : new int[] {low - 1, high + 1}) {
      Cli.Result r = CLI.run(args(command, rest, option, outside));
      assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
      assertTrue(r.err().contains(option), r::toString);
    }
    Cli.Result atTheEnd = CLI.run(args(command, rest, option, high));
    assertEquals(ExitCode.DATABASE, atTheEnd.exitCode(), atTheEnd::toString);
  }

  private static String[] args(String command, String rest, String option, int value) {
    return (command + " " + rest + " " + option + " " + value).split(" ");
  }

  /** Exit code 1 does not promise that nothing was read: a few usage errors need the database. */
  @Test
  void theHelpSaysWhichUsageErrorsAreFoundOnceConnected() {
    for (String command : new String[] {"purge", "migrate"}) {
      String help = new Cli().run(command, "--help").out().replaceAll("\\s+", " ");
      assertFalse(help.contains("nothing was read"), help);
      assertTrue(
          help.contains(
              "1 usage error: bad or missing options; nothing was changed (a few are found only"
                  + " once connected: a purge cutoff in the future, a migrate --target older than"
                  + " the table, a --column-message-id that gives one requested id to several"
                  + " rows)"),
          help);
    }
  }
}
