package dev.outboxrelay.mapping;

import static dev.outboxrelay.mapping.TestRows.row;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TopicRouterTest {

  @Test
  void fillsEveryTemplateVariableFromTheRow() {
    TopicRouter router = new TopicRouter("x.${instance_key}.${aggregate_type}-${event_type}_v1");

    Optional<String> topic =
        router.route(row().instanceKey("eu").aggregateType("order").eventType("Placed").build());

    assertEquals(Optional.of("x.eu.order-Placed_v1"), topic);
  }

  @Test
  void explicitTopicWinsOverTheTemplate() {
    TopicRouter router = new TopicRouter("outbox.${aggregate_type}");

    assertEquals(Optional.of("payments.v2"), router.route(row().topic("payments.v2").build()));
    assertEquals(Optional.of("outbox.order"), router.route(row().topic(null).build()));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "has space", "a/b", ".", "..", "ümlaut"})
  void illegalExplicitTopicIsUnroutableAndNeverFallsBackToTheTemplate(String topic) {
    TopicRouter router = new TopicRouter("outbox.${aggregate_type}");

    assertEquals(Optional.empty(), router.route(row().topic(topic).build()));
  }

  @ParameterizedTest
  @ValueSource(strings = {"order type", "order/123", "ordre\u00e9", ""})
  void templateFilledWithIllegalCharactersIsUnroutable(String aggregateType) {
    TopicRouter router = new TopicRouter("${aggregate_type}");

    assertEquals(Optional.empty(), router.route(row().aggregateType(aggregateType).build()));
  }

  @Test
  void templateFilledToDotOrDotDotIsUnroutable() {
    TopicRouter router = new TopicRouter("${aggregate_type}");

    assertEquals(Optional.empty(), router.route(row().aggregateType(".").build()));
    assertEquals(Optional.empty(), router.route(row().aggregateType("..").build()));
    assertEquals(Optional.of("..."), router.route(row().aggregateType("...").build()));
  }

  @Test
  void topicOf249CharactersRoutesAnd250DoesNot() {
    TopicRouter router = new TopicRouter("p.${aggregate_type}");

    String fits = "a".repeat(247);
    assertEquals(Optional.of("p." + fits), router.route(row().aggregateType(fits).build()));
    assertEquals(Optional.empty(), router.route(row().aggregateType(fits + "a").build()));
  }

  @Test
  void nullVariableIsUnroutable() {
    TopicRouter router = new TopicRouter("outbox.${event_type}");

    assertEquals(Optional.empty(), router.route(row().eventType(null).build()));
  }

  @Test
  void templateWithoutVariablesIsAFixedTopic() {
    TopicRouter router = new TopicRouter("all-events");

    assertEquals(Optional.of("all-events"), router.route(row().build()));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "outbox.${aggregate}",
        "outbox.${aggregate_type",
        "outbox/${aggregate_type}",
        "outbox.$${aggregate_type}",
        "..",
        "${}",
      })
  void rejectsTemplatesThatCanNeverRoute(String template) {
    assertThrows(IllegalArgumentException.class, () -> new TopicRouter(template));
    assertThrows(IllegalArgumentException.class, () -> TopicRouter.requireValidTemplate(template));
  }

  @Test
  void defaultTemplatesOfBothConventionsAreValid() {
    for (RoutingConvention convention : RoutingConvention.values()) {
      TopicRouter router = new TopicRouter(convention.defaultTopicTemplate());
      assertTrue(router.route(row().aggregateType("order").build()).isPresent(), convention::name);
    }
    assertEquals("outbox.order", route(RoutingConvention.OUTBOX_RELAY));
    assertEquals("outbox.event.order", route(RoutingConvention.DEBEZIUM));
  }

  private static String route(RoutingConvention convention) {
    return new TopicRouter(convention.defaultTopicTemplate())
        .route(row().aggregateType("order").build())
        .orElseThrow();
  }
}
