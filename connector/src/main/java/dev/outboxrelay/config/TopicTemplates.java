package dev.outboxrelay.config;

import dev.outboxrelay.mapping.RoutingConvention;
import java.util.List;

/** The variables a {@code topic.template} may use, and each routing convention's default. */
public final class TopicTemplates {
  public static final String AGGREGATE_TYPE = "${aggregate_type}";
  public static final String EVENT_TYPE = "${event_type}";
  public static final String INSTANCE_KEY = "${instance_key}";

  /** Every variable a template may contain; nothing else is substituted. */
  public static final List<String> VARIABLES = List.of(AGGREGATE_TYPE, EVENT_TYPE, INSTANCE_KEY);

  private TopicTemplates() {}

  /** The template used when {@code topic.template} is unset. */
  public static String defaultFor(RoutingConvention convention) {
    return switch (convention) {
      case OUTBOX_RELAY -> "outbox." + AGGREGATE_TYPE;
      case DEBEZIUM -> "outbox.event." + AGGREGATE_TYPE;
    };
  }
}
