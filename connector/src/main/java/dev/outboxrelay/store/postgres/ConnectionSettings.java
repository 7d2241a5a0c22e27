package dev.outboxrelay.store.postgres;

import java.time.Duration;
import org.apache.kafka.common.config.types.Password;

/**
 * How to reach the database: what {@link DataSourceFactory} needs of the connector's settings.
 *
 * @param password null when the URL or the server needs none
 * @param connectTimeout opening a connection, and waiting for one from the pool
 * @param statementTimeout how long the database lets one statement of the pool run
 * @param socketTimeout how long one read on a pooled connection may wait; above the statement's
 */
public record ConnectionSettings(
    String jdbcUrl,
    String user,
    Password password,
    Duration connectTimeout,
    Duration statementTimeout,
    Duration socketTimeout,
    int poolSize) {

  @Override
  public String toString() {
    return "ConnectionSettings[user=" + user + ", poolSize=" + poolSize + "]"; // no URL, no secret
  }
}
