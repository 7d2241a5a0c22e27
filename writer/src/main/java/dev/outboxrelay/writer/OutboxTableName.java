package dev.outboxrelay.writer;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The outbox table's name, {@code table} or {@code schema.table}, validated once and always quoted
 * in SQL. Only plain identifiers are accepted, so no table setting can smuggle SQL into a
 * statement. The connector takes its {@code outbox.table} setting by the same rules, so a name the
 * writer accepts is one the relay accepts.
 */
public final class OutboxTableName {
  /**
   * Lower-case letters, digits and underscores, at most 48 characters: the relay derives the names
   * of the table's indexes, trigger functions and notification channel from it, and PostgreSQL
   * keeps 63 bytes of an identifier.
   */
  private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,47}");

  private final String schema;
  private final String name;

  private OutboxTableName(String schema, String name) {
    this.schema = schema;
    this.name = name;
  }

  /**
   * Parses {@code table} or {@code schema.table}: lower-case letters, digits and underscores,
   * starting with a letter or underscore, at most 48 characters each.
   *
   * @throws IllegalArgumentException naming the rule the name breaks
   */
  public static OutboxTableName parse(String qualifiedName) {
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
        ? new OutboxTableName(parts[0], parts[1])
        : new OutboxTableName(null, parts[0]);
  }

  /** Null when the table lives in the connection's default schema (its {@code search_path}). */
  public String schema() {
    return schema;
  }

  /** The table's own name, without the schema. */
  public String name() {
    return name;
  }

  /** The table as it appears in SQL: {@code "outbox"} or {@code "app"."outbox"}. */
  public String qualified() {
    return schema == null ? quote(name) : quote(schema) + "." + quote(name);
  }

  /**
   * The table's published log (schema version 9), quoted, in the table's schema: {@code
   * "outbox_published"} or {@code "app"."outbox_published"}. Publishing moves a row there; the
   * writer's insert checks it for the message id. The name fits PostgreSQL's 63 bytes whole (a
   * table name has at most 48 characters), so it is the name the migration creates.
   */
  public String publishedLogQualified() {
    String log = name + "_published";
    return schema == null ? quote(log) : quote(schema) + "." + quote(log);
  }

  private static String quote(String identifier) {
    return '"' + identifier + '"';
  }

  /** {@code table} or {@code schema.table}, as parsed. */
  @Override
  public String toString() {
    return schema == null ? name : schema + "." + name;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof OutboxTableName other
        && Objects.equals(schema, other.schema)
        && name.equals(other.name);
  }

  @Override
  public int hashCode() {
    return Objects.hash(schema, name);
  }
}
