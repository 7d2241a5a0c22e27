package dev.outboxrelay.mapping;

/** Naming conventions for topics and headers. */
public enum RoutingConvention {
  /** outbox-relay's own: topic {@code outbox.${aggregate_type}}, headers {@code outbox.*}. */
  OUTBOX_RELAY,
  /**
   * Debezium's outbox event router: topic {@code outbox.event.${aggregate_type}}, key = aggregate
   * id, header {@code id} = message id, so consumers moving from Debezium keep working unchanged.
   */
  DEBEZIUM
}
