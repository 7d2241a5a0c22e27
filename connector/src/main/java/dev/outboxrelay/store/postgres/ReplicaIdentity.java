package dev.outboxrelay.store.postgres;

import dev.outboxrelay.store.OutboxStoreException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * Whether PostgreSQL lets the relay change the outbox table's rows. A table in a publication that
 * publishes updates or deletes (logical replication, or a Debezium connector's publication FOR ALL
 * TABLES, its default) needs a replica identity: a primary key, an index chosen with REPLICA
 * IDENTITY USING INDEX, or REPLICA IDENTITY FULL. Without one the server refuses every claim (an
 * UPDATE) and every publish (a DELETE) with SQLState 55000, the code it also uses for transient
 * states, so the store asks this before reporting a 55000. The relay's own table has a primary key;
 * an adopted table may not.
 */
public final class ReplicaIdentity {
  /** The reason code of a table that publications forbid the relay to change. */
  public static final String MISSING = "TABLE_WITHOUT_REPLICA_IDENTITY";

  /**
   * The reason code of a published log that publications forbid retention to delete from: schema
   * version 9 creates it with REPLICA IDENTITY FULL (it has no primary key), so only a later ALTER
   * TABLE takes that away.
   */
  public static final String LOG_MISSING = "PUBLISHED_LOG_WITHOUT_REPLICA_IDENTITY";

  /**
   * The publications that publish updates or deletes of the table while it has no replica identity
   * (an index named by REPLICA IDENTITY that was dropped leaves none either). A missing table has
   * none.
   */
  private static final String BLOCKING_PUBLICATIONS =
      """
      SELECT DISTINCT p.pubname
        FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_publication_tables pt ON pt.schemaname = n.nspname AND pt.tablename = c.relname
        JOIN pg_publication p ON p.pubname = pt.pubname
       WHERE c.oid = to_regclass(?)
         AND {publishes}
         AND c.relreplident <> 'f'
         AND NOT EXISTS (
               SELECT 1 FROM pg_index i
                WHERE i.indrelid = c.oid
                  AND CASE c.relreplident
                        WHEN 'd' THEN i.indisprimary
                        WHEN 'i' THEN i.indisreplident
                        ELSE false
                      END)
       ORDER BY p.pubname""";

  private ReplicaIdentity() {}

  /**
   * {@code failure} as classified by its SQLState, unless it is a 55000 that a missing replica
   * identity explains (the published log's only for a statement that {@code deletesFromLog}): then
   * a SCHEMA failure naming the relation ({@link #MISSING}, {@link #LOG_MISSING}), which fails the
   * task with what to fix, where retrying it like the 55000 of a server in recovery would leave the
   * task running and the refused write never done.
   */
  public static OutboxStoreException classify(
      DataSource dataSource,
      OutboxTable table,
      OutboxStoreException failure,
      boolean deletesFromLog) {
    if (!SqlStates.OBJECT_NOT_IN_PREREQUISITE_STATE.equals(failure.sqlState())) {
      return failure;
    }
    String reason;
    try (Connection c = dataSource.getConnection()) {
      if (!blockingPublications(c, table).isEmpty()) {
        reason = MISSING;
      } else if (deletesFromLog && !blockingPublicationsOfLog(c, table).isEmpty()) {
        reason = LOG_MISSING;
      } else {
        return failure;
      }
    } catch (SQLException e) {
      return failure; // as classified by its SQLState: retried
    }
    return new OutboxStoreException(
        OutboxStoreException.Kind.SCHEMA, reason, failure.sqlState(), failure.operation());
  }

  /** The publications that make PostgreSQL refuse the relay's updates and deletes of the table. */
  public static List<String> blockingPublications(Connection c, OutboxTable table)
      throws SQLException {
    return blockingPublications(c, table.qualified(), "(p.pubupdate OR p.pubdelete)");
  }

  /**
   * The publications that make PostgreSQL refuse retention's deletes from the published log (the
   * only change of its rows: publishing inserts, which need no replica identity).
   */
  public static List<String> blockingPublicationsOfLog(Connection c, OutboxTable table)
      throws SQLException {
    return blockingPublications(c, table.qualifiedPublishedLog(), "p.pubdelete");
  }

  private static List<String> blockingPublications(
      Connection c, String qualifiedRelation, String publishes) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(BLOCKING_PUBLICATIONS.replace("{publishes}", publishes))) {
      ps.setString(1, qualifiedRelation);
      List<String> names = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          names.add(rs.getString(1));
        }
      }
      return names;
    }
  }
}
