package dev.outboxrelay.store.postgres;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.ExhaustedMessage;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.MessageStatus;
import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The outbox row's columns as the store reads them, each spelled once: a claim's RETURNING list is
 * built from these, and a claimed row is read back by these names. The columns an application
 * writes are the writer library's ({@code dev.outboxrelay.writer.PostgresOutboxWriter}).
 */
public final class OutboxColumns {
  private OutboxColumns() {}

  /**
   * The columns a claim returns, over the UPDATE's alias {@code o} and the claim's {@code clock}.
   * Whether the row's deadline has passed is judged here, by the claim's clock, not by the worker
   * that maps the row.
   */
  enum Claimed {
    SEQ,
    MESSAGE_ID,
    INSTANCE_KEY,
    AGGREGATE_TYPE,
    AGGREGATE_ID,
    EVENT_TYPE,
    TOPIC,
    /**
     * The payload up to the claim's read limit, null past it: a row too large to publish is parked
     * without its payload ever leaving the database. (octet_length of a bytea reads the stored
     * length, not the value.)
     */
    PAYLOAD("CASE WHEN {payload size} <= CAST(:payload_read_limit AS integer) THEN {payload} END"),
    /** The stored payload's size in bytes, read or not (a text-like one's as UTF-8 text). */
    PAYLOAD_BYTES("{payload size}"),
    /**
     * The row's own headers as text up to the claim's headers read limit, null past it: headers no
     * record could carry are parked without ever leaving the database (the writer bounds the
     * payload, nothing bounds a jsonb of headers). The header columns are read the same way.
     */
    HEADERS(
        "CASE WHEN octet_length({headers}) <= CAST(:headers_read_limit AS integer) THEN {headers} END"),
    /** Whether the row's own headers, or one of its header columns, were left out. */
    HEADERS_OMITTED("{headers omitted}"),
    CORRELATION_ID,
    CREATED_AT,
    DELIVER_BEFORE,
    DEADLINE_EXPIRED("COALESCE(o.deliver_before <= clock.now, FALSE)"),
    ATTEMPTS,
    LEASE_OWNER,
    LEASE_TOKEN,
    LEASE_EXPIRES_AT,
    STATUS,
    LAST_FAILURE_CODE,
    /** The aggregate's hash, which places it in a share or an exactly-once bucket. */
    AGGREGATE_HASH("{aggregate hash(o)}");

    /** The label prefix of the header columns a claim returns ({@link ColumnMapping}). */
    static final String HEADER_COLUMN_LABEL = "header_column_";

    /** The label the row carries the column under, and the name it is read by. */
    final String label = name().toLowerCase(Locale.ROOT);

    private final String selected;

    /** What the claim computes for this column, or null for a column of the row. */
    private final String expression;

    /**
     * The {@link Row}'s column of this name, read as the row reads it (a name the row lacks fails
     * at once): a column is named once, there.
     */
    Claimed() {
      this.selected = Row.valueOf(name()).selected("o");
      this.expression = null;
    }

    /** A value the claim computes. */
    Claimed(String expression) {
      this.selected = expression + " AS " + label;
      this.expression = expression;
    }

    /** The row a claim parked EXHAUSTED instead of leasing it (it was over the budget). */
    static boolean isExhausted(ResultSet rs) throws SQLException {
      return MessageStatus.valueOf(rs.getString(STATUS.label)) == MessageStatus.EXHAUSTED;
    }

    static ExhaustedMessage exhausted(ResultSet rs) throws SQLException {
      return new ExhaustedMessage(
          rs.getString(MESSAGE_ID.label),
          rs.getString(INSTANCE_KEY.label),
          rs.getString(LAST_FAILURE_CODE.label));
    }

    /**
     * What a claim returns of {@code columns} (a table whose message fields have other names, an
     * adopted Debezium table, or the relay's own: {@link ColumnMapping}), each under the relay's
     * label, then the header columns as {@code header_column_1}, ... . The payload is read as
     * stored, and measured as a bytea or, for any other type (jsonb, json, text, varchar), as its
     * text: {@code octet_length} takes no jsonb.
     */
    static String returning(ColumnMapping columns, boolean payloadIsBytea) {
      String payload = columns.quoted(Row.PAYLOAD, "o");
      String size = payloadSize(columns, payloadIsBytea);
      String headers = columns.quoted(Row.HEADERS, "o") + "::text";
      List<ColumnMapping.HeaderColumn> headerColumns = columns.headerColumns();
      StringBuilder omitted = new StringBuilder(overReadLimit(headers));
      for (ColumnMapping.HeaderColumn h : headerColumns) {
        omitted.append(" OR ").append(overReadLimit(headerColumn(h)));
      }
      StringBuilder out = new StringBuilder();
      for (Claimed c : values()) {
        Row field = c.expression == null ? Row.valueOf(c.name()) : null;
        boolean mapped = field != null && columns.isMapped(field);
        boolean eventTime = c == CREATED_AT && columns.readsEventTimeElsewhere();
        String selected =
            eventTime
                ? columns.eventTime("o") + " AS " + c.label
                : mapped ? columns.asText(field, "o") + " AS " + c.label : c.selected;
        out.append(out.length() == 0 ? "" : ", ")
            .append(
                selected
                    .replace("{payload size}", size)
                    .replace("{payload}", payload)
                    .replace("{headers omitted}", omitted)
                    .replace("{headers}", headers));
      }
      for (int i = 0; i < headerColumns.size(); i++) {
        String value = headerColumn(headerColumns.get(i));
        out.append(", CASE WHEN octet_length(")
            .append(value)
            .append(") <= CAST(:headers_read_limit AS integer) THEN ")
            .append(value)
            .append(" END AS ")
            .append(HEADER_COLUMN_LABEL)
            .append(i + 1);
      }
      return out.toString();
    }

    /**
     * The bytes a claim counts of a candidate {@code o} against its read room ({@link
     * dev.outboxrelay.store.ClaimRequest#readRoom}): its payload's as the claim measures and reads
     * it (none over the read limit; see {@link #returning}), measured once, and the text of its own
     * headers and header columns. Not their stored size: PostgreSQL compresses a large value, and a
     * few kilobytes stored can be a megabyte read.
     */
    static String readBytes(ColumnMapping columns, boolean payloadIsBytea) {
      String size = payloadSize(columns, payloadIsBytea);
      String overLimit = "(CAST(:payload_read_limit AS bigint) + 1)";
      StringBuilder sum =
          new StringBuilder("COALESCE(NULLIF(LEAST(")
              .append(size)
              .append(", ")
              .append(overLimit)
              .append("), ")
              .append(overLimit)
              .append("), 0)");
      sum.append(" + COALESCE(octet_length(")
          .append(columns.quoted(Row.HEADERS, "o"))
          .append("::text), 0)");
      for (ColumnMapping.HeaderColumn h : columns.headerColumns()) {
        sum.append(" + COALESCE(octet_length(").append(headerColumn(h)).append("), 0)");
      }
      return sum.toString();
    }

    /**
     * The payload's size in bytes as a claim measures it: a bytea's as stored (its length, read
     * without the value), any other type's as its text ({@code octet_length} takes no jsonb).
     */
    private static String payloadSize(ColumnMapping columns, boolean payloadIsBytea) {
      String payload = columns.quoted(Row.PAYLOAD, "o");
      return "octet_length(" + payload + (payloadIsBytea ? ")" : "::text)");
    }

    private static String headerColumn(ColumnMapping.HeaderColumn column) {
      return "o.\"" + column.column() + "\"::text";
    }

    /** True when {@code text} is over the headers read limit; false for a null. */
    private static String overReadLimit(String text) {
      return "COALESCE(octet_length(" + text + ") > CAST(:headers_read_limit AS integer), FALSE)";
    }

    static ClaimedMessage claimed(ResultSet rs) throws SQLException {
      return claimed(rs, ColumnMapping.RELAY);
    }

    static ClaimedMessage claimed(ResultSet rs, ColumnMapping columns) throws SQLException {
      byte[] payload = payload(rs);
      boolean omitted = rs.getBoolean(HEADERS_OMITTED.label);
      return new ClaimedMessage(
          rs.getLong(SEQ.label),
          rs.getString(MESSAGE_ID.label),
          rs.getString(INSTANCE_KEY.label),
          rs.getString(AGGREGATE_TYPE.label),
          rs.getString(AGGREGATE_ID.label),
          rs.getString(EVENT_TYPE.label),
          rs.getString(TOPIC.label),
          payload,
          payloadBytes(rs),
          omitted ? null : headers(rs, columns.headerColumns()),
          omitted,
          rs.getString(CORRELATION_ID.label),
          instant(rs, CREATED_AT),
          instant(rs, DELIVER_BEFORE),
          rs.getBoolean(DEADLINE_EXPIRED.label),
          rs.getInt(ATTEMPTS.label),
          new Lease(rs.getString(LEASE_OWNER.label), rs.getLong(LEASE_TOKEN.label)),
          instant(rs, LEASE_EXPIRES_AT),
          rs.getInt(AGGREGATE_HASH.label));
    }

    private static byte[] payload(ResultSet rs) throws SQLException {
      return OutboxColumns.payload(rs, PAYLOAD.label);
    }

    /** The stored size the claim measured; -1 for a null payload. */
    private static long payloadBytes(ResultSet rs) throws SQLException {
      long measured = rs.getLong(PAYLOAD_BYTES.label);
      return rs.wasNull() ? -1 : measured;
    }

    /**
     * The row's headers as a JSON object text: the header columns first, in order, their values as
     * text (null stays null), then the row's own headers. Joined as text, so a name given twice
     * stays twice and the mapper rejects the row; headers that are not an object are passed on as
     * they are, for the mapper to reject.
     */
    private static String headers(ResultSet rs, List<ColumnMapping.HeaderColumn> columns)
        throws SQLException {
      String own = rs.getString(HEADERS.label);
      if (columns.isEmpty()) {
        return own;
      }
      if (own != null && !own.startsWith("{")) {
        return own;
      }
      JsonStringEncoder json = JsonStringEncoder.getInstance();
      StringBuilder out = new StringBuilder("{");
      for (int i = 0; i < columns.size(); i++) {
        String value = rs.getString(HEADER_COLUMN_LABEL + (i + 1));
        out.append(i == 0 ? "" : ",")
            .append('"')
            .append(json.quoteAsString(columns.get(i).header()))
            .append("\":");
        if (value == null) {
          out.append("null");
        } else {
          out.append('"').append(json.quoteAsString(value)).append('"');
        }
      }
      String rest = own == null ? "}" : own.substring(1).strip();
      return out.append(rest.equals("}") ? "" : ",").append(rest).toString();
    }

    private static Instant instant(ResultSet rs, Claimed column) throws SQLException {
      Timestamp ts = rs.getTimestamp(column.label);
      return ts == null ? null : ts.toInstant();
    }
  }

  /**
   * Every column of the row, in the table's order, as a SELECT reads it, for the store and the
   * operator tools (the CLI, the local stack's report): the label a column is selected under is its
   * name, and a row is read back by that name. A claim's columns ({@link Claimed}) are taken from
   * here. The payload and the headers are the message's {@link #content}: the operator tools read
   * them only when asked for. Headers are read as text (JDBC has no jsonb).
   */
  public enum Row {
    SEQ,
    MESSAGE_ID,
    INSTANCE_KEY,
    AGGREGATE_TYPE,
    AGGREGATE_ID,
    EVENT_TYPE,
    TOPIC,
    PAYLOAD(true, "%s"),
    HEADERS(true, "%s::text"),
    CORRELATION_ID,
    CREATED_AT,
    DELIVER_BEFORE,
    STATUS,
    ATTEMPTS,
    ABANDONED_CLAIMS,
    ISOLATED,
    NEXT_ATTEMPT_AT,
    LEASE_OWNER,
    LEASE_TOKEN,
    LEASE_EXPIRES_AT,
    LAST_FAILURE_CODE,
    PUBLISHED_AT,
    KAFKA_TOPIC,
    KAFKA_PARTITION,
    KAFKA_OFFSET,
    /** When the row was parked FAILED or EXHAUSTED (null otherwise). */
    PARKED_AT(7),
    /** Exactly-once: the epoch of the task instance holding the lease (null otherwise). */
    LEASE_EPOCH(8),
    /** Exactly-once: that instance's claim counter when it claimed the row (null otherwise). */
    CLAIM_BATCH(8);

    /** Every column but the content: the row's routing fields and relay state. */
    public static final List<Row> STATE = Arrays.stream(values()).filter(c -> !c.content).toList();

    /** The column's name: the label a SELECT gives it, and the name it is read back by. */
    public final String label = name().toLowerCase(Locale.ROOT);

    /** The message's content (payload, headers), not its routing or relay state. */
    public final boolean content;

    /** The schema version that added the column: 1, the first, but for a few added later. */
    public final int since;

    /** How the column is read, around its (qualified) name. */
    private final String read;

    Row() {
      this(false, "%s", 1);
    }

    Row(boolean content, String read) {
      this(content, read, 1);
    }

    Row(int since) {
      this(false, "%s", since);
    }

    Row(boolean content, String read, int since) {
      this.content = content;
      this.read = read;
      this.since = since;
    }

    /**
     * The column as a SELECT list reads it, over {@code alias} (null: unqualified): {@code o.seq},
     * {@code o.headers::text AS headers}.
     */
    public String selected(String alias) {
      String column = alias == null ? label : alias + "." + label;
      String expression = read.formatted(column);
      return expression.equals(column) ? column : expression + " AS " + label;
    }

    /** A SELECT list of {@code columns}, over {@code alias} (null: unqualified). */
    public static String select(String alias, Collection<Row> columns) {
      return columns.stream().map(c -> c.selected(alias)).collect(Collectors.joining(", "));
    }
  }

  /**
   * The payload read under {@code label} as stored: a {@code bytea} column's bytes, or the UTF-8
   * text of any other type (jsonb, json, text, varchar: a mapped payload column), judged by the
   * column's type.
   */
  public static byte[] payload(ResultSet rs, String label) throws SQLException {
    int index = rs.findColumn(label);
    int type = rs.getMetaData().getColumnType(index);
    if (type == Types.BINARY || type == Types.VARBINARY || type == Types.LONGVARBINARY) {
      return rs.getBytes(index);
    }
    String text = rs.getString(index);
    return text == null ? null : text.getBytes(StandardCharsets.UTF_8);
  }

  private static <E> String join(E[] columns, java.util.function.Function<E, String> part) {
    return Arrays.stream(columns).map(part).collect(Collectors.joining(", "));
  }
}
