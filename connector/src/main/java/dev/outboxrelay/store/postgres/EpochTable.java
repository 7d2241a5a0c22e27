package dev.outboxrelay.store.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The temporary table an exactly-once task's epoch transaction creates: its catalog rows are WAL of
 * the transaction's own, so the epoch's commit waits for the flush instead of being asynchronous
 * (design.md, "exactly once"). Gone at the commit; sent to no logical-decoding consumer.
 */
public final class EpochTable {
  /** The table's name, in the session's temporary schema. */
  public static final String NAME = "outbox_relay_epoch";

  /** Created in the epoch's transaction; a heap whatever the database's default access method. */
  static final String CREATE = "CREATE TEMPORARY TABLE " + NAME + " () USING heap ON COMMIT DROP";

  private EpochTable() {}

  /**
   * Creates the table in a transaction rolled back at once, as a check that a task's start can: the
   * TEMPORARY privilege alone does not say it (a DDL event trigger that forbids DDL, a read-only
   * session). Throws what the database answered.
   */
  public static void tryCreate(Connection c) throws SQLException {
    boolean autoCommit = c.getAutoCommit();
    c.setAutoCommit(false);
    try (Statement s = c.createStatement()) {
      s.execute(CREATE);
    } catch (SQLException e) {
      // The database's answer, not the rollback's: a pool that evicts the connection on it (25006)
      // has closed it, and its rollback fails without a SQLState.
      try {
        c.rollback();
        c.setAutoCommit(autoCommit);
      } catch (SQLException after) {
        e.addSuppressed(after);
      }
      throw e;
    }
    c.rollback();
    c.setAutoCommit(autoCommit);
  }
}
