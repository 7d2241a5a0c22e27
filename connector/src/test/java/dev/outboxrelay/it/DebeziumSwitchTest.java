package dev.outboxrelay.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.config.ConfigValidation;
import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.DebeziumOutboxTable;
import dev.outboxrelay.testing.EventRouterReference;
import dev.outboxrelay.testing.EventRouterReference.ConsumerView;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.OutboxDb;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.StringConverter;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The switch from Debezium's outbox event router to the relay, end to end: a table created exactly
 * as Debezium's documentation shows, rows written before the switch (Debezium's), the adoption
 * script, rows written after it by the same application code, and the relay configured with the
 * {@code column.*} settings. Consumers must see for each row what Debezium's real EventRouter makes
 * of it (run in-process on the change event Debezium would have captured): same topic, key, headers
 * and value, through the same converters.
 */
class DebeziumSwitchTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.ONE_WORKER);

  private static final String CONNECTOR = "debezium-switch";
  private static final String KEY = "orders";

  /** Debezium's documented example: the event type as the eventType header; and one more column. */
  private static final String PLACEMENT =
      "type:header:eventType,aggregatetype:header:aggregateType";

  @AfterEach
  void undeploy() throws InterruptedException {
    CLUSTER.delete(CONNECTOR);
  }

  @Test
  void consumersSeeWhatTheEventRouterSentForRowsWrittenAfterTheSwitch() throws Exception {
    try (OutboxDb db = OutboxDb.fresh("it_dbz_string")) {
      DebeziumOutboxTable outbox = new DebeziumOutboxTable(db);
      List<UUID> before = writeEvents(outbox, "before");

      outbox.adopt(KEY);
      List<UUID> after = writeEvents(outbox, "after");
      after.add(outbox.insert("order", "o-9", "OrderForgotten", null));

      Map<String, String> config = relayConfig(db);
      config.put("payload.format", "string");
      config.put("value.converter", ConnectCluster.STRING_CONVERTER);
      Map<String, ConsumerView> expected;
      try (EventRouterReference debezium =
          new EventRouterReference(
              Map.of("table.fields.additional.placement", PLACEMENT),
              converter(new StringConverter(), true),
              converter(new StringConverter(), false))) {
        expected = capturedByDebezium(outbox, debezium, after);
      }
      assertValid(config);
      CLUSTER.deploy(CONNECTOR, config);

      assertConsumersSeeTheSame(outbox, expected, before);
    }
  }

  @Test
  void anExpandedJsonPayloadIsTheJsonTheEventRouterExpanded() throws Exception {
    assertExpandedAsTheEventRouterDid("it_dbz_json", false);
  }

  /** For schema-based converters: the schema the EventRouter inferred, and the value in it. */
  @Test
  void anInferredSchemaIsTheSchemaTheEventRouterInferred() throws Exception {
    assertExpandedAsTheEventRouterDid("it_dbz_schema", true);
  }

  /**
   * {@code payload.format=json} against {@code table.expand.json.payload=true}, through
   * JsonConverter with or without schemas ({@code payload.json.schema=inferred} or none).
   */
  private static void assertExpandedAsTheEventRouterDid(String database, boolean schemas)
      throws Exception {
    try (OutboxDb db = OutboxDb.fresh(database)) {
      DebeziumOutboxTable outbox = new DebeziumOutboxTable(db);
      List<UUID> before = writeEvents(outbox, "before");

      outbox.adopt(KEY);
      List<UUID> after = writeEvents(outbox, "after");

      Map<String, String> config = relayConfig(db);
      config.put("payload.format", "json");
      config.put("payload.json.schema", schemas ? "inferred" : "none");
      config.put("value.converter", ConnectCluster.JSON_CONVERTER);
      config.put("value.converter.schemas.enable", String.valueOf(schemas));
      JsonConverter json = new JsonConverter();
      json.configure(Map.of("schemas.enable", String.valueOf(schemas)), false);
      Map<String, ConsumerView> expected;
      try (EventRouterReference debezium =
          new EventRouterReference(
              Map.of(
                  "table.fields.additional.placement",
                  PLACEMENT,
                  "table.expand.json.payload",
                  "true"),
              converter(new StringConverter(), true),
              json)) {
        expected = capturedByDebezium(outbox, debezium, after);
      }
      assertEquals(
          schemas,
          expected
              .values()
              .iterator()
              .next()
              .value()
              .startsWith("{\"schema\":{\"type\":\"struct\""),
          "the reference carries the EventRouter's inferred schema when schemas are on");
      assertValid(config);
      CLUSTER.deploy(CONNECTOR, config);

      assertConsumersSeeTheSame(outbox, expected, before);
    }
  }

  /**
   * Two aggregates of two types, one with two events in order, payloads with nested objects,
   * arrays, numbers, booleans and text beyond ASCII.
   */
  private static List<UUID> writeEvents(DebeziumOutboxTable outbox, String era) throws Exception {
    List<UUID> ids = new ArrayList<>();
    ids.add(
        outbox.insert(
            "order",
            "o-1-" + era,
            "OrderCreated",
            "{\"id\": \"o-1\", \"customer\": {\"name\": \"Zoë\", \"vip\": true},"
                + " \"lines\": [\"book\", \"pen\"], \"total\": 12.5, \"items\": 2}"));
    ids.add(
        outbox.insert(
            "order",
            "o-1-" + era,
            "OrderPaid",
            "{\"id\": \"o-1\", \"paid\": 1250, \"era\": \"" + era + "\"}"));
    ids.add(outbox.insert("customer", "c-7-" + era, "CustomerRegistered", "{\"name\": \"Ada\"}"));
    return ids;
  }

  private static Map<String, String> relayConfig(OutboxDb db) {
    Map<String, String> config = ConnectCluster.relayConfig(db, KEY, 1);
    config.putAll(DebeziumOutboxTable.COLUMN_SETTINGS);
    config.put("routing.convention", "debezium");
    config.put("column.additional.placement", PLACEMENT);
    return config;
  }

  private static void assertValid(Map<String, String> config) {
    List<String> errors =
        ConfigValidation.validate(config).configValues().stream()
            .filter(v -> !v.errorMessages().isEmpty())
            .map(ConfigValue::name)
            .toList();
    assertEquals(List.of(), errors, "validate() finds no fault with the adopted table");
  }

  /**
   * What Debezium would have sent for each row, from the row as it was inserted (a published row's
   * payload is cleared), by message id.
   */
  private static Map<String, ConsumerView> capturedByDebezium(
      DebeziumOutboxTable outbox, EventRouterReference debezium, List<UUID> rows) throws Exception {
    Map<String, ConsumerView> expected = new LinkedHashMap<>();
    for (UUID id : rows) {
      expected.put(id.toString(), debezium.route(outbox.row(id)));
    }
    return expected;
  }

  private static void assertConsumersSeeTheSame(
      DebeziumOutboxTable outbox, Map<String, ConsumerView> expected, List<UUID> before)
      throws Exception {
    await("the rows written after the switch PUBLISHED")
        .atMost(Duration.ofSeconds(60))
        .until(() -> outbox.count(KEY, "PUBLISHED") == expected.size());
    List<String> after = List.copyOf(expected.keySet());

    String[] topics =
        expected.values().stream().map(ConsumerView::topic).distinct().toArray(String[]::new);
    // Both tests publish to the EventRouter's default topics: this test's records are its rows'.
    Set<String> ours = new HashSet<>(after);
    before.forEach(id -> ours.add(id.toString()));
    List<Delivered> delivered =
        CLUSTER.readAll(topics).stream().filter(d -> ours.contains(d.headers().get("id"))).toList();
    Map<String, List<ConsumerView>> byId = new HashMap<>();
    for (Delivered d : delivered) {
      byId.computeIfAbsent(d.headers().get("id"), k -> new ArrayList<>())
          .add(EventRouterReference.of(d));
    }

    for (Map.Entry<String, ConsumerView> row : expected.entrySet()) {
      List<ConsumerView> copies = byId.getOrDefault(row.getKey(), List.of());
      assertEquals(1, copies.size(), () -> "one record of row " + row.getKey() + ": " + copies);
      assertEquals(row.getValue(), copies.get(0), "as the EventRouter sent it");
    }
    for (UUID id : before) {
      assertFalse(byId.containsKey(id.toString()), "a row of Debezium's is not sent again");
    }
    assertEquals(after.size(), delivered.size(), () -> "only the new rows: " + delivered);
    assertAggregateInOrder(delivered, after);

    // Debezium's rows are legacy rows: never claimed, changed or counted.
    assertEquals(before.size(), outbox.count(null, "PENDING"));
    for (UUID id : before) {
      assertTrue(outbox.row(id).payload() != null, "payload of a legacy row left alone");
    }
  }

  /** The two events of the aggregate written after the switch, on one partition, in order. */
  private static void assertAggregateInOrder(List<Delivered> delivered, List<String> after) {
    List<String> order =
        delivered.stream()
            .filter(d -> d.key().equals("o-1-after"))
            .sorted((a, b) -> Long.compare(a.offset(), b.offset()))
            .map(d -> d.headers().get("id"))
            .collect(Collectors.toList());
    assertEquals(List.of(after.get(0), after.get(1)), order);
  }

  private static Converter converter(Converter converter, boolean isKey) {
    converter.configure(Map.of(), isKey);
    return converter;
  }
}
