package dev.outboxrelay.store.postgres;

import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.ExhaustedMessage;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.MessageStatus;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The outbox row's columns as the store reads them, each spelled once: a claim's RETURNING list is
 * built from these, and a claimed row is read back by these names. The columns an application
 * writes are the writer library's ({@code dev.outboxrelay.writer.PostgresOutboxWriter}).
 */
final class OutboxColumns {
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
    PAYLOAD,
    HEADERS("o.headers::text"),
    CORRELATION_ID,
    CREATED_AT,
    DELIVER_BEFORE,
    DEADLINE_EXPIRED("COALESCE(o.deliver_before <= clock.now, FALSE)"),
    ATTEMPTS,
    LEASE_OWNER,
    LEASE_TOKEN,
    LEASE_EXPIRES_AT,
    STATUS,
    LAST_FAILURE_CODE;

    /** {@code o.seq, o.message_id, ..., o.headers::text AS headers, ...} */
    static final String RETURNING = join(values(), c -> c.selected);

    /** The label the row carries the column under, and the name it is read by. */
    final String label = name().toLowerCase(Locale.ROOT);

    private final String selected;

    Claimed() {
      this.selected = "o." + label;
    }

    Claimed(String expression) {
      this.selected = expression + " AS " + label;
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

    static ClaimedMessage claimed(ResultSet rs) throws SQLException {
      return new ClaimedMessage(
          rs.getLong(SEQ.label),
          rs.getString(MESSAGE_ID.label),
          rs.getString(INSTANCE_KEY.label),
          rs.getString(AGGREGATE_TYPE.label),
          rs.getString(AGGREGATE_ID.label),
          rs.getString(EVENT_TYPE.label),
          rs.getString(TOPIC.label),
          rs.getBytes(PAYLOAD.label),
          rs.getString(HEADERS.label),
          rs.getString(CORRELATION_ID.label),
          instant(rs, CREATED_AT),
          instant(rs, DELIVER_BEFORE),
          rs.getBoolean(DEADLINE_EXPIRED.label),
          rs.getInt(ATTEMPTS.label),
          new Lease(rs.getString(LEASE_OWNER.label), rs.getLong(LEASE_TOKEN.label)),
          instant(rs, LEASE_EXPIRES_AT));
    }

    private static Instant instant(ResultSet rs, Claimed column) throws SQLException {
      Timestamp ts = rs.getTimestamp(column.label);
      return ts == null ? null : ts.toInstant();
    }
  }

  private static <E> String join(E[] columns, java.util.function.Function<E, String> part) {
    return Arrays.stream(columns).map(part).collect(Collectors.joining(", "));
  }
}
