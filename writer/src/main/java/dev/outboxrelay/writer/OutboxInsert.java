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
 * validated, quoted {@link OutboxTableName}.
 *
 * <p>A retried insert of an existing message id does nothing, whether the row still waits in the
 * outbox ({@code ON CONFLICT (message_id) DO NOTHING}) or was published: from schema version 9
 * publishing moves a row into the published log ({@link OutboxTableName#publishedLogQualified()}),
 * so the row is inserted only if the log has no entry with its message id (its message_id index
 * answers). That holds until retention deletes the log entry (a connector with {@code
 * retention.published.ms=0} writes none). A retry that races the very publish of its message (the
 * publish commits after the retry's check) inserts the row again: a duplicate, delivered at least
 * once like any other.
 *
 * <p>The values are one row of a VALUES list, read by the INSERT's SELECT: each is cast to its
 * column's type, so that PostgreSQL knows every parameter's type whatever the driver sends (a
 * string parameter of unspecified type, as with pgjdbc's {@code stringtype=unspecified}, has no
 * type of its own outside an INSERT's VALUES).
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
    PAYLOAD("bytea"),
    HEADERS("jsonb"),
    CORRELATION_ID,
    DELIVER_BEFORE("timestamptz");

    /** {@code message_id, instance_key, ...} */
    static final String COLUMNS = join(c -> c.column);

    /** {@code CAST(? AS text), CAST(? AS text), ..., CAST(? AS jsonb), ...} */
    static final String VALUES = join(c -> c.value);

    final String column = name().toLowerCase(Locale.ROOT);

    /** The parameter, cast to the column's type. */
    private final String value;

    Column() {
      this("text");
    }

    Column(String type) {
      this.value = "CAST(? AS " + type + ")";
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
  private final String ownerSql;

  OutboxInsert(OutboxTableName table) {
    // Asked only when the insert wrote nothing: whether the id that stopped it is another owner's
    // (or a legacy row's), and whether it is this key's.
    String outbox = table.qualified();
    String log = table.publishedLogQualified();
    this.ownerSql =
        "SELECT EXISTS (SELECT 1 FROM "
            + outbox
            + " WHERE message_id = ? AND instance_key IS DISTINCT FROM ?)"
            + " OR EXISTS (SELECT 1 FROM "
            + log
            + " WHERE message_id = ? AND instance_key IS DISTINCT FROM ?),"
            + " EXISTS (SELECT 1 FROM "
            + outbox
            + " WHERE message_id = ? AND instance_key = ?)"
            + " OR EXISTS (SELECT 1 FROM "
            + log
            + " WHERE message_id = ? AND instance_key = ?)";
    this.sql =
        "INSERT INTO "
            + table.qualified()
            + " ("
            + Column.COLUMNS
            + ") SELECT * FROM (VALUES ("
            + Column.VALUES
            + ")) AS v ("
            + Column.COLUMNS
            + ") WHERE NOT EXISTS (SELECT 1 FROM "
            + table.publishedLogQualified()
            + " p WHERE p.message_id = v.message_id)"
            + " ON CONFLICT (message_id) DO NOTHING";
  }

  /** The statement for {@link java.sql.Connection#prepareStatement}. */
  String sql() {
    return sql;
  }

  /**
   * Two booleans: whether the message id is used by a row, or a published-log entry, of another
   * instance key or of none (a legacy row); and whether by one of this key. Parameters: message id
   * and instance key, four times.
   */
  String ownerSql() {
    return ownerSql;
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
            case PAYLOAD -> (p, i) -> p.setBytes(i, message.payloadForInsert());
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
