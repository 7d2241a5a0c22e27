package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.DataSourceFactory;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The driver takes the URL's parameters over the properties the CLI passes: a user or password in
 * the URL beside the CLI's own is refused, and the URL's options keep the statement timeout.
 */
class JdbcUrlTest {
  private static final String SENTINEL = "SENTINEL-url-secret-53";

  /** Nothing listens here: a usage error must be reported before connecting. */
  private static final String UNREACHABLE = "jdbc:postgresql://127.0.0.1:9/never";

  @Test
  void aUserInTheUrlBesideUserIsRefusedWithoutShowingEither() {
    Cli.Result option =
        new Cli()
            .run(
                "status",
                "--instance-key",
                "eu",
                "--jdbc-url",
                UNREACHABLE + "?user=" + SENTINEL,
                "--user",
                SENTINEL + "-option");
    assertEquals(ExitCode.USAGE, option.exitCode(), option::toString);
    assertEquals(
        "error: the JDBC URL has a user and --user gives one too (the URL's would be used): give"
            + " the user in one place only\n",
        option.err());

    Cli.Result env =
        new Cli()
            .env(ConnectionOptions.JDBC_URL_ENV, UNREACHABLE + "?ssl=false&user=" + SENTINEL)
            .env(ConnectionOptions.USER_ENV, SENTINEL + "-env")
            .run("status", "--instance-key", "eu");
    assertEquals(ExitCode.USAGE, env.exitCode(), env::toString);
    assertTrue(env.err().contains(" and OUTBOX_USER gives one too "), env::toString);
    assertFalse((option.out() + option.err() + env.out() + env.err()).contains(SENTINEL));
  }

  @Test
  void aPasswordInTheUrlBesideAPasswordOptionIsRefusedWithoutShowingEither() {
    Cli.Result option =
        new Cli()
            .env(ConnectionOptions.JDBC_URL_ENV, UNREACHABLE + "?password=" + SENTINEL)
            .run("status", "--instance-key", "eu", "--password=" + SENTINEL + "-option");
    assertEquals(ExitCode.USAGE, option.exitCode(), option::toString);
    assertEquals(
        "error: the JDBC URL has a password and --password gives one too (the URL's would be"
            + " used): give the password in one place only\n",
        option.err());

    Cli.Result env =
        new Cli()
            .env(ConnectionOptions.JDBC_URL_ENV, UNREACHABLE + "?password=" + SENTINEL)
            .env(ConnectionOptions.PASSWORD_ENV, SENTINEL + "-env")
            .run("status", "--instance-key", "eu");
    assertEquals(ExitCode.USAGE, env.exitCode(), env::toString);
    assertTrue(env.err().contains(" and OUTBOX_PASSWORD gives one too "), env::toString);
    assertFalse((option.out() + option.err() + env.out() + env.err()).contains(SENTINEL));
  }

  /**
   * A password the driver would find in .pgpass for the URL's user, or a user in the URL's
   * pg_service.conf entry, is not the URL's: the CLI's own outranks both, so nothing was in two
   * places (both were refused as the URL's).
   */
  @Test
  void aPgpassPasswordOrAServiceFilesUserIsNotTheUrls(@TempDir Path dir) throws IOException {
    Path pgpass = Files.writeString(dir.resolve("pgpass"), "*:*:*:app:" + SENTINEL + "\n");
    Path services =
        Files.writeString(
            dir.resolve("pg_service.conf"),
            "[prod]\nhost=127.0.0.1\nport=9\ndbname=never\nuser=" + SENTINEL + "\n");
    System.setProperty("org.postgresql.pgpassfile", pgpass.toString());
    System.setProperty("org.postgresql.pgservicefile", services.toString());
    try {
      Cli.Result pgpassed =
          new Cli()
              .env(ConnectionOptions.JDBC_URL_ENV, UNREACHABLE + "?user=app")
              .env(ConnectionOptions.PASSWORD_ENV, SENTINEL + "-env")
              .run("status", "--instance-key", "eu", "--connect-timeout", "1");
      assertEquals(ExitCode.DATABASE, pgpassed.exitCode(), pgpassed::toString);
      assertFalse(pgpassed.err().contains("has a password"), pgpassed::toString);

      Cli.Result serviced =
          new Cli()
              .env(ConnectionOptions.JDBC_URL_ENV, UNREACHABLE + "?service=prod")
              .run("status", "--instance-key", "eu", "--user", "app", "--connect-timeout", "1");
      assertEquals(ExitCode.DATABASE, serviced.exitCode(), serviced::toString);
      assertFalse(serviced.err().contains("has a user"), serviced::toString);
      assertFalse((pgpassed.err() + serviced.err()).contains(SENTINEL));
    } finally {
      System.clearProperty("org.postgresql.pgpassfile");
      System.clearProperty("org.postgresql.pgservicefile");
    }
  }

  /** A user and a password in the URL alone are the URL's to give. */
  @Test
  void aUserOnlyInTheUrlIsUsed() throws SQLException {
    try (OutboxFixture outbox = OutboxFixture.populated("url_user")) {
      Cli.Result r =
          new Cli()
              .env(ConnectionOptions.JDBC_URL_ENV, outbox.url + "?user=" + TestDatabase.user())
              .run("status", "--instance-key", "eu", "--json");
      assertEquals(ExitCode.OK, r.exitCode(), r::toString);
      assertEquals(8, r.json().get("total").asLong());
    }
  }

  /**
   * The URL's options reach the server and so does --statement-timeout: the driver would take the
   * URL's options over the CLI's, so the timeout is added to them.
   */
  @Test
  void theStatementTimeoutIsAddedToTheUrlsOptions() throws SQLException {
    String url =
        TestDatabase.fresh("url_options")
            + "?ApplicationName=url-test&options=-c%20work_mem%3D1234kB&connectTimeout=5";
    try (Database database = open(url, "--statement-timeout", "3");
        Connection c = database.dataSource().getConnection()) {
      assertEquals("3s", show(c, "statement_timeout"));
      assertEquals("1234kB", show(c, "work_mem"));
    }
    // A timeout of the URL's own is overridden by --statement-timeout, kept without it.
    String withTimeout = TestDatabase.fresh("url_options") + "?options=-c%20statement_timeout%3D7s";
    try (Database database = open(withTimeout, "--statement-timeout", "2");
        Connection c = database.dataSource().getConnection()) {
      assertEquals("2s", show(c, "statement_timeout"));
    }
    try (Database database = open(withTimeout);
        Connection c = database.dataSource().getConnection()) {
      assertEquals("7s", show(c, "statement_timeout"));
    }
    // Without options in the URL, the timeout is the only one.
    try (Database database = open(TestDatabase.fresh("url_options"), "--statement-timeout", "4");
        Connection c = database.dataSource().getConnection()) {
      assertEquals("4s", show(c, "statement_timeout"));
    }
  }

  /**
   * migrate's connections lift the server's idle and transaction timeouts for their session (a
   * database's transaction_timeout would end Flyway's lock transaction, open for the whole run),
   * after the CLI's own statement timeout; other commands' connections keep the server's.
   */
  @Test
  void migratesConnectionsLiftTheServersTransactionTimeouts() throws SQLException {
    String url = TestDatabase.fresh("url_migrate_session");
    // transaction_timeout is PostgreSQL 17's; on older servers the idle one stands in for it.
    String timeout =
        TestDatabase.majorVersion() >= 17
            ? "transaction_timeout"
            : "idle_in_transaction_session_timeout";
    try (Database database = open(url);
        Connection c = database.dataSource().getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET "
              + timeout
              + " = ''5min''', current_database()); END $$");
    }
    try (Database database = open(url, "--statement-timeout", "3");
        Connection c = database.dataSource().getConnection()) {
      assertEquals("5min", show(c, timeout), "not migrate: the server's");
    }
    try (Database database =
            Database.open(
                settings(url, "--statement-timeout", "3"),
                OutboxTable.parse("outbox"),
                ColumnMapping.RELAY,
                DataSourceFactory.MIGRATION_SESSION);
        Connection c = database.dataSource().getConnection()) {
      assertEquals("0", show(c, timeout));
      assertEquals("0", show(c, "idle_in_transaction_session_timeout"));
      assertEquals("3s", show(c, "statement_timeout"), "the CLI's own still applies");
    }
  }

  /** The CLI's writes lock and re-check rows as READ COMMITTED does, whatever the default. */
  @Test
  void connectionsReadCommittedWhateverTheDatabaseDefault() throws SQLException {
    String url = TestDatabase.fresh("cli_serializable");
    try (Connection c = TestDatabase.connect(url);
        Statement s = c.createStatement()) {
      s.execute(
          "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation"
              + " = ''serializable''', current_database()); END $$");
    }
    try (Database database = open(url);
        Connection c = database.dataSource().getConnection()) {
      assertEquals("read committed", show(c, "transaction_isolation"));
    }
  }

  /**
   * The CLI's connections have no socket timeout unless the URL sets one: their sockets probe a
   * silent server after 60 s, 6 times 10 s apart, so a command over a dropped path fails within
   * minutes, not the system's two hours.
   */
  @Test
  void connectionsProbeASilentServerWithinMinutes() throws Exception {
    try (Database database = open(TestDatabase.url("postgres"));
        Connection c = database.dataSource().getConnection()) {
      Object executor = c.unwrap(org.postgresql.core.BaseConnection.class).getQueryExecutor();
      java.lang.reflect.Field stream =
          org.postgresql.core.QueryExecutorBase.class.getDeclaredField("pgStream");
      stream.setAccessible(true);
      java.net.Socket socket = ((org.postgresql.core.PGStream) stream.get(executor)).getSocket();
      assertTrue(socket.getKeepAlive());
      assumeTrue(socket.supportedOptions().contains(jdk.net.ExtendedSocketOptions.TCP_KEEPIDLE));
      assertEquals(
          List.of(60, 10, 6),
          List.of(
              socket.getOption(jdk.net.ExtendedSocketOptions.TCP_KEEPIDLE),
              socket.getOption(jdk.net.ExtendedSocketOptions.TCP_KEEPINTERVAL),
              socket.getOption(jdk.net.ExtendedSocketOptions.TCP_KEEPCOUNT)));
    }
  }

  /** Opens the database as the CLI does, from its connection options. */
  private static Database open(String url, String... options) {
    return Database.open(settings(url, options), OutboxTable.parse("outbox"));
  }

  private static ConnectionSettings settings(String url, String... options) {
    ConnectionOptions connection = new ConnectionOptions();
    String[] args = new String[options.length + 2];
    args[0] = "--jdbc-url";
    args[1] = url;
    System.arraycopy(options, 0, args, 2, options.length);
    new CommandLine(connection).parseArgs(args);
    return connection.resolve(Map.of(ConnectionOptions.USER_ENV, TestDatabase.user()));
  }

  private static String show(Connection c, String setting) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW " + setting)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
