package dev.outboxrelay.cli;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.cli.operator.OperatorStore;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.DataSourceFactory;
import dev.outboxrelay.store.postgres.KeepAliveSocketFactory;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import dev.outboxrelay.store.postgres.SqlStates;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * The CLI's connection to one outbox table: a pool of at most three connections (migrate holds
 * three at once: its lock's and Flyway's two), opened eagerly so that a wrong password or an
 * unreachable server fails at once. Every failure leaves here classified by SQLState, without the
 * driver's text.
 */
public final class Database implements AutoCloseable {
  /** Shown in {@code pg_stat_activity.application_name}. */
  public static final String APPLICATION_NAME = "outbox-relay-cli";

  private static final String DRIVER_CLASS = "org.postgresql.Driver";
  private static final String URL_PREFIX = "jdbc:postgresql:";

  private final HikariDataSource pool;
  private final OutboxTable table;
  private final ColumnMapping columns;

  private Database(HikariDataSource pool, OutboxTable table, ColumnMapping columns) {
    this.pool = pool;
    this.table = table;
    this.columns = columns;
  }

  /**
   * Opens the pool. A database failure leaves as a sanitized {@link
   * dev.outboxrelay.store.OutboxStoreException}, for the command to report in its own words.
   */
  public static Database open(ConnectionSettings settings, OutboxTable table) {
    return open(settings, table, ColumnMapping.RELAY);
  }

  /** For a table whose message fields have other names (an adopted Debezium table). */
  public static Database open(
      ConnectionSettings settings, OutboxTable table, ColumnMapping columns) {
    return open(settings, table, columns, null);
  }

  /**
   * @param sessionSetup a statement each connection runs after the statement timeout, or null: a
   *     migration's lifts the server's idle and transaction timeouts (see {@code
   *     DataSourceFactory.MIGRATION_SESSION})
   */
  public static Database open(
      ConnectionSettings settings, OutboxTable table, ColumnMapping columns, String sessionSetup) {
    requireValidUrl(settings.jdbcUrl());
    HikariConfig config = new HikariConfig();
    config.setPoolName(APPLICATION_NAME);
    config.setDriverClassName(DRIVER_CLASS);
    if (settings.user() != null) {
      config.setUsername(settings.user());
    }
    if (settings.password() != null) {
      config.setPassword(settings.password());
    }
    config.setMaximumPoolSize(3); // migrate: its lock's connection and Flyway's two
    config.setMinimumIdle(0);
    config.setAutoCommit(true);
    // park and the batched requeue and discard lock and re-check rows the relay changes meanwhile,
    // as READ COMMITTED does; a database that defaults to SERIALIZABLE would fail them with 40001.
    // Set on each connection (below), and restored by HikariCP after a snapshot's REPEATABLE READ.
    config.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    long timeoutMillis = settings.connectTimeout().toMillis();
    config.setConnectionTimeout(timeoutMillis);
    config.setValidationTimeout(Math.min(timeoutMillis, 5_000L));
    // One attempt while the pool starts: a CLI reports a refused login now, not after retrying.
    config.setInitializationFailTimeout(1);
    config.addDataSourceProperty("ApplicationName", APPLICATION_NAME);
    String seconds = Long.toString(settings.connectTimeout().toSeconds());
    config.addDataSourceProperty("connectTimeout", seconds);
    config.addDataSourceProperty("loginTimeout", seconds);
    // No socket timeout unless the URL sets one (a migration's index build may take hours): TCP
    // keepalives end a read from a server that died, or over a path a firewall dropped, within
    // minutes instead of the system's two hours. A socketFactory or tcpKeepAlive in the URL wins.
    config.addDataSourceProperty("tcpKeepAlive", "true");
    config.addDataSourceProperty("socketFactory", KeepAliveSocketFactory.class.getName());
    List<String> init = new ArrayList<>();
    init.add(DataSourceFactory.READ_COMMITTED);
    if (!settings.statementTimeout().isZero()) {
      // A session setting of the CLI's own connections, run after connecting and so after any
      // options of the URL; a cancelled statement fails with 57014. (The startup parameter
      // "options" would lose to the URL's own, and poolers such as PgBouncer refuse it.)
      init.add("SET statement_timeout = " + settings.statementTimeout().toMillis());
    }
    if (sessionSetup != null) {
      init.add(sessionSetup);
    }
    config.setConnectionInitSql(String.join("; ", init));
    config.setJdbcUrl(settings.jdbcUrl());
    try {
      return new Database(new HikariDataSource(config), table, columns);
    } catch (RuntimeException e) {
      // HikariCP's PoolInitializationException wraps the driver's SQLException.
      throw classify(e, "connect");
    }
  }

  /**
   * Turns any failure that comes from the database side (driver, pool, Flyway) into a sanitized
   * exception: an {@link dev.outboxrelay.store.OutboxStoreException} classified by the first
   * SQLState in its chain, its text dropped; a {@link CliException} when there is no SQLState.
   */
  public static RuntimeException classify(Throwable failure, String operation) {
    if (failure instanceof CliException cli) {
      return cli;
    }
    Throwable t = failure;
    for (int depth = 0; t != null && depth < 16; depth++, t = t.getCause()) {
      if (t instanceof SQLException sql) {
        return SqlStates.classify(sql, operation);
      }
    }
    return CliException.database(
        "DB_ERROR", operation + " failed without an SQLState; the cause is not shown");
  }

  /**
   * Checks the URL before the pool sees it: the pool would quote a URL it rejects, credentials and
   * all.
   */
  private static void requireValidUrl(String url) {
    if (urlProperties(url) == null) {
      throw CliException.usage(
          "the JDBC URL is not a valid PostgreSQL URL (jdbc:postgresql://host:port/database);"
              + " it is not shown because it may contain credentials");
    }
    // user:password@host: the driver takes all of it for the host name, and would look it up.
    if (DataSourceFactory.hasUserInfo(url)) {
      throw CliException.usage(
          "the JDBC URL has a user or password before its host (user:password@host), which the"
              + " driver does not read: give them as --user and OUTBOX_PASSWORD or"
              + " --password-file; the URL is not shown");
    }
    if (DataSourceFactory.hasMisplacedPassword(url)) {
      throw CliException.usage(
          "the JDBC URL has a password in its hosts, its database name or another parameter's"
              + " value (as in /app;password=... or ?user=app;password=...), which the driver"
              + " takes for part of that name or value: give it as OUTBOX_PASSWORD or"
              + " --password-file; the URL is not shown");
    }
  }

  /**
   * What the driver reads from the URL (its parameters decoded, and the host, port and database),
   * as it reads it; null when it is no PostgreSQL URL the driver takes.
   */
  static Properties urlProperties(String url) {
    try {
      return url.startsWith(URL_PREFIX) ? org.postgresql.Driver.parseURL(url, null) : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** Stands for a value the CLI passes: a URL parameter outranks it, nothing else does. */
  private static final String PASSED = "\0";

  /**
   * The user and password the URL itself gives, as the driver reads them (the other properties
   * dropped); null as for {@link #urlProperties}. Read beside values the CLI passes: read alone, a
   * {@code service} entry of pg_service.conf, or a password from .pgpass for the URL's user, looked
   * like the URL's, and a URL without them was refused beside --user or OUTBOX_PASSWORD.
   */
  static Properties urlCredentials(String url) {
    Properties passed = new Properties();
    passed.setProperty("user", PASSED);
    passed.setProperty("password", PASSED);
    Properties read;
    try {
      read = url.startsWith(URL_PREFIX) ? org.postgresql.Driver.parseURL(url, passed) : null;
    } catch (RuntimeException e) {
      return null;
    }
    if (read == null) {
      return null;
    }
    Properties own = new Properties();
    for (String key : List.of("user", "password")) {
      String value = read.getProperty(key);
      if (value != null && !PASSED.equals(value)) {
        own.setProperty(key, value);
      }
    }
    return own;
  }

  public DataSource dataSource() {
    return pool;
  }

  public OutboxTable table() {
    return table;
  }

  /** The relay's own store: its counts, lag and retention delete are reused, not re-written. */
  public PostgresOutboxStore relayStore() {
    return new PostgresOutboxStore(pool, table, columns, RelayClock.database(), null);
  }

  public OperatorStore operatorStore() {
    return new OperatorStore(pool, table, columns, payloadIsBytea());
  }

  /**
   * Runs {@code reads} with stores that share one connection in one read-only REPEATABLE READ
   * transaction, so that figures read by several statements agree with each other (a row that
   * changes status meanwhile is counted once, as it was). Rolled back after: nothing is written.
   *
   * <p>Time too is the transaction's: each figure is judged at its start ({@code
   * transaction_timestamp()}), not at its own statement's, since the snapshot's rows are as the
   * first statement saw them however long it took (a count of minutes): by a later clock, a lease
   * the snapshot holds would have expired and a row would be older than it was. The operator
   * store's reads say {@code transaction_timestamp()} themselves; the relay store is given that
   * instant as its clock ({@link #transactionClock}).
   */
  public <T> T inOneSnapshot(Function<Snapshot, T> reads) {
    boolean payloadIsBytea = payloadIsBytea();
    return inOneReadOnlyTransaction(
        c -> {
          DataSource one = Snapshot.lending(c);
          return reads.apply(
              new Snapshot(
                  new PostgresOutboxStore(one, table, columns, transactionClock(c), null),
                  new OperatorStore(one, table, columns, payloadIsBytea)));
        });
  }

  /**
   * The relay store's clock in a snapshot: the start of {@code c}'s transaction, bound as the
   * store's {@code :now} (its lag). Read on first use, so that the snapshot is still taken by the
   * reads' first statement; the same instant whenever it is read.
   */
  private static RelayClock transactionClock(Connection c) {
    return new RelayClock() {
      private Instant began;

      @Override
      public Instant override() {
        if (began == null) {
          try (Statement s = c.createStatement();
              ResultSet rs = s.executeQuery("SELECT transaction_timestamp()")) {
            rs.next();
            began = rs.getObject(1, OffsetDateTime.class).toInstant();
          } catch (SQLException e) {
            throw classify(e, "read the transaction's time");
          }
        }
        return began;
      }
    };
  }

  /**
   * Runs {@code reads} on one connection in one read-only REPEATABLE READ transaction, rolled back
   * after. The transaction's first statement sets both, for the transaction alone: JDBC's
   * setTransactionIsolation is a session setting in pgjdbc, a statement of its own before the
   * transaction, which behind a pooler in transaction mode may reach another server connection (the
   * reads then run under READ COMMITTED, and that connection keeps REPEATABLE READ for whoever gets
   * it next). Package-private for the test of those settings.
   */
  <T> T inOneReadOnlyTransaction(Reads<T> reads) {
    try (Connection c = pool.getConnection()) {
      c.setAutoCommit(false);
      try {
        try (Statement s = c.createStatement()) {
          s.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
        }
        return reads.apply(c);
      } finally {
        c.rollback();
      }
    } catch (SQLException e) {
      throw classify(e, "read one snapshot");
    }
  }

  /** Reads on the transaction's connection. */
  @FunctionalInterface
  interface Reads<T> {
    T apply(Connection c) throws SQLException;
  }

  /**
   * Whether the payload column is bytea (the relay's own table), or a domain over it, rather than
   * text-like (a Debezium table's jsonb): its size is measured differently. The relay judges it the
   * same way ({@code OutboxSql.readPayloadIsBytea}). A table or column not found counts as bytea;
   * the command's own statement then reports it missing.
   */
  private boolean payloadIsBytea() {
    try (Connection c = pool.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT COALESCE(NULLIF(t.typbasetype, 0), t.oid) = 'bytea'::regtype"
                    + " FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
                    + " WHERE a.attrelid = to_regclass(?) AND a.attname = ?"
                    + " AND NOT a.attisdropped")) {
      ps.setString(1, table.qualified());
      ps.setString(2, columns.payload());
      try (ResultSet rs = ps.executeQuery()) {
        return !rs.next() || rs.getBoolean(1);
      }
    } catch (SQLException e) {
      throw classify(e, "read the payload column's type");
    }
  }

  @Override
  public void close() {
    pool.close();
  }
}
