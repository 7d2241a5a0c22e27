package dev.outboxrelay.store.postgres;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;

/**
 * The oldest PostgreSQL the relay supports, and the check that refuses an older server in words: on
 * 12 without pgcrypto the first migration failed on {@code gen_random_uuid()} (built in since 13)
 * with an error that named a function, not the server.
 */
public final class ServerVersion {
  /** {@code server_version_num} of the oldest supported server: 13 (docs/deployment.md). */
  public static final int OLDEST_SUPPORTED = 130000;

  private ServerVersion() {}

  /**
   * @throws ServerTooOldException the server is older than {@link #OLDEST_SUPPORTED}
   */
  public static void require(Connection connection) throws SQLException {
    Optional<String> refusal = refusal(connection);
    if (refusal.isPresent()) {
      throw new ServerTooOldException(refusal.get());
    }
  }

  /** What to tell of this connection's server if it is older than {@link #OLDEST_SUPPORTED}. */
  public static Optional<String> refusal(Connection connection) throws SQLException {
    return refusal(serverVersionNum(connection), OLDEST_SUPPORTED);
  }

  /** The server's {@code server_version_num}, e.g. 170011 for 17.11. */
  static int serverVersionNum(Connection connection) throws SQLException {
    try (Statement s = connection.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_setting('server_version_num')::int")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** What to tell of a server of {@code versionNum} when it is older than {@code oldest}. */
  static Optional<String> refusal(int versionNum, int oldest) {
    if (versionNum >= oldest) {
      return Optional.empty();
    }
    return Optional.of(
        "the server is PostgreSQL "
            + named(versionNum)
            + "; outbox-relay needs "
            + named(oldest)
            + " or newer (docs/deployment.md)");
  }

  /** 170011 as "17.11", 130000 as "13", 90624 as "9.6.24" (the numbering before 10). */
  static String named(int versionNum) {
    if (versionNum < 100000) {
      return versionNum / 10000 + "." + versionNum / 100 % 100 + "." + versionNum % 100;
    }
    int minor = versionNum % 10000;
    return versionNum / 10000 + (minor == 0 ? "" : "." + minor);
  }
}
