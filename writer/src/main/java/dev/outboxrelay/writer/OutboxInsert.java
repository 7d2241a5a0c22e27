package dev.outboxrelay.writer;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.Locale;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The INSERT of an application's row: the one definition of the columns an application writes,
 * their order and how each is bound. Every value is a bind parameter; the table name is the
 * validated, quoted {@link OutboxTableName}. A retried insert of an existing message id does
 * nothing ({@code ON CONFLICT (message_id) DO NOTHING}).
 */
final class OutboxInsert {
  /**
   * The columns an application writes, in the statement's order; the relay owns every other column.
   * Each is bound from the message by {@link #bind}, whose switch covers every constant: a column
   * added here does not compile until it is bound.
   */
  enum Column {
    MESSAGE_ID,
    INSTANCE_KEY,
    AGGREGATE_TYPE,
    AGGREGATE_ID,
    EVENT_TYPE,
    TOPIC,
    PAYLOAD,
    HEADERS("CAST(? AS jsonb)"),
    CORRELATION_ID,
    DELIVER_BEFORE;

    /** {@code message_id, instance_key, ...} */
    static final String COLUMNS = join(c -> c.column);

    /** {@code ?, ?, ..., CAST(? AS jsonb), ...} */
    static final String VALUES = join(c -> c.value);

    final String column = name().toLowerCase(Locale.ROOT);

    /** The parameter, cast where JDBC cannot send the column's type. */
    private final String value;

    Column() {
      this("?");
    }

    Column(String value) {
      this.value = value;
    }

    /** Its 1-based JDBC parameter index. */
    int index() {
      return ordinal() + 1;
    }

    private static String join(Function<Column, String> part) {
      return Arrays.stream(values()).map(part).collect(Collectors.joining(", "));
    }
  }

  private final String sql;

  OutboxInsert(OutboxTableName table) {
    this.sql =
        "INSERT INTO "
            + table.qualified()
            + " ("
            + Column.COLUMNS
            + ") VALUES ("
            + Column.VALUES
            + ") ON CONFLICT (message_id) DO NOTHING";
  }

  /** The statement for {@link java.sql.Connection#prepareStatement}. */
  String sql() {
    return sql;
  }

  /** Sets one parameter. */
  @FunctionalInterface
  private interface Setter {
    void set(PreparedStatement ps, int index) throws SQLException;
  }

  /** Binds every parameter of {@code ps}, prepared from {@link #sql()}. */
  static void bind(PreparedStatement ps, String instanceKey, OutboxMessage message)
      throws SQLException {
    for (Column column : Column.values()) {
      Setter setter =
          switch (column) {
            case MESSAGE_ID -> (p, i) -> p.setString(i, message.messageId());
            case INSTANCE_KEY -> (p, i) -> p.setString(i, instanceKey);
            case AGGREGATE_TYPE -> (p, i) -> p.setString(i, message.aggregateType());
            case AGGREGATE_ID -> (p, i) -> p.setString(i, message.aggregateId());
            case EVENT_TYPE -> (p, i) -> p.setString(i, message.eventType());
            case TOPIC -> (p, i) -> p.setString(i, message.topic());
            case PAYLOAD -> (p, i) -> p.setBytes(i, message.payload());
            case HEADERS -> (p, i) -> p.setString(i, message.headersJson());
            case CORRELATION_ID -> (p, i) -> p.setString(i, message.correlationId());
            case DELIVER_BEFORE ->
                (p, i) -> {
                  if (message.deliverBefore() == null) {
                    p.setNull(i, Types.TIMESTAMP_WITH_TIMEZONE);
                  } else {
                    p.setObject(
                        i, OffsetDateTime.ofInstant(message.deliverBefore(), ZoneOffset.UTC));
                  }
                };
          };
      setter.set(ps, column.index());
    }
  }
}
