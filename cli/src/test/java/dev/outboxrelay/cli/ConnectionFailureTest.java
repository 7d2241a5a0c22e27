package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Database and authentication failures exit with 2 and one sanitized line: a reason code and the
 * SQLState, never the URL, the password or the driver's text.
 */
class ConnectionFailureTest {
  private static final String SENTINEL = "SENTINEL-p4ssw0rd-77";

  private static OutboxFixture outbox;

  @BeforeAll
  static void outbox() throws SQLException {
    TestDatabase.ensurePasswordRole();
    outbox = OutboxFixture.populated("auth");
    outbox.exec("GRANT SELECT ON outbox, outbox_published TO " + TestDatabase.PASSWORD_ROLE);
  }

  @AfterAll
  static void close() {
    outbox.close();
  }

  @Test
  void aWrongPasswordIsAnAuthenticationError() {
    Cli.Result r =
        new Cli()
            .env(ConnectionOptions.PASSWORD_ENV, SENTINEL)
            .run(
                "status",
                "--instance-key",
                "eu",
                "--jdbc-url",
                outbox.url,
                "--user",
                TestDatabase.PASSWORD_ROLE);

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertEquals(
        "error: status could not connect: DB_AUTHENTICATION_FAILED (SQLState 28P01): the"
            + " database refused the credentials; check --user and the password\n",
        r.err());
    assertRevealsNothing(r, outbox.url);
  }

  @Test
  void aPasswordInTheUrlIsNeverShownEither() {
    String url = outbox.url + "?user=" + TestDatabase.PASSWORD_ROLE + "&password=" + SENTINEL;
    Cli.Result r = new Cli().run("status", "--instance-key", "eu", "--jdbc-url", url);

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertTrue(r.err().contains("DB_AUTHENTICATION_FAILED (SQLState 28P01)"), r::toString);
    assertRevealsNothing(r, url);
  }

  @Test
  void anUnreachableDatabaseIsADatabaseError() throws IOException {
    // Port 1, where nothing listens: a free port let go could be taken by the other test JVM.
    String url = "jdbc:postgresql://127.0.0.1:1/app?password=" + SENTINEL;
    Cli.Result r =
        new Cli()
            .run(
                "requeue",
                "--instance-key",
                "eu",
                "--all",
                "--jdbc-url",
                url,
                "--connect-timeout",
                "2");

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertTrue(
        r.err().startsWith("error: requeue could not connect: DB_UNAVAILABLE (SQLState 08001)"),
        r::toString);
    assertRevealsNothing(r, url);
    assertFalse(r.err().contains("127.0.0.1:1"), r::toString);
  }

  @Test
  void theRightPasswordFromEnvOrFileWorks(@TempDir Path dir) throws IOException {
    Cli.Result fromEnv =
        new Cli()
            .env(ConnectionOptions.JDBC_URL_ENV, outbox.url)
            .env(ConnectionOptions.USER_ENV, TestDatabase.PASSWORD_ROLE)
            .env(ConnectionOptions.PASSWORD_ENV, TestDatabase.PASSWORD)
            .run("status", "--instance-key", "eu", "--json");
    assertEquals(ExitCode.OK, fromEnv.exitCode(), fromEnv::toString);
    assertEquals(8, fromEnv.json().get("total").asLong());

    Path file = dir.resolve("password");
    Files.writeString(file, TestDatabase.PASSWORD + "\n");
    Cli.Result fromFile =
        new Cli()
            .env(ConnectionOptions.PASSWORD_ENV, SENTINEL) // the file wins over the environment
            .run(
                "list",
                "--instance-key",
                "eu",
                "--status",
                "FAILED",
                "--jdbc-url",
                outbox.url,
                "--user",
                TestDatabase.PASSWORD_ROLE,
                "--password-file",
                file.toString());
    assertEquals(ExitCode.OK, fromFile.exitCode(), fromFile::toString);
    assertTrue(fromFile.out().contains("eu-failed-1"), fromFile::toString);
  }

  @Test
  void aMissingPrivilegeIsReportedAsSuch() {
    Cli.Result r =
        new Cli()
            .env(ConnectionOptions.PASSWORD_ENV, TestDatabase.PASSWORD)
            .run(
                "requeue",
                "--instance-key",
                "eu",
                "--all",
                "--jdbc-url",
                outbox.url,
                "--user",
                TestDatabase.PASSWORD_ROLE);

    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertTrue(r.err().contains("DB_PERMISSION_DENIED (SQLState 42501)"), r::toString);
  }

  @Test
  void aMissingDatabaseOrTableIsASchemaError() {
    Cli.Result noDatabase = Cli.against(TestDatabase.url("no_such_db")).forKey("eu", "status");
    assertEquals(ExitCode.DATABASE, noDatabase.exitCode(), noDatabase::toString);
    assertTrue(
        noDatabase.err().contains("DB_DATABASE_MISSING (SQLState 3D000)"), noDatabase::toString);

    Cli.Result noTable = outbox.cli().forKey("eu", "status", "--table", "not_migrated");
    assertEquals(ExitCode.DATABASE, noTable.exitCode(), noTable::toString);
    assertTrue(noTable.err().contains("DB_SCHEMA_MISSING (SQLState 42P01)"), noTable::toString);
  }

  @Test
  void aFailureNamesTheCommandThatRanNotAStepInsideIt() {
    String hint =
        ": the database, schema, outbox table, one of its columns or its published log (schema"
            + " version 9) is missing; check --jdbc-url and --table (migrate creates or upgrades"
            + " the table, not a database or schema)\n";
    for (List<String> command :
        List.of(
            List.of("status"),
            List.of("list", "--status", "FAILED"),
            List.of("inspect", "eu-failed-1"),
            List.of("requeue", "--all"),
            List.of("purge", "--published-before", "P30D"))) {
      List<String> args = new ArrayList<>(command.subList(1, command.size()));
      args.addAll(List.of("--table", "nope"));
      Cli.Result r = outbox.cli().forKey("eu", command.get(0), args.toArray(String[]::new));

      assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
      assertEquals(
          "error: " + command.get(0) + " failed: DB_SCHEMA_MISSING (SQLState 42P01)" + hint,
          r.err());
    }
  }

  @Test
  void anUnknownRoleIsAnAuthenticationError() {
    Cli.Result r =
        Cli.against(outbox.url)
            .env(ConnectionOptions.USER_ENV, "nobody_" + SENTINEL.toLowerCase())
            .forKey("eu", "status");
    assertEquals(ExitCode.DATABASE, r.exitCode(), r::toString);
    assertTrue(r.err().contains("DB_AUTHENTICATION_FAILED (SQLState 28000)"), r::toString);
    assertFalse(r.err().toLowerCase().contains(SENTINEL.toLowerCase()), r::toString);
  }

  private static void assertRevealsNothing(Cli.Result r, String url) {
    String all = r.out() + r.err();
    assertFalse(all.contains(SENTINEL), r::toString);
    assertFalse(all.contains(url), r::toString);
    assertFalse(all.contains("jdbc:"), r::toString);
    assertFalse(all.contains(TestDatabase.PASSWORD), r::toString);
    assertEquals(1, r.err().lines().count(), r::toString);
  }
}
