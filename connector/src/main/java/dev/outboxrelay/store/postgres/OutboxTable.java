package dev.outboxrelay.store.postgres;

import dev.outboxrelay.writer.OutboxTableName;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The outbox table's name, validated once and always quoted, with the names the relay derives from
 * it. Parsing and quoting are the writer library's {@link OutboxTableName}, so the relay and the
 * applications that write rows accept exactly the same names.
 */
public final class OutboxTable {
  public static final String DEFAULT_NAME = "outbox";

  /**
   * PostgreSQL keeps at most this many bytes of an identifier (NAMEDATALEN - 1) and cuts longer
   * ones without an error. Table names are ASCII, so characters are bytes.
   */
  public static final int MAX_IDENTIFIER_BYTES = 63;

  private final OutboxTableName tableName;
  private final String schema;
  private final String name;

  private OutboxTable(OutboxTableName tableName) {
    this.tableName = tableName;
    this.schema = tableName.schema();
    this.name = tableName.name();
  }

  /**
   * Parses {@code table} or {@code schema.table}: lower-case letters, digits and underscores,
   * starting with a letter or underscore, at most 48 characters each: a derived name keeps the
   * whole table name (see {@link #objectName}).
   */
  public static OutboxTable parse(String qualifiedName) {
    return new OutboxTable(OutboxTableName.parse(qualifiedName));
  }

  /** The name as the writer library takes it ({@code new PostgresOutboxWriter(name, key)}). */
  public OutboxTableName tableName() {
    return tableName;
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
    return tableName.qualified();
  }

  /** The trigger function guarding the instance key, quoted. */
  public String qualifiedFunction() {
    return qualify(objectName("instance_key_guard"));
  }

  /** The trigger function that notifies listeners of inserted rows, quoted. */
  public String qualifiedNotifyFunction() {
    return qualify(objectName("notify_inserted"));
  }

  /**
   * The sequence of {@code seq} on an adopted table ({@link DebeziumAdoption}), which gets its
   * numbers from a column default, not an identity, so that adding it rewrites nothing; quoted.
   */
  public String qualifiedSeqSequence() {
    return qualify(objectName("seq_seq"));
  }

  /**
   * The published log (schema version 9): where publishing moves a row, in the table's schema,
   * quoted; the name the writer library checks for duplicates. {@code <table>_published} fits
   * whole: table names have at most 48 characters.
   */
  public String qualifiedPublishedLog() {
    return tableName.publishedLogQualified();
  }

  /** An index of this table (indexes live in the table's schema), quoted. */
  public String qualifiedIndex(String suffix) {
    return qualify(objectName(suffix));
  }

  /**
   * The name of this table's object {@code <table>_<suffix>} (index, constraint, trigger,
   * function), cut to {@value #MAX_IDENTIFIER_BYTES} bytes exactly as PostgreSQL cuts it: the
   * released migrations spell most of these names as {@code "${tableName}_<suffix>"}, so the cut is
   * what existing databases hold. The table name (at most 48 characters) always survives whole, so
   * two tables' names never meet; the suffixes differ within the 14 characters that remain.
   */
  public String objectName(String suffix) {
    String full = name + "_" + suffix;
    return full.length() <= MAX_IDENTIFIER_BYTES ? full : full.substring(0, MAX_IDENTIFIER_BYTES);
  }

  /**
   * The LISTEN/NOTIFY channel on which inserts into this table are announced; the payload is the
   * instance key. pg_notify rejects a channel of 64 bytes or more (LISTEN cuts it), so a longer
   * name is shortened with a hash: with it, every insert failed unless notifying was off.
   */
  public String notifyChannel() {
    String full = schema == null ? name + "_relay" : schema + "_" + name + "_relay";
    return full.length() <= MAX_IDENTIFIER_BYTES ? full : shortened(full, MAX_IDENTIFIER_BYTES);
  }

  /**
   * Flyway's history table for this outbox table: one history per outbox table. Flyway names its
   * primary key {@code <history>_pk} and an index {@code <history>_s_idx}; from 62 bytes on,
   * PostgreSQL's cut makes them collide and the first migration fails. Names up to 61 bytes work
   * and are kept; longer ones become 57 bytes, where Flyway's names fit whole.
   */
  public String historyTable() {
    String full = name + "_schema_history";
    return full.length() <= MAX_IDENTIFIER_BYTES - 2
        ? full
        : shortened(full, MAX_IDENTIFIER_BYTES - "_s_idx".length());
  }

  /** {@link #historyTable()}, quoted and qualified as the outbox table is. */
  public String qualifiedHistoryTable() {
    return qualify(historyTable());
  }

  /**
   * The first {@code length - 9} characters of {@code full}, an underscore and 8 hex digits of its
   * SHA-256: deterministic; two different full names end alike with odds of 1 in 2^32.
   */
  private static String shortened(String full, int length) {
    byte[] digest;
    try {
      digest = MessageDigest.getInstance("SHA-256").digest(full.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
    String hash = HexFormat.of().formatHex(digest, 0, 4);
    return full.substring(0, length - hash.length() - 1) + "_" + hash;
  }

  private String qualify(String identifier) {
    return schema == null ? quote(identifier) : quote(schema) + "." + quote(identifier);
  }

  private static String quote(String identifier) {
    return '"' + identifier + '"';
  }

  @Override
  public String toString() {
    return tableName.toString();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof OutboxTable other && tableName.equals(other.tableName);
  }

  @Override
  public int hashCode() {
    return tableName.hashCode();
  }
}
