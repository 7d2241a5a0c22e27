package dev.outboxrelay.store.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The LISTEN/NOTIFY channel on which a table's insert trigger announces rows. The migrations fix
 * the channel into the trigger function's text, derived from the table's name as it was spelled
 * then: a table migrated as {@code outbox} announces on {@code outbox_relay}, and a connector
 * configured with {@code public.outbox} would listen on {@code public_outbox_relay}, hear nothing,
 * and quietly fall back to polling. So the channel is read from the function itself.
 */
public final class NotifyChannel {
  /** A channel as the migrations write it: a plain identifier, quoted into LISTEN as is. */
  private static final Pattern ANNOUNCED = Pattern.compile("pg_notify\\('([a-z0-9_]{1,63})'");

  private NotifyChannel() {}

  /**
   * The channel the table's insert trigger function announces on, or {@link
   * OutboxTable#notifyChannel()} when there is no such function (a table of the user's own tool
   * without the trigger) or its text names no channel the migrations would write.
   */
  public static String of(Connection connection, OutboxTable table) throws SQLException {
    try (PreparedStatement ps =
        connection.prepareStatement("SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure(?)")) {
      ps.setString(1, table.qualifiedNotifyFunction() + "()");
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          Matcher announced = ANNOUNCED.matcher(rs.getString(1));
          if (announced.find()) {
            return announced.group(1);
          }
        }
      }
    }
    return table.notifyChannel();
  }

  /**
   * Whether the session answering on {@code connection} listens on {@code channel}: not where a
   * pooler in transaction mode hands the statement to another server session than the LISTEN's.
   */
  public static boolean isListenedOn(Connection connection, String channel) throws SQLException {
    try (PreparedStatement ps =
        connection.prepareStatement(
            "SELECT CAST(? AS text) = ANY (ARRAY(SELECT pg_listening_channels()))")) {
      ps.setString(1, channel);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }
}
