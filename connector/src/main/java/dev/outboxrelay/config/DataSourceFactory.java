package dev.outboxrelay.config;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.common.config.types.Password;

/**
 * Builds the connection pool a task uses. The pool starts even while the database is down ({@code
 * initializationFailTimeout=-1}): connections are opened in the background and each {@code
 * getConnection()} fails after {@code connection.timeout.ms}, which the store classifies as
 * transient. Nothing here logs the URL or the password.
 */
public final class DataSourceFactory {
  /** Shown in {@code pg_stat_activity.application_name} for every connection of the relay. */
  public static final String APPLICATION_NAME = "outbox-relay";

  static final String DRIVER_CLASS = "org.postgresql.Driver";

  private DataSourceFactory() {}

  /** The task's pool: {@code connection.pool.size} connections, named {@code poolName}. */
  public static HikariDataSource create(OutboxSourceConfig config, String poolName) {
    return create(
        config.jdbcUrl(),
        config.user(),
        config.password(),
        config.connectionTimeout(),
        poolName,
        config.poolSize(),
        config.poolSize());
  }

  /** A pool with explicit sizes; {@link ConfigValidation} uses a small one that idles at zero. */
  static HikariDataSource create(
      String jdbcUrl,
      String user,
      Password password,
      Duration timeout,
      String poolName,
      int maximumPoolSize,
      int minimumIdle) {
    HikariConfig hikari = new HikariConfig();
    hikari.setPoolName(poolName);
    // Named explicitly so the driver is found through this plugin's class loader, not
    // DriverManager's view of the worker's class path.
    hikari.setDriverClassName(DRIVER_CLASS);
    hikari.setJdbcUrl(jdbcUrl);
    if (user != null) {
      hikari.setUsername(user);
    }
    if (password != null) {
      hikari.setPassword(password.value());
    }
    hikari.setMaximumPoolSize(maximumPoolSize);
    hikari.setMinimumIdle(minimumIdle);
    hikari.setConnectionTimeout(timeout.toMillis());
    hikari.setValidationTimeout(Math.min(timeout.toMillis(), Duration.ofSeconds(5).toMillis()));
    hikari.setInitializationFailTimeout(-1);
    hikari.setAutoCommit(true);
    hikari.addDataSourceProperty("ApplicationName", APPLICATION_NAME);
    // Opening a socket never takes much longer than the pool waits for it (the driver counts in
    // whole seconds). Settings in the URL take precedence over these.
    hikari.addDataSourceProperty("connectTimeout", Long.toString(wholeSeconds(timeout)));
    return new HikariDataSource(hikari);
  }

  /**
   * Driver properties for a single connection outside the pool, as the pool would open it, with
   * connect and login bounded by {@code timeout}.
   */
  static Properties singleConnectionProperties(String user, Password password, Duration timeout) {
    Properties props = new Properties();
    if (user != null) {
      props.setProperty("user", user);
    }
    if (password != null) {
      props.setProperty("password", password.value());
    }
    props.setProperty("ApplicationName", APPLICATION_NAME);
    String seconds = Long.toString(wholeSeconds(timeout));
    props.setProperty("connectTimeout", seconds);
    props.setProperty("loginTimeout", seconds);
    props.setProperty("socketTimeout", seconds);
    return props;
  }

  /** The driver's timeouts are whole seconds, and 0 would mean "none". */
  private static long wholeSeconds(Duration timeout) {
    return Math.max(1L, (timeout.toMillis() + 999L) / 1000L);
  }
}
