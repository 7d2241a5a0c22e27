package dev.outboxrelay.store.postgres;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.sql.Statement;
import java.util.Properties;

/**
 * Opens connections straight from the PostgreSQL driver with the URL's parameters moved into
 * properties, so the driver and the pool only ever see (and may log, at debug level) {@code
 * jdbc:postgresql://host:port/database}: a password or token put in the URL's query string never
 * reaches a log line. The driver is used directly, not through DriverManager, whose view of drivers
 * depends on the caller's class loader.
 */
final class DriverDataSource extends AbstractDataSource {
  private final String baseUrl;
  private final Properties properties;
  private final String sessionSetup;
  private int loginTimeoutSeconds;
  private boolean textless;

  /**
   * @param jdbcUrl the configured URL; its query parameters override {@code defaults}
   * @param defaults properties such as user, password and timeouts
   */
  DriverDataSource(String jdbcUrl, Properties defaults) {
    this(jdbcUrl, defaults, null);
  }

  /**
   * @param sessionSetup a statement each new connection runs first (session settings), or null
   */
  DriverDataSource(String jdbcUrl, Properties defaults, String sessionSetup) {
    this.sessionSetup = sessionSetup;
    int query = jdbcUrl.indexOf('?');
    this.baseUrl = query < 0 ? jdbcUrl : jdbcUrl.substring(0, query);
    this.properties = new Properties();
    this.properties.putAll(defaults);
    this.properties.putAll(urlParameters(jdbcUrl));
    // Whatever the URL says (one copied from another service's may turn it on): the server's
    // DETAIL can quote row values (a duplicate key's, a failing row's payload and headers), and
    // HikariCP logs the message of an error that breaks a connection, outside the relay's control.
    this.properties.setProperty(LOG_SERVER_ERROR_DETAIL, "false");
  }

  static final String LOG_SERVER_ERROR_DETAIL = "logServerErrorDetail";

  /**
   * The query parameters of {@code jdbcUrl}, decoded; empty without a query string.
   *
   * @throws IllegalArgumentException on a malformed %-escape, with a message that quotes nothing of
   *     the URL (the JDK's would quote the rest of the value: part of a password)
   */
  static Properties urlParameters(String jdbcUrl) {
    Properties parameters = new Properties();
    int query = jdbcUrl.indexOf('?');
    if (query >= 0) {
      for (String pair : jdbcUrl.substring(query + 1).split("&")) {
        if (pair.isEmpty()) {
          continue;
        }
        int eq = pair.indexOf('=');
        String key = decode(eq < 0 ? pair : pair.substring(0, eq));
        String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
        parameters.setProperty(key, value);
      }
    }
    return parameters;
  }

  private static String decode(String s) {
    try {
      return URLDecoder.decode(s, StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(MALFORMED_ESCAPE);
    }
  }

  static final String MALFORMED_ESCAPE = "the query string has a malformed %-escape";

  /** This data source with {@code key} set to {@code value} whatever the URL's parameters say. */
  DriverDataSource overriding(String key, String value) {
    properties.setProperty(key, value);
    return this;
  }

  /**
   * This data source with connections whose failures carry no driver text ({@link
   * TextlessConnection}): for a pool, which logs some of its connections' failures on its own.
   */
  DriverDataSource textless() {
    textless = true;
    return this;
  }

  /** For tests: the driver property {@code key} as connections get it. */
  String property(String key) {
    return properties.getProperty(key);
  }

  /**
   * Null when the driver does not accept the URL (a malformed host or port, say). A failure keeps
   * only its SQLState ({@link #withoutText}): the driver's text can name the host, the server's
   * pg_hba line with the client's address, user and database.
   */
  Connection connectOrNull() throws SQLException {
    try {
      return new org.postgresql.Driver().connect(baseUrl, properties);
    } catch (SQLException e) {
      throw withoutText(e, "could not connect");
    }
  }

  @Override
  public Connection getConnection() throws SQLException {
    Connection c = connectOrNull();
    if (c == null) {
      throw new SQLException("connection.url is not a valid PostgreSQL JDBC URL", "08001");
    }
    if (sessionSetup != null) {
      try (Statement s = c.createStatement()) {
        s.execute(sessionSetup);
      } catch (SQLException e) {
        try (c) {
          throw withoutText(e, "could not set up the session");
        }
      }
    }
    return textless ? TextlessConnection.of(c) : c;
  }

  /**
   * The driver's failure to connect, its text and cause left out: HikariCP logs a failure to open a
   * connection with its cause chain (at WARN, with the stack trace, once an empty pool has failed
   * for a minute: any database outage), and the driver's message is raw server or network text
   * (host and port, the server's pg_hba line with the client's address, user and database). The
   * relay reads only the SQLState and the kind, both kept; an interrupt's cause too, which marks a
   * stopping task's wait.
   */
  static SQLException withoutText(SQLException e, String what) {
    SQLException bare = bare(e, what);
    if (e.getCause() instanceof InterruptedException interrupted) {
      bare.initCause(interrupted);
    }
    // The driver links the I/O error behind a session's end (25P03, then 08006): HikariCP reads
    // the chain's states to evict the connection.
    SQLException last = bare;
    SQLException next = e.getNextException();
    for (int depth = 0; next != null && depth < 10; depth++, next = next.getNextException()) {
      SQLException copy = bare(next, what);
      last.setNextException(copy);
      last = copy;
    }
    return bare;
  }

  /** {@code e}'s SQLState and kind, alone. */
  private static SQLException bare(SQLException e, String what) {
    String state = SqlStates.findState(e); // as the relay's classification reads it
    String message = "outbox-relay: " + what + " (SQLState " + state + ")";
    return e instanceof SQLTransientException
        ? new SQLTransientException(message, state, e.getErrorCode())
        : e instanceof SQLRecoverableException
            ? new SQLRecoverableException(message, state, e.getErrorCode())
            : new SQLException(message, state, e.getErrorCode());
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    throw new SQLFeatureNotSupportedException("credentials come from the connector settings");
  }

  @Override
  public void setLoginTimeout(int seconds) {
    this.loginTimeoutSeconds = seconds;
    if (seconds > 0) {
      properties.setProperty("loginTimeout", Integer.toString(seconds));
    }
  }

  @Override
  public int getLoginTimeout() {
    return loginTimeoutSeconds;
  }

  @Override
  public String toString() {
    return "outbox-relay PostgreSQL data source"; // never the URL: the pool logs this
  }
}
