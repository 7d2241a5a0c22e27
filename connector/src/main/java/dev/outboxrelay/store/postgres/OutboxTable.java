package dev.outboxrelay.store.postgres;

import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The outbox table's name, validated once and always quoted. Only plain identifiers are accepted,
 * so no table setting can smuggle SQL into a statement.
 */
public final class OutboxTable {
  public static final String DEFAULT_NAME = "outbox";

  private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,47}");

  private final String schema;
  private final String name;

  private OutboxTable(String schema, String name) {
    this.schema = schema;
    this.name = name;
  }

  /**
   * Parses {@code table} or {@code schema.table}: lower-case letters, digits and underscores,
   * starting with a letter or underscore, at most 48 characters each (room for index names).
   */
  public static OutboxTable parse(String qualifiedName) {
    Objects.requireNonNull(qualifiedName, "table name");
    String[] parts = qualifiedName.split("\\.", -1);
    if (parts.length > 2) {
      throw new IllegalArgumentException("table name must be 'table' or 'schema.table'");
    }
    for (String part : parts) {
      if (!IDENTIFIER.matcher(part).matches()) {
        throw new IllegalArgumentException(
            "table name must be lower-case letters, digits and underscores,"
                + " start with a letter or underscore, at most 48 characters per part");
      }
    }
    return parts.length == 2
        ? new OutboxTable(parts[0], parts[1])
        : new OutboxTable(null, parts[0]);
  }

  /** Null when the table lives in the connection's default schema. */
  public String schema() {
    return schema;
  }

  public String name() {
    return name;
  }

  /** The table as it appears in SQL, quoted. */
  public String qualified() {
    return qualify(name);
  }

  /** The trigger function guarding the instance key, quoted. */
  public String qualifiedFunction() {
    return qualify(name + "_instance_key_guard");
  }

  /** The trigger function that notifies listeners of inserted rows, quoted. */
  public String qualifiedNotifyFunction() {
    return qualify(name + "_notify_inserted");
  }

  /** An index of this table (indexes live in the table's schema), quoted. */
  public String qualifiedIndex(String suffix) {
    return qualify(name + "_" + suffix);
  }

  /**
   * The LISTEN/NOTIFY channel on which inserts into this table are announced; the payload is the
   * instance key.
   */
  public String notifyChannel() {
    return schema == null ? name + "_relay" : schema + "_" + name + "_relay";
  }

  /** Flyway's history table for this outbox table: one history per outbox table. */
  public String historyTable() {
    return name + "_schema_history";
  }

  private String qualify(String identifier) {
    return schema == null ? quote(identifier) : quote(schema) + "." + quote(identifier);
  }

  private static String quote(String identifier) {
    return '"' + identifier + '"';
  }

  @Override
  public String toString() {
    return schema == null ? name : schema + "." + name;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof OutboxTable other
        && Objects.equals(schema, other.schema)
        && name.equals(other.name);
  }

  @Override
  public int hashCode() {
    return Objects.hash(schema, name.toLowerCase(Locale.ROOT));
  }
}
