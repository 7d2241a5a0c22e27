package dev.outboxrelay.store.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * The indexes the relay's own statements read, checked on a table kept by the user's own tool
 * ({@code schema-sql}) or adopted from Debezium, where no migration history vouches for them. A
 * missing one turns a claim, an outcome write or a retention run into a read of the whole table;
 * under the statement timeout the task then relays nothing while it stays RUNNING. Indexes are
 * found by name, the names the migrations and the adoption script both give them ({@code CREATE
 * INDEX IF NOT EXISTS} made the name the contract), except the unique index on {@code seq}, which a
 * created table has as its primary key and an adopted one as an index of its own.
 */
public final class RelayIndexes {
  /**
   * An index the relay reads: the suffixes of the names that serve (the first is the current
   * version's, the one a missing index is named by), whether it is on the published log, its
   * reader, whether only retention reads it (no retention with {@code retention.published.ms=-1}),
   * whether it must be unique, and the mapped column its key must hold at {@code keyPosition}
   * (counted from 1; {@code keyColumn} null for none).
   */
  private record Required(
      List<String> suffixes,
      boolean onLog,
      String readBy,
      boolean retentionOnly,
      boolean unique,
      OutboxColumns.Row keyColumn,
      int keyPosition) {
    Required(List<String> suffixes, boolean onLog, String readBy, boolean retentionOnly) {
      this(suffixes, onLog, readBy, retentionOnly, false, null, 0);
    }

    Required(String suffix, boolean onLog, String readBy) {
      this(List.of(suffix), onLog, readBy, false);
    }

    Required(List<String> suffixes, boolean onLog, String readBy) {
      this(suffixes, onLog, readBy, false);
    }
  }

  private static final List<Required> REQUIRED =
      List.of(
          // Unique: the writes after a claim find a row by its id alone, and a plain index of
          // that name let two rows of one id be claimed together and both changed by one write.
          new Required(
              List.of("message_id_key"),
              false,
              "unique: one row per message id",
              false,
              true,
              OutboxColumns.Row.MESSAGE_ID,
              1),
          new Required("due_key_seq_idx", false, "every claim"),
          // Named as the relay's but built on another column (an adoption given another id or
          // aggregate column than the connector's mapping), it serves none of the statements.
          new Required(
              List.of("due_aggregate_idx"),
              false,
              "ordered claims",
              false,
              false,
              OutboxColumns.Row.AGGREGATE_ID,
              2),
          new Required(
              List.of("settled_idx"), false, "retention of rows published in the table", true),
          // Any index of the parked rows by instance key serves their counts: version 14's, or
          // version 15's or 12's by correlation id (the CLI's batches want 14's and 15's).
          new Required(
              List.of("parked_key_seq_idx", "parked_cid_seq_idx", "parked_cid_idx"),
              false,
              "the parked-row counts"),
          // Version 10's hash index, or the btree of version 9 it replaced.
          new Required(
              List.of("published_id_hash", "published_id_idx"),
              true,
              "message id lookups in the published log"),
          new Required(List.of("published_at_idx"), true, "retention of the published log", true));

  private static final String INDEX_NAMES =
      "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
          + " WHERE i.indrelid = to_regclass(?)";

  /** As {@link #INDEX_NAMES}, valid ones only: PostgreSQL never reads an invalid index. */
  private static final String VALID_INDEX_NAMES = INDEX_NAMES + " AND i.indisvalid";

  private static final String VALID_UNIQUE_INDEX_NAMES = VALID_INDEX_NAMES + " AND i.indisunique";

  /**
   * The key column at a position of an index of the table, by name: a column's name, or an
   * expression's text (the message id's index holds {@code (id)::text} where the id is a uuid).
   */
  private static final String KEY_COLUMN =
      """
      SELECT CASE WHEN i.indkey[k.n - 1] <> 0 THEN a.attname::text
        ELSE pg_get_indexdef(i.indexrelid, k.n, true) END
      FROM (SELECT CAST(? AS int) AS n) k
      JOIN pg_index i ON i.indnkeyatts >= k.n
      JOIN pg_class c ON c.oid = i.indexrelid
      LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[k.n - 1]
      WHERE i.indrelid = to_regclass(?) AND c.relname = ?""";

  private static final String UNIQUE_SEQ =
      """
      SELECT EXISTS (
        SELECT 1 FROM pg_index i
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
        WHERE i.indrelid = to_regclass(?) AND i.indisunique AND i.indisvalid AND i.indnkeyatts = 1
          AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attname = 'seq')""";

  private RelayIndexes() {}

  /**
   * The indexes {@code table} and its published log lack, each as its name and what reads it (the
   * unique index on {@code seq} as a description), in a fixed order; empty when none is missing.
   * Those only retention reads count only where the connector runs retention ({@code retains});
   * {@code columnOf} gives the column a field is mapped to ({@link ColumnMapping#column}), or null
   * where the index's column is not to be checked (a mapping with an error of its own).
   */
  public static List<String> missing(
      Connection c,
      OutboxTable table,
      Function<OutboxColumns.Row, String> columnOf,
      boolean retains)
      throws SQLException {
    List<String> missing = new ArrayList<>();
    if (!exists(c, UNIQUE_SEQ, table.qualified())) {
      missing.add("a unique index on seq (outcome writes and claims find rows by it)");
    }
    Set<String> onTable = indexNames(c, VALID_INDEX_NAMES, table.qualified());
    Set<String> uniqueOnTable = indexNames(c, VALID_UNIQUE_INDEX_NAMES, table.qualified());
    Set<String> onLog = indexNames(c, VALID_INDEX_NAMES, table.qualifiedPublishedLog());
    for (Required index : REQUIRED) {
      if (index.retentionOnly() && !retains) {
        continue;
      }
      Set<String> present = index.onLog() ? onLog : index.unique() ? uniqueOnTable : onTable;
      String name = table.objectName(index.suffixes().get(0));
      String column = index.keyColumn() == null ? null : columnOf.apply(index.keyColumn());
      String why = null;
      if (index.suffixes().stream().map(table::objectName).noneMatch(present::contains)) {
        // Its statement (IF NOT EXISTS) would keep a plain index of the name: say to drop it.
        why = index.unique() && onTable.contains(name) ? "not unique" : "";
      } else if (column != null
          && present.contains(name)
          && !column.equals(keyColumn(c, table, name, index.keyPosition()))) {
        why = "not on " + column + ", the mapped column, at key position " + index.keyPosition();
      }
      if (why != null) {
        missing.add(
            name
                + " ("
                + index.readBy()
                + (why.isEmpty() ? "" : "; the index of that name is " + why + ": drop it first")
                + ")");
      }
    }
    return missing;
  }

  /**
   * Whether {@code table} itself has the index named for {@code suffix}: found among the table's
   * own indexes, not by name on the search path, where a table named without a schema would find a
   * same-named table's index in another schema. Valid or not: a left-over index of version 7
   * refuses inserts even invalid, and validation reports invalid indexes of its own accord.
   */
  public static boolean onTable(Connection c, OutboxTable table, String suffix)
      throws SQLException {
    return indexNames(c, INDEX_NAMES, table.qualified()).contains(table.objectName(suffix));
  }

  private static Set<String> indexNames(Connection c, String sql, String relation)
      throws SQLException {
    Set<String> names = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, relation);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          names.add(rs.getString(1));
        }
      }
    }
    return names;
  }

  /**
   * The column at {@code position} of {@code index}'s key, an expression's text stripped to the
   * column it casts ({@code (id)::text} read as {@code id}); null where the index has no such key.
   */
  private static String keyColumn(Connection c, OutboxTable table, String index, int position)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(KEY_COLUMN)) {
      ps.setInt(1, position);
      ps.setString(2, table.qualified());
      ps.setString(3, index);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next() || rs.getString(1) == null) {
          return null;
        }
        return rs.getString(1).replaceAll("[()\"]", "").replaceFirst("::text$", "");
      }
    }
  }

  private static boolean exists(Connection c, String sql, String relation) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, relation);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }
}
