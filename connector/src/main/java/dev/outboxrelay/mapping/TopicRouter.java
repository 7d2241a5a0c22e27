package dev.outboxrelay.mapping;

import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.writer.TopicNames;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * Chooses a row's topic: the row's explicit {@code topic} wins; otherwise the topic template is
 * filled from the row. The template's variables are {@code ${aggregate_type}}, {@code
 * ${event_type}} and {@code ${instance_key}}; values are inserted as they are, never sanitized, so
 * two different values can never be merged into one topic by accident.
 *
 * <p>A row is unroutable when the result is not a legal topic name ({@link TopicNames}), when a
 * variable it needs is null, or when its explicit topic is illegal. An explicit topic that is
 * illegal (the empty string included) never falls back to the template: that would publish the row
 * somewhere its writer did not ask for.
 */
public final class TopicRouter {
  public static final String AGGREGATE_TYPE = "aggregate_type";
  public static final String EVENT_TYPE = "event_type";
  public static final String INSTANCE_KEY = "instance_key";

  private static final Map<String, Function<ClaimedMessage, String>> VARIABLES =
      Map.of(
          AGGREGATE_TYPE, ClaimedMessage::aggregateType,
          EVENT_TYPE, ClaimedMessage::eventType,
          INSTANCE_KEY, ClaimedMessage::instanceKey);

  private final String template;
  private final List<Function<ClaimedMessage, String>> segments;

  /**
   * @throws IllegalArgumentException if the template is empty, names an unknown variable, leaves a
   *     {@code ${} open or contains text that can never be part of a topic name
   */
  public TopicRouter(String topicTemplate) {
    this.segments = parse(topicTemplate);
    this.template = topicTemplate;
  }

  /** Returns the template if a router can be built from it; throws as the constructor does. */
  public static String requireValidTemplate(String topicTemplate) {
    parse(topicTemplate);
    return topicTemplate;
  }

  /** The row's topic, or empty when the row is unroutable. */
  public Optional<String> route(ClaimedMessage row) {
    if (row.topic() != null) {
      return legal(row.topic());
    }
    StringBuilder topic = new StringBuilder();
    for (Function<ClaimedMessage, String> segment : segments) {
      String value = segment.apply(row);
      if (value == null) {
        return Optional.empty();
      }
      topic.append(value);
      if (topic.length() > TopicNames.MAX_LENGTH) {
        return Optional.empty();
      }
    }
    return legal(topic.toString());
  }

  /**
   * Legal, and not one of Kafka's internal topics ({@code __consumer_offsets}, {@code
   * __transaction_state}, ...; {@link TopicNames#INTERNAL}): a row must not be able to write there,
   * and the broker would refuse it and fail the task. The writer checks an explicit topic with the
   * same rule ({@link TopicNames#isRoutable}).
   */
  private static Optional<String> legal(String topic) {
    return TopicNames.isRoutable(topic) ? Optional.of(topic) : Optional.empty();
  }

  private static List<Function<ClaimedMessage, String>> parse(String template) {
    Objects.requireNonNull(template, "topic template");
    if (template.isEmpty()) {
      throw new IllegalArgumentException("topic template must not be empty");
    }
    if (TopicNames.isInternal(template)) {
      throw new IllegalArgumentException(
          "topic template must not be one of Kafka's internal topics, where no row may write");
    }
    List<Function<ClaimedMessage, String>> segments = new ArrayList<>();
    boolean hasVariable = false;
    int i = 0;
    while (i < template.length()) {
      int open = template.indexOf("${", i);
      int literalEnd = open < 0 ? template.length() : open;
      if (literalEnd > i) {
        String literal = template.substring(i, literalEnd);
        if (!TopicNames.LEGAL_CHARS.matcher(literal).matches()) {
          throw new IllegalArgumentException(
              "topic template text outside variables must be characters of [a-zA-Z0-9._-]");
        }
        segments.add(row -> literal);
      }
      if (open < 0) {
        break;
      }
      int close = template.indexOf('}', open);
      if (close < 0) {
        throw new IllegalArgumentException("topic template has an unclosed '${'");
      }
      String name = template.substring(open + 2, close);
      Function<ClaimedMessage, String> variable = VARIABLES.get(name);
      if (variable == null) {
        throw new IllegalArgumentException(
            "topic template variable must be one of ${"
                + AGGREGATE_TYPE
                + "}, ${"
                + EVENT_TYPE
                + "}, ${"
                + INSTANCE_KEY
                + "}");
      }
      segments.add(variable);
      hasVariable = true;
      i = close + 1;
    }
    if (!hasVariable && !TopicNames.isLegal(template)) {
      throw new IllegalArgumentException("topic template must be a topic name: " + TopicNames.RULE);
    }
    return List.copyOf(segments);
  }

  @Override
  public String toString() {
    return "TopicRouter[template=" + template + "]";
  }
}
