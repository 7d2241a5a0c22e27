package dev.outboxrelay.cli;

import java.time.Duration;

/**
 * Resolved connection settings. {@link #toString()} never shows the URL or the password.
 *
 * @param user null for the driver's default (the URL's user, else the operating system user)
 * @param password null when none was given
 * @param statementTimeout zero to keep the server's statement_timeout
 */
public record ConnectionSettings(
    String jdbcUrl,
    String user,
    String password,
    Duration connectTimeout,
    Duration statementTimeout) {

  @Override
  public String toString() {
    return "ConnectionSettings[user="
        + user
        + ", connectTimeout="
        + connectTimeout
        + ", statementTimeout="
        + statementTimeout
        + "]";
  }
}
