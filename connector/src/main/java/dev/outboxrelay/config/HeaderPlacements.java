package dev.outboxrelay.config;

import dev.outboxrelay.mapping.OutboxHeaders;
import dev.outboxrelay.mapping.RoutingConvention;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.ColumnMapping.HeaderColumn;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * {@code column.additional.placement}: Debezium's {@code table.fields.additional.placement} syntax,
 * {@code column:placement[:alias]}, of which the relay supports the header placement. Errors name
 * the entry by position, never by value.
 */
final class HeaderPlacements {
  static final String HEADER = "header";

  private HeaderPlacements() {}

  /**
   * The header columns of {@code entries}, in order.
   *
   * @throws IllegalArgumentException naming the first bad entry by position
   */
  static List<HeaderColumn> parse(List<String> entries) {
    List<HeaderColumn> headers = new ArrayList<>();
    Set<String> names = new HashSet<>();
    for (int i = 0; i < entries.size(); i++) {
      String entry = "entry " + (i + 1);
      String[] parts = entries.get(i).trim().split(":", -1);
      if (parts.length < 2 || parts.length > 3) {
        throw new IllegalArgumentException(entry + " must be column:header or column:header:alias");
      }
      String column = parts[0].trim();
      String placement = parts[1].trim().toLowerCase(Locale.ROOT);
      if (!ColumnMapping.isColumnName(column)) {
        throw new IllegalArgumentException(entry + " must start with " + ColumnMapping.COLUMN_RULE);
      }
      if (!placement.equals(HEADER)) {
        throw new IllegalArgumentException(
            entry
                + " has placement '"
                + (placement.equals("envelope") || placement.equals("partition")
                    ? placement
                    : "other")
                + "': only 'header' is supported (the relay sends the payload as the value, with"
                + " no envelope, and the producer partitions by key)");
      }
      String header = parts.length == 3 ? parts[2].trim() : column;
      if (header.isEmpty()) {
        throw new IllegalArgumentException(entry + " has an empty alias");
      }
      if (!names.add(header)) {
        throw new IllegalArgumentException(entry + " names a header an earlier entry names");
      }
      headers.add(new HeaderColumn(column, header));
    }
    return headers;
  }

  /**
   * Why {@code column} may not be sent as a header, or null: the payload (every claim would read it
   * whole, past payload.max.bytes, which bounds what a claim holds, and send it twice), or the
   * lease's owner or token, the relay's fencing state, which is not the message's.
   */
  static String notAHeader(String column, String payloadColumn) {
    if (column.equals(payloadColumn)) {
      return "names the payload column: a claim would read every payload whole as a header,"
          + " past payload.max.bytes, and send it twice";
    }
    if (LEASE_COLUMNS.contains(column)) {
      return "names the relay's lease column " + column + ": its fencing state, not the message's";
    }
    return null;
  }

  private static final Set<String> LEASE_COLUMNS = Set.of("lease_owner", "lease_token");

  /**
   * The event type column placed as {@code eventType} under the debezium convention, which sends
   * that header itself: accepted, and sent once.
   */
  static boolean isConventionEventType(
      HeaderColumn header, RoutingConvention convention, String eventTypeColumn) {
    return convention == RoutingConvention.DEBEZIUM
        && header.header().equals(OutboxHeaders.DEBEZIUM_EVENT_TYPE)
        && header.column().equals(eventTypeColumn);
  }

  /** A header name the relay sets itself, other than the convention's own event type. */
  static boolean isReserved(
      HeaderColumn header, RoutingConvention convention, String eventTypeColumn) {
    return OutboxHeaders.isReserved(header.header(), convention)
        && !isConventionEventType(header, convention, eventTypeColumn);
  }
}
