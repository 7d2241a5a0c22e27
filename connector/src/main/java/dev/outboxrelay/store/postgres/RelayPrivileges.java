package dev.outboxrelay.store.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Which of the privileges a task uses the connecting role lacks. Without one, validation passes and
 * the task fails later: a role that may read but not UPDATE the outbox fails its first claim, and
 * one that may not INSERT into the published log fails its first publish, after Kafka has the batch
 * (the rows are sent again once their leases expire). Asked of the server, so grants through a
 * group role count. UPDATE and INSERT may be granted per column, on each column the relay writes;
 * SELECT granted on some columns counts as held (the statements' own errors name the column).
 */
public final class RelayPrivileges {
  /**
   * The outbox columns the relay's statements write (claims, leases, outcomes, recovery): the relay
   * state of {@link OutboxColumns.Row}, the publish time aside (a published row moves to the log).
   */
  static final List<String> WRITTEN =
      Stream.of(OutboxColumns.Row.values())
          .filter(c -> c.ordinal() >= OutboxColumns.Row.STATUS.ordinal())
          .filter(c -> c != OutboxColumns.Row.PUBLISHED_AT)
          .map(c -> c.label)
          .toList();

  /**
   * The privileges of {@code :privileges} the current role lacks on one table, in the given order.
   * DELETE is table-wide; UPDATE must reach every written column the table has, INSERT every column
   * a publish inserts (the log's); SELECT may be granted per column. A missing table lacks nothing
   * (it is reported as missing elsewhere).
   */
  private static final NamedSql MISSING =
      NamedSql.parse(
          """
          SELECT p.privilege
            FROM unnest(CAST(:privileges AS text[])) WITH ORDINALITY AS p(privilege, position)
           WHERE NOT CASE
                       WHEN p.privilege = 'DELETE'
                         THEN has_table_privilege(to_regclass(:table), p.privilege)
                       WHEN p.privilege IN ('UPDATE', 'INSERT') THEN NOT EXISTS (
                         SELECT 1 FROM pg_attribute a
                          WHERE a.attrelid = to_regclass(:table) AND a.attnum > 0
                            AND NOT a.attisdropped
                            AND a.attname = ANY (CASE p.privilege
                              WHEN 'UPDATE' THEN CAST(:written AS text[])
                              ELSE CAST(:inserted AS text[]) END)
                            AND NOT has_column_privilege(a.attrelid, a.attnum, p.privilege))
                       ELSE has_any_column_privilege(to_regclass(:table), p.privilege)
                     END
           ORDER BY p.position""");

  /** Claim and renew (SELECT … FOR UPDATE, UPDATE), publish (DELETE: the row moves out). */
  static final List<String> OUTBOX = List.of("SELECT", "UPDATE", "DELETE");

  private RelayPrivileges() {}

  /** The privileges a task needs on the outbox table that the current role lacks. */
  public static List<String> missingOnOutbox(Connection c, OutboxTable table) throws SQLException {
    return missing(c, table.qualified(), OUTBOX);
  }

  /**
   * The privileges a task needs on the published log that the current role lacks: SELECT (the
   * backlog count names the log, retention reads it), INSERT only to publish into it (not with a
   * retention of 0, which keeps no log), DELETE only for retention.
   */
  public static List<String> missingOnPublishedLog(
      Connection c, OutboxTable table, boolean logs, boolean retention) throws SQLException {
    List<String> needed = new ArrayList<>(List.of("SELECT"));
    if (logs) {
      needed.add("INSERT");
    }
    if (retention) {
      needed.add("DELETE");
    }
    return missing(c, table.qualifiedPublishedLog(), needed);
  }

  /** What the role lacks of what a task needs, on the outbox table and on its published log. */
  public record Lacking(List<String> onOutbox, List<String> onLog) {
    public boolean none() {
      return onOutbox.isEmpty() && onLog.isEmpty();
    }

    /** "UPDATE, DELETE on {@code outbox}", "INSERT on {@code log}": the tables that lack any. */
    public List<String> named(String outbox, String log) {
      List<String> named = new ArrayList<>();
      if (!onOutbox.isEmpty()) {
        named.add(String.join(", ", onOutbox) + " on " + outbox);
      }
      if (!onLog.isEmpty()) {
        named.add(String.join(", ", onLog) + " on " + log);
      }
      return named;
    }
  }

  /**
   * Both of {@link #missingOnOutbox} and {@link #missingOnPublishedLog}: what validation and a
   * task's start check.
   */
  public static Lacking lacking(Connection c, OutboxTable table, boolean logs, boolean retention)
      throws SQLException {
    return new Lacking(missingOnOutbox(c, table), missingOnPublishedLog(c, table, logs, retention));
  }

  private static List<String> missing(Connection c, String qualified, List<String> needed)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(MISSING.jdbc())) {
      MISSING
          .bind(ps)
          .setArray("privileges", c.createArrayOf("text", needed.toArray()))
          .setString("table", qualified)
          .setArray("written", c.createArrayOf("text", WRITTEN.toArray()))
          .setArray("inserted", c.createArrayOf("text", OutboxSql.LOGGED.toArray()))
          .ready();
      List<String> missing = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          missing.add(rs.getString(1));
        }
      }
      return missing;
    }
  }
}
