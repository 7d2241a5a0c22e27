package dev.outboxrelay.localstack;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/** The PostgreSQL that holds the outbox: the embedded one, or the user's own. */
record Database(String jdbcUrl, String user, Optional<String> password, boolean embedded) {

  DataSource dataSource() {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    try {
      ds.setURL(jdbcUrl);
    } catch (IllegalArgumentException e) { // its message quotes the whole URL, password and all
      throw new StackException(
          "--jdbc-url (or "
              + StackOptions.JDBC_URL_ENV
              + ") is not a PostgreSQL JDBC URL the driver accepts:"
              + " jdbc:postgresql://host[:port]/database[?parameters]");
    }
    ds.setUser(user);
    password.ifPresent(ds::setPassword);
    ds.setApplicationName("outbox-relay-local-stack");
    // The launcher prints the driver's message of a failed statement: without the server's DETAIL,
    // which can quote a row's values.
    ds.setLogServerErrorDetail(false);
    return ds;
  }

  /** The URL as it may be printed: any password parameter masked. */
  String displayUrl() {
    return Redaction.jdbcUrl(jdbcUrl);
  }

  String credentialsNote() {
    if (embedded) {
      return "user " + user + ", no password";
    }
    return "user "
        + user
        + (password.isPresent() ? ", password from " + StackOptions.DB_PASSWORD_ENV : "");
  }

  /** Fails with the driver's SQLState and message (never the URL's secrets). */
  void requireReachable() {
    try (Connection c = dataSource().getConnection()) {
      c.isValid(5);
    } catch (SQLException e) {
      throw new StackException(
          "cannot connect to PostgreSQL at "
              + displayUrl()
              + " as "
              + user
              + " (SQLState "
              + e.getSQLState()
              + "): "
              + e.getMessage()
              + "\n  Check --jdbc-url (or "
              + StackOptions.JDBC_URL_ENV
              + "), --db-user (or "
              + StackOptions.DB_USER_ENV
              + ") and "
              + StackOptions.DB_PASSWORD_ENV
              + ".",
          e);
    }
  }
}
