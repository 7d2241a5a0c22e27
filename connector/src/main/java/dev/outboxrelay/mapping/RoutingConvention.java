package dev.outboxrelay.mapping;

/** Naming conventions for topics and headers. */
public enum RoutingConvention {
  /** outbox-relay's own: topic {@code outbox.${aggregate_type}}, headers {@code outbox.*}. */
  OUTBOX_RELAY("outbox.${aggregate_type}"),
  /**
   * Debezium's outbox event router: topic {@code outbox.event.${aggregate_type}}, key = aggregate
   * id, header {@code id} = message id, so consumers moving from Debezium keep working unchanged.
   */
  DEBEZIUM("outbox.event.${aggregate_type}");

  private final String defaultTopicTemplate;

  RoutingConvention(String defaultTopicTemplate) {
    this.defaultTopicTemplate = defaultTopicTemplate;
  }

  /** The topic template this convention routes by when none is configured. */
  public String defaultTopicTemplate() {
    return defaultTopicTemplate;
  }
}
