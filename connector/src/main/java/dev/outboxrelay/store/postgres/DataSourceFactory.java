package dev.outboxrelay.store.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.SQLExceptionOverride;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Locale;
import java.util.Properties;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.apache.kafka.common.config.types.Password;

/**
 * Builds the connection pool a task uses. The pool starts even while the database is down ({@code
 * initializationFailTimeout=-1}): connections are opened in the background and each {@code
 * getConnection()} fails after {@code connection.timeout.ms}, which the store classifies as
 * transient. Nothing here logs the URL or the password.
 *
 * <p>No statement can hang a task: every pooled connection runs {@code SET statement_timeout} when
 * it opens, so the database cancels a statement stuck behind a lock (SQLState 57014), and the
 * driver gives a connection up when a read waits longer than the socket timeout (SQLState 08006),
 * as on a network path that silently drops packets. Both are transient failures. TCP keepalive also
 * probes idle connections.
 */
public final class DataSourceFactory {
  /** Shown in {@code pg_stat_activity.application_name} for every connection of the relay. */
  public static final String APPLICATION_NAME = "outbox-relay";

  /**
   * The timeouts of a pool.
   *
   * @param connection opening a connection, and waiting for one from the pool
   * @param statement how long the database lets one statement run
   * @param socket how long one read on an open connection may wait; above {@code statement}
   */
  public record Timeouts(Duration connection, Duration statement, Duration socket) {}

  private DataSourceFactory() {}

  /**
   * Run by each new connection: the claims, publishes and renewals are written for READ COMMITTED
   * (a claim skips or re-checks a row another task changed after its snapshot), and a database or
   * role that defaults to REPEATABLE READ or SERIALIZABLE would fail them with 40001 whenever two
   * tasks meet. On every connection, not only where the first one HikariCP opened differed (its own
   * isolation setting): the default may change while the pool runs.
   */
  public static final String READ_COMMITTED =
      "SET default_transaction_isolation = 'read committed'";

  /** The task's pool: {@code connection.pool.size} connections, named {@code poolName}. */
  public static HikariDataSource create(ConnectionSettings settings, String poolName) {
    return create(
        settings.jdbcUrl(),
        settings.user(),
        settings.password(),
        new Timeouts(
            settings.connectTimeout(), settings.statementTimeout(), settings.socketTimeout()),
        poolName,
        settings.poolSize(),
        settings.poolSize(),
        false);
  }

  /**
   * A small pool for the connector's validation, which must answer within its timeouts whatever the
   * URL says: Connect's REST call gives up after 90 s, and a URL's {@code loginTimeout}, {@code
   * connectTimeout} or {@code socketTimeout} (which take precedence in a task's pool) made a check
   * wait minutes for a silent server.
   */
  public static HikariDataSource createForChecks(
      String jdbcUrl,
      String user,
      Password password,
      Timeouts timeouts,
      String poolName,
      int maximumPoolSize,
      int minimumIdle) {
    return create(jdbcUrl, user, password, timeouts, poolName, maximumPoolSize, minimumIdle, true);
  }

  /** A pool; {@code timeoutsWin}: the given timeouts over the URL's (for checks). */
  private static HikariDataSource create(
      String jdbcUrl,
      String user,
      Password password,
      Timeouts timeouts,
      String poolName,
      int maximumPoolSize,
      int minimumIdle,
      boolean timeoutsWin) {
    HikariConfig hikari = new HikariConfig();
    hikari.setPoolName(poolName);
    Properties props = driverProperties(user, password, APPLICATION_NAME);
    // Opening a socket never takes much longer than the pool waits for it (the driver counts in
    // whole seconds). Settings in the URL take precedence over these, but for checks.
    String connect = Long.toString(wholeSeconds(timeouts.connection()));
    String socket = Long.toString(wholeSeconds(timeouts.socket()));
    props.setProperty("connectTimeout", connect);
    props.setProperty("socketTimeout", socket);
    DriverDataSource driver = new DriverDataSource(jdbcUrl, props).textless();
    if (timeoutsWin) {
      driver
          .overriding("connectTimeout", connect)
          .overriding("loginTimeout", connect)
          .overriding("socketTimeout", socket);
    }
    // The pool gets a data source, never the URL: Hikari logs its configuration at debug level.
    hikari.setDataSource(driver);
    // A session setting rather than the startup parameter "options": connection poolers such as
    // PgBouncer refuse unknown startup parameters but pass a SET through.
    hikari.setConnectionInitSql(
        "SET statement_timeout = "
            + Math.max(1L, timeouts.statement().toMillis())
            + "; "
            + READ_COMMITTED);
    hikari.setMaximumPoolSize(maximumPoolSize);
    hikari.setMinimumIdle(minimumIdle);
    hikari.setConnectionTimeout(timeouts.connection().toMillis());
    hikari.setValidationTimeout(
        Math.min(timeouts.connection().toMillis(), Duration.ofSeconds(5).toMillis()));
    hikari.setInitializationFailTimeout(-1);
    hikari.setAutoCommit(true);
    // Also the level HikariCP restores on a connection whose isolation a user changed.
    hikari.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    hikari.setExceptionOverride(new EvictReadOnly());
    return new HikariDataSource(hikari);
  }

  /**
   * A connection whose server refused a write as read-only (SQLState 25006: a standby a DNS name or
   * virtual IP still led to after a failover, or default_transaction_read_only turned on) leaves
   * the pool. HikariCP evicts on connection errors only, and kept it until its 30-minute lifetime
   * ran out, every claim and publish on it failing while a writable server was there.
   */
  private static final class EvictReadOnly implements SQLExceptionOverride {
    @java.lang.Override
    public SQLExceptionOverride.Override adjudicate(SQLException e) {
      return READ_ONLY_TRANSACTION.equals(e.getSQLState())
          ? SQLExceptionOverride.Override.MUST_EVICT
          : SQLExceptionOverride.Override.CONTINUE_EVICT;
    }
  }

  private static final String READ_ONLY_TRANSACTION = "25006";

  /**
   * Credentials and what every connection of the connector sets (and {@link DriverDataSource}
   * leaves the server's DETAIL out of the driver's messages, whatever the URL says).
   */
  private static Properties driverProperties(String user, Password password, String application) {
    Properties props = new Properties();
    props.setProperty("ApplicationName", application);
    props.setProperty("tcpKeepAlive", "true");
    if (user != null) {
      props.setProperty("user", user);
    }
    if (password != null) {
      props.setProperty("password", password.value());
    }
    return props;
  }

  /**
   * One connection outside the pool, with the pool's credentials and settings, for a connection
   * that must stay apart (a LISTEN connection, say). Opening it takes at most about {@code
   * connection.timeout.ms}; once open, reads have no timeout.
   *
   * @throws SQLException classified by SQLState as usual (see {@link
   *     dev.outboxrelay.store.postgres.SqlStates#classify}); its message holds the SQLState only,
   *     none of the driver's text
   */
  public static Connection connect(ConnectionSettings settings, String applicationName)
      throws SQLException {
    Connection connection =
        connectOrNull(
            settings.jdbcUrl(),
            settings.user(),
            settings.password(),
            settings.connectTimeout(),
            applicationName);
    if (connection == null) {
      throw new SQLException("connection.url is not a valid PostgreSQL JDBC URL", "08001");
    }
    return connection;
  }

  /**
   * Connections outside the pool, opened on demand and closed by their user, without the pool's
   * statement and socket timeouts: for schema migrations, whose index builds on a large table may
   * rightly take longer than any claim. Without a socket timeout given in the URL either: the
   * driver would drop the connection in the middle of such a build, the server would roll it back,
   * and each retry would hold the table's locks as long, for nothing.
   */
  public static DataSource unpooled(ConnectionSettings settings, String applicationName) {
    return unpooled(settings, applicationName, null);
  }

  /** A URL with hosts; without, the database name follows {@code jdbc:postgresql:}. */
  private static final String HOSTS_PREFIX = "jdbc:postgresql://";

  /**
   * A password (or the SSL key's) given as a key and value, as the driver's parameters and libpq's
   * keywords are; not a setting whose name merely ends in one ({@code -c app.password=}, {@code
   * keystorepassword=}).
   */
  private static final Pattern PASSWORD_ASSIGNMENT =
      Pattern.compile("(?<![\\w.])(?:ssl)?password\\s*=", Pattern.CASE_INSENSITIVE);

  /** How often a migration's backend checks that its client is still there, in ms. */
  static final String CLIENT_CHECK_MS = "5000";

  /**
   * Session settings of a migration's connections: a role's or database's timeouts on idle or whole
   * transactions would end Flyway's lock transaction (open for the whole run) or a long migration
   * half-way, at every retry. Session settings, as these connections serve migrations only and
   * close after them; behind a pooler in transaction mode they may not hold (its own limits apply),
   * and each migration's transaction lifts them again (MigrationSettingsCallback). Without those
   * timeouts, the server's TCP keepalives end the session of a migrator whose host died or was cut
   * off within about two minutes (60 s idle, then 6 probes 10 s apart): with the system's defaults,
   * about two hours, its lock held and every other task waiting meanwhile. And from PostgreSQL 14 a
   * statement whose client has gone (a CLI ended with Ctrl-C, a worker that exited mid-build) is
   * ended within 5 s: a busy backend notices a closed socket only when its statement ends, and went
   * on building an index under its table lock, the application's inserts queued behind it, while
   * the advisory lock, whose idle session closed at once, let the next migrator in. Set in a block
   * that shrugs off a refusal: a server that cannot watch its sockets (Windows; before 15, any
   * without POLLRDHUP, macOS among them) refuses any value but 0, and that must not stop
   * migrations. Behind a pooler the socket watched is the pooler's.
   */
  public static final String MIGRATION_SESSION =
      "SELECT set_config('idle_in_transaction_session_timeout', '0', false),"
          + " CASE WHEN current_setting('server_version_num')::int >= 170000"
          + " THEN set_config('transaction_timeout', '0', false) END,"
          + " set_config('tcp_keepalives_idle', '60', false),"
          + " set_config('tcp_keepalives_interval', '10', false),"
          + " set_config('tcp_keepalives_count', '6', false),"
          // READ COMMITTED as the task's sessions: a database or role that defaults to REPEATABLE
          // READ kept Flyway's lock transaction's first snapshot for the whole run, holding back
          // vacuum and every concurrent index build in the database (an operator's pre-build).
          + " set_config('default_transaction_isolation', 'read committed', false);"
          + " DO $$ BEGIN IF current_setting('server_version_num')::int >= 140000 THEN"
          + " PERFORM set_config('client_connection_check_interval', '"
          + CLIENT_CHECK_MS
          + "', false); END IF;"
          + " EXCEPTION WHEN invalid_parameter_value OR undefined_object THEN NULL; END $$";

  /** The driver's property naming its socket factory's class. */
  static final String SOCKET_FACTORY = "socketFactory";

  /** As {@link #unpooled(ConnectionSettings, String)}, each connection running {@code setup}. */
  public static DataSource unpooled(
      ConnectionSettings settings, String applicationName, String setup) {
    Properties props =
        unpooledProperties(
            settings.user(), settings.password(), applicationName, settings.connectTimeout());
    // Without a socket timeout, keepalives end a read from a dead server or path: within minutes,
    // not the system's two hours. A factory the URL names (a proxy's, say) wins.
    props.setProperty(SOCKET_FACTORY, KeepAliveSocketFactory.class.getName());
    return new DriverDataSource(settings.jdbcUrl(), props, setup)
        .overriding("socketTimeout", "0")
        .overriding("tcpKeepAlive", "true");
  }

  /** Whether the URL's query string carries a password. */
  public static boolean urlHasPassword(String jdbcUrl) {
    return DriverDataSource.urlParameters(jdbcUrl).containsKey("password");
  }

  /**
   * Whether the URL holds a password where the driver does not take it for one: before its query
   * string ({@link #hasPasswordBeforeQuery}) or in another parameter's value ({@link
   * #hasPasswordInAnotherParameter}).
   */
  public static boolean hasMisplacedPassword(String url) {
    return hasPasswordBeforeQuery(url) || hasPasswordInAnotherParameter(url);
  }

  /**
   * Whether the URL names a password before its query string, as in {@code /app;password=...},
   * {@code /app&password =...} or %-escaped in the database name, which the driver decodes (its
   * hosts it does not: an IPv6 zone such as {@code [fe80::1%eth0]} is no escape): the driver takes
   * it for part of the database name (and the server's error then quotes it), never for a password.
   * A database name that does not decode is refused by the driver ({@link #databaseNameDecodes}).
   */
  static boolean hasPasswordBeforeQuery(String url) {
    String beforeQuery = beforeQuery(url);
    if (PASSWORD_ASSIGNMENT.matcher(beforeQuery).find()) {
      return true;
    }
    try {
      return PASSWORD_ASSIGNMENT.matcher(decodedDatabaseName(beforeQuery)).find();
    } catch (IllegalArgumentException e) {
      return false; // a malformed escape: databaseNameDecodes reports it
    }
  }

  /**
   * Whether a query parameter other than {@code password} holds one in its value, as in {@code
   * ?user=app;password=...}: the driver passes the whole value on (the server's errors quote a user
   * name). A query string that does not decode counts as none: {@link #urlParameters} refuses it.
   */
  static boolean hasPasswordInAnotherParameter(String url) {
    try {
      return urlParameters(url).entrySet().stream()
          .anyMatch(
              p ->
                  !"password".equals(p.getKey())
                      && PASSWORD_ASSIGNMENT.matcher(String.valueOf(p.getValue())).find());
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** Whether the URL's database name %-decodes, as the driver requires of it. */
  public static boolean databaseNameDecodes(String url) {
    try {
      decodedDatabaseName(beforeQuery(url));
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private static String beforeQuery(String url) {
    int query = url.indexOf('?');
    return query < 0 ? url : url.substring(0, query);
  }

  /**
   * The database name as the driver reads it: the text after the hosts' '/' (or after {@code
   * jdbc:postgresql:} without hosts), decoded as it decodes it ({@code +} is a space).
   *
   * @throws IllegalArgumentException on a malformed %-escape
   */
  private static String decodedDatabaseName(String beforeQuery) {
    int start =
        beforeQuery.startsWith(HOSTS_PREFIX)
            ? beforeQuery.indexOf('/', HOSTS_PREFIX.length())
            : beforeQuery.indexOf(':', beforeQuery.indexOf(':') + 1);
    return start < 0
        ? ""
        : URLDecoder.decode(beforeQuery.substring(start + 1), StandardCharsets.UTF_8);
  }

  /**
   * Whether {@code text} holds {@code word} (lower case), as it is or %-decoded as the driver
   * decodes a database name; text that does not decode counts as holding it.
   */
  public static boolean namesPassword(String text, String word) {
    if (text.toLowerCase(Locale.ROOT).contains(word)) {
      return true;
    }
    try {
      return URLDecoder.decode(text.replace("+", "%2B"), StandardCharsets.UTF_8)
          .toLowerCase(Locale.ROOT)
          .contains(word);
    } catch (IllegalArgumentException e) {
      return true; // a malformed escape: cannot tell
    }
  }

  /**
   * Whether a URL may have user information before its host ({@code //user:password@host}),
   * whatever its scheme: an {@code @} anywhere before the query string, or in a query parameter's
   * name. Not only in the authority as a URI reads it: a password may hold a {@code /} or {@code #}
   * (the driver has no fragments), or a {@code ?}, which makes the rest look like a parameter. An
   * {@code @} in a parameter's value (a user {@code alice@server}) is not one; a database name with
   * an {@code @} can be written {@code %40}.
   */
  public static boolean hasUserInfo(String url) {
    int start = url.indexOf("//");
    if (start < 0) {
      return false;
    }
    int query = url.indexOf('?', start + 2);
    int slash = url.indexOf('/', start + 2);
    // The driver needs a '/' before the query string: a '?' before any '/' is a password's.
    int end = query < 0 ? url.length() : query;
    if (query >= 0 && (slash < 0 || slash > query)) {
      end = slash < 0 ? url.length() : slash;
    }
    if (url.substring(start + 2, end).indexOf('@') >= 0) {
      return true;
    }
    if (query < 0) {
      return false;
    }
    for (String parameter : url.substring(query + 1).split("&", -1)) {
      int eq = parameter.indexOf('=');
      if ((eq < 0 ? parameter : parameter.substring(0, eq)).indexOf('@') >= 0) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether a URL with a host part ({@code //}) has exactly one {@code /} after it before the query
   * string, ending the hosts and starting the database name ({@code
   * jdbc:postgresql://host:5432/app}), as the driver requires. It refuses any other such URL and
   * logs it, the database name included, through java.util.logging at WARNING, outside the
   * connector's control.
   */
  public static boolean namesTheDatabaseAfterItsHosts(String url) {
    int start = url.indexOf("//");
    if (start < 0) {
      return true; // jdbc:postgresql:app, on localhost
    }
    int query = url.indexOf('?', start + 2);
    String hostsAndDatabase = url.substring(start + 2, query < 0 ? url.length() : query);
    return hostsAndDatabase.indexOf('/') >= 0
        && hostsAndDatabase.indexOf('/') == hostsAndDatabase.lastIndexOf('/');
  }

  /**
   * Whether every host of {@code url} that names a port names a number from 1 to 65535. The driver
   * logs a port it cannot read, as it is, at WARNING: one that is a password (user:password pasted
   * without its {@code @host}) must never reach it.
   */
  public static boolean portsAreNumbers(String url) {
    int start = url.indexOf("//");
    if (start < 0) {
      return true;
    }
    int end = url.indexOf('/', start + 2);
    int query = url.indexOf('?', start + 2);
    if (end < 0 || (query >= 0 && query < end)) {
      end = query < 0 ? url.length() : query;
    }
    for (String host : url.substring(start + 2, end).split(",", -1)) {
      int colon = host.lastIndexOf(':');
      if (colon > host.lastIndexOf(']')) { // a port, not an IPv6 address's colons
        String port = host.substring(colon + 1);
        if (!port.matches("[0-9]{1,5}") || !between(Integer.parseInt(port), 1, 65535)) {
          return false;
        }
      }
    }
    return true;
  }

  private static boolean between(int value, int min, int max) {
    return value >= min && value <= max;
  }

  /**
   * The parameters of {@code jdbcUrl}'s query string, decoded, as the connections get them: they
   * take precedence over the connector's own properties (user, password, timeouts).
   *
   * @throws IllegalArgumentException on a malformed %-escape (its message quotes nothing)
   */
  public static Properties urlParameters(String jdbcUrl) {
    return DriverDataSource.urlParameters(jdbcUrl);
  }

  /** Null when the driver does not accept the URL (a malformed host or port, say). */
  public static Connection connectOrNull(
      String jdbcUrl, String user, Password password, Duration timeout, String applicationName)
      throws SQLException {
    return new DriverDataSource(
            jdbcUrl, unpooledProperties(user, password, applicationName, timeout))
        .connectOrNull();
  }

  /**
   * As {@link #connectOrNull}, opening and logging in within {@code timeout} whatever the URL's own
   * timeouts say: for the connector's validation (see {@link #createForChecks}).
   */
  public static Connection connectForCheckOrNull(
      String jdbcUrl, String user, Password password, Duration timeout, String applicationName)
      throws SQLException {
    String seconds = Long.toString(wholeSeconds(timeout));
    return new DriverDataSource(
            jdbcUrl, unpooledProperties(user, password, applicationName, timeout))
        .overriding("connectTimeout", seconds)
        .overriding("loginTimeout", seconds)
        .connectOrNull();
  }

  /** Opening and logging in each take at most about {@code connectTimeout}; reads, no limit. */
  private static Properties unpooledProperties(
      String user, Password password, String applicationName, Duration connectTimeout) {
    Properties props = driverProperties(user, password, applicationName);
    String seconds = Long.toString(wholeSeconds(connectTimeout));
    props.setProperty("connectTimeout", seconds);
    props.setProperty("loginTimeout", seconds);
    return props;
  }

  /** The driver's timeouts are whole seconds, and 0 would mean "none". */
  private static long wholeSeconds(Duration timeout) {
    return Math.max(1L, (timeout.toMillis() + 999L) / 1000L);
  }
}
