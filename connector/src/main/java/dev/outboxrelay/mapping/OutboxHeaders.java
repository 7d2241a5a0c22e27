package dev.outboxrelay.mapping;

import dev.outboxrelay.writer.OutboxMessage;

/** Header names the relay sets on records. All values are strings. */
public final class OutboxHeaders {
  /** Every header name under this prefix is the relay's own; rows may not set one. */
  public static final String RESERVED_PREFIX = OutboxMessage.RESERVED_HEADER_PREFIX;

  public static final String MESSAGE_ID = "outbox.message_id";
  public static final String EVENT_TYPE = "outbox.event_type";
  public static final String AGGREGATE_TYPE = "outbox.aggregate_type";
  public static final String INSTANCE_KEY = "outbox.instance_key";

  /** Only when the row has a correlation id. */
  public static final String CORRELATION_ID = "outbox.correlation_id";

  /** Dead-letter records only: the reason code the row was unpublishable for. */
  public static final String FAILURE_REASON = "outbox.failure_reason";

  /**
   * Dead-letter records only, value {@code true}: the payload and the row's own headers were left
   * out, the payload being larger than the configured maximum or the record larger than the
   * producer takes (both stay in the outbox row).
   */
  public static final String PAYLOAD_OMITTED = "outbox.payload_omitted";

  /**
   * Dead-letter records only, value {@code true}: the row's own headers are not in the record.
   * Either they were larger than the producer takes, and the claim never read them (the rest of the
   * record as for any dead letter); or even without its payload the record was larger than the
   * producer takes (an event type, aggregate type or correlation id of that size), so it carries
   * only the message id, the failure reason and these two markers.
   */
  public static final String HEADERS_OMITTED = "outbox.headers_omitted";

  /** Debezium convention: the message id, as Debezium's outbox event router sets it. */
  public static final String DEBEZIUM_ID = "id";

  /**
   * Debezium convention: the event type, where Debezium users usually place it with {@code
   * table.fields.additional.placement=type:header:eventType}.
   */
  public static final String DEBEZIUM_EVENT_TYPE = "eventType";

  private OutboxHeaders() {}

  /** Whether a row's own header may not use {@code name} under {@code convention}. */
  public static boolean isReserved(String name, RoutingConvention convention) {
    if (name.startsWith(RESERVED_PREFIX)) {
      return true;
    }
    return convention == RoutingConvention.DEBEZIUM
        && (name.equals(DEBEZIUM_ID) || name.equals(DEBEZIUM_EVENT_TYPE));
  }
}
