package dev.outboxrelay.store.postgres;

import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Which columns of the outbox table hold the message's own fields, for a table the application
 * already writes under other names (a Debezium outbox table adopted with {@code outbox-relay-cli
 * adopt-debezium-table}: {@code id}, {@code aggregatetype}, {@code aggregateid}, {@code type},
 * {@code payload}). The relay's state columns (seq, instance_key, status, the lease, ...) always
 * have the relay's names: the adoption adds them.
 *
 * <p>A mapped column is read as text ({@code ::text}, so {@code uuid} and {@code varchar} columns
 * read as the relay's {@code text}), and a row is found by {@code messageId::text}, which an index
 * on that expression serves (the adoption creates it). The payload is read as it is stored: bytes
 * from {@code bytea}, the UTF-8 text of {@code jsonb}, {@code json}, {@code text} or {@code
 * varchar}.
 *
 * <p>The event's time, each record's timestamp, is read from {@code created_at} or from a column of
 * the application's ({@code timestamptz}, or {@code timestamp} read as UTC, as Debezium's {@code
 * table.field.event.timestamp} reads it). Only the claim reads it there: the lag and the published
 * log keep the relay's {@code created_at}, and the operator tools show that.
 *
 * @param headerColumns further columns whose values (as text) become record headers, in order
 * @param eventTimestamp the column holding the event's time ({@code created_at}: the relay's own)
 */
public record ColumnMapping(
    String messageId,
    String aggregateType,
    String aggregateId,
    String eventType,
    String payload,
    List<HeaderColumn> headerColumns,
    String eventTimestamp) {

  /** A column name the relay can quote without changing it: PostgreSQL's unquoted identifiers. */
  private static final Pattern COLUMN = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

  /** What {@link #isColumnName} accepts, worded for error messages. */
  public static final String COLUMN_RULE =
      "a column name of 1 to 63 lower-case letters, digits and underscores, not starting with a"
          + " digit";

  /** The relay's own table: every field under its own name, no header columns. */
  public static final ColumnMapping RELAY =
      new ColumnMapping(
          OutboxColumns.Row.MESSAGE_ID.label,
          OutboxColumns.Row.AGGREGATE_TYPE.label,
          OutboxColumns.Row.AGGREGATE_ID.label,
          OutboxColumns.Row.EVENT_TYPE.label,
          OutboxColumns.Row.PAYLOAD.label,
          List.of(),
          OutboxColumns.Row.CREATED_AT.label);

  /** A column whose value is sent as the header {@code header}. */
  public record HeaderColumn(String column, String header) {
    public HeaderColumn {
      requireColumn(column);
      Objects.requireNonNull(header, "header");
      if (header.isEmpty()) {
        throw new IllegalArgumentException("a header name must not be empty");
      }
    }
  }

  public ColumnMapping {
    requireColumn(OutboxColumns.Row.MESSAGE_ID, messageId);
    requireColumn(OutboxColumns.Row.AGGREGATE_TYPE, aggregateType);
    requireColumn(OutboxColumns.Row.AGGREGATE_ID, aggregateId);
    requireColumn(OutboxColumns.Row.EVENT_TYPE, eventType);
    requireColumn(OutboxColumns.Row.PAYLOAD, payload);
    requireColumn(OutboxColumns.Row.CREATED_AT, eventTimestamp);
    String shared = messageIdSharedWith(messageId, aggregateType, eventType, payload);
    if (shared != null) {
      throw new IllegalArgumentException("the message id column " + shared);
    }
    headerColumns = List.copyOf(headerColumns);
  }

  /**
   * The message's fields in {@code columns}, the event's time in the relay's {@code created_at}.
   */
  public ColumnMapping(
      String messageId,
      String aggregateType,
      String aggregateId,
      String eventType,
      String payload,
      List<HeaderColumn> headerColumns) {
    this(
        messageId,
        aggregateType,
        aggregateId,
        eventType,
        payload,
        headerColumns,
        OutboxColumns.Row.CREATED_AT.label);
  }

  /**
   * Why the message id cannot be read from {@code messageId}, or null if it can: the column of the
   * aggregate type, the event type or the payload holds no message's own id (many rows share it),
   * so an operator's change of one message would change all of them. The aggregate id may share it
   * (Debezium's {@code table.field.event.key=id}).
   */
  public static String messageIdSharedWith(
      String messageId, String aggregateType, String eventType, String payload) {
    String[][] others = {
      {aggregateType, "aggregate type"}, {eventType, "event type"}, {payload, "payload"}
    };
    for (String[] other : others) {
      if (messageId.equals(other[0])) {
        return "is the " + other[1] + " column too (" + messageId + "): many rows share its value";
      }
    }
    return null;
  }

  public static boolean isColumnName(String name) {
    return name != null && COLUMN.matcher(name).matches();
  }

  /**
   * Why {@code column} cannot hold the message's {@code field}, or null if it can: it may be the
   * field's own column or one the relay does not have, not another of the relay's columns. Read as
   * the message id, {@code instance_key} or {@code aggregate_id} would make an operator's change of
   * one message (a discard by message id) a change of every row of the key or the aggregate; read
   * as the aggregate id, the lease owner would scatter an aggregate's rows.
   */
  public static String misuse(OutboxColumns.Row field, String column) {
    if (column.equals(field.label)) {
      return null;
    }
    for (OutboxColumns.Row relay : OutboxColumns.Row.values()) {
      if (relay.label.equals(column)) {
        return "names the relay's own column "
            + column
            + ", which holds the row's "
            + relay.label
            + ", not its "
            + field.label;
      }
    }
    return null;
  }

  private static void requireColumn(String name) {
    if (!isColumnName(name)) {
      throw new IllegalArgumentException("column must be " + COLUMN_RULE);
    }
  }

  private static void requireColumn(OutboxColumns.Row field, String name) {
    requireColumn(name);
    String misuse = misuse(field, name);
    if (misuse != null) {
      throw new IllegalArgumentException("the " + field.label + " column " + misuse);
    }
  }

  /** The column that holds {@code field} of the row (its own name for the relay's state). */
  public String column(OutboxColumns.Row field) {
    return switch (field) {
      case MESSAGE_ID -> messageId;
      case AGGREGATE_TYPE -> aggregateType;
      case AGGREGATE_ID -> aggregateId;
      case EVENT_TYPE -> eventType;
      case PAYLOAD -> payload;
      default -> field.label;
    };
  }

  /** Whether {@code field} is held by a column of another name or type than the relay's. */
  public boolean isMapped(OutboxColumns.Row field) {
    return !column(field).equals(RELAY.column(field));
  }

  /**
   * {@code field} over {@code alias} (null: unqualified) as a value of the relay's type: {@code
   * o.message_id}, or {@code o."id"::text} when mapped (a no-op for a text column, an
   * index-preserving relabel for a varchar one). The payload is never cast: {@link
   * OutboxColumns.Claimed} reads it by its type.
   */
  public String asText(OutboxColumns.Row field, String alias) {
    String column = quoted(field, alias);
    return isMapped(field) && field != OutboxColumns.Row.PAYLOAD ? column + "::text" : column;
  }

  /**
   * A SELECT list of {@code fields} over {@code alias} (null: unqualified), each under the relay's
   * label ({@link OutboxColumns.Row#selected}): {@code "id"::text AS message_id}. The payload is
   * read as stored ({@link OutboxColumns#payload}).
   */
  public String select(String alias, Collection<OutboxColumns.Row> fields) {
    return fields.stream()
        .map(f -> isMapped(f) ? asText(f, alias) + " AS " + f.label : f.selected(alias))
        .collect(Collectors.joining(", "));
  }

  /**
   * The event's time over {@code alias} as a {@code timestamptz}: {@code o.created_at}, or the
   * instant of another column's value. {@code extract(epoch ...)} reads a {@code timestamptz} as
   * its instant and a {@code timestamp} as a time in UTC, whatever the session's time zone, so one
   * expression serves both types (a claim is built before any column's type is read).
   */
  public String eventTime(String alias) {
    String prefix = alias == null ? "" : alias + ".";
    return readsEventTimeElsewhere()
        ? "to_timestamp(extract(epoch FROM " + prefix + '"' + eventTimestamp + "\"))"
        : prefix + eventTimestamp;
  }

  /** Whether the event's time is read from a column other than the relay's {@code created_at}. */
  public boolean readsEventTimeElsewhere() {
    return !eventTimestamp.equals(RELAY.eventTimestamp);
  }

  /** {@code field}'s column over {@code alias} as it is, for comparing it with itself. */
  public String quoted(OutboxColumns.Row field, String alias) {
    String prefix = alias == null ? "" : alias + ".";
    return isMapped(field) ? prefix + '"' + column(field) + '"' : prefix + field.label;
  }
}
