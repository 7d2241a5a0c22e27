package dev.outboxrelay.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.ConnectMBeans;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.OutboxDb;
import dev.outboxrelay.testing.OutboxDb.Row;
import dev.outboxrelay.writer.OutboxMessage;
import jakarta.ws.rs.core.Response;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfo;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfos;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Bad configurations are refused by the REST validate endpoint with each error on the key to fix; a
 * row that can never be published is parked FAILED with its reason while its neighbours, in its own
 * aggregate too, are published.
 */
class BadConfigAndPoisonRowTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.ONE_WORKER);

  private static final String CONNECTOR = "poison-relay";
  private static final String KEY = "poison";
  private static final String TOPIC = "it-poison";
  private static final ObjectMapper JSON = new ObjectMapper();

  private static OutboxDb db;
  private boolean deployed;

  @BeforeAll
  static void database() {
    db = OutboxDb.fresh("it_poison").migrate();
  }

  @AfterAll
  static void closeDatabase() {
    db.close();
  }

  @AfterEach
  void undeploy() throws InterruptedException {
    if (deployed) {
      CLUSTER.deleteAndAwaitStopped(CONNECTOR, db); // the next test relays the same key
    }
  }

  private static Map<String, String> valid() {
    Map<String, String> config = ConnectCluster.relayConfig(db, KEY, 1);
    config.put("name", "validated"); // the validate endpoint requires it
    return config;
  }

  /** PUT /connector-plugins/{class}/config/validate; the keys that carry errors, with them. */
  private static Map<String, List<String>> errorsOf(Consumer<Map<String, String>> change) {
    Map<String, String> config = valid();
    change.accept(config);
    ConfigInfos infos =
        CLUSTER.connect().validateConnectorConfig(ConnectCluster.CONNECTOR_CLASS, config);
    Map<String, List<String>> errors = new TreeMap<>();
    for (ConfigInfo info : infos.configs()) {
      if (!info.configValue().errors().isEmpty()) {
        errors.put(info.configValue().name(), info.configValue().errors());
      }
    }
    assertEquals(
        infos.errorCount(),
        errors.values().stream().mapToInt(List::size).sum(),
        () -> "error count " + infos);
    return errors;
  }

  @Test
  void validateEndpointNamesTheOffendingKeys() throws IOException {
    assertEquals(Map.of(), errorsOf(c -> {}), "a valid config passes, live checks included");

    Map<String, List<String>> missingKeys = errorsOf(c -> c.remove("instance.keys"));
    assertEquals(Set.of("instance.keys"), missingKeys.keySet(), missingKeys::toString);

    Map<String, List<String>> badTable = errorsOf(c -> c.put("outbox.table", "Outbox; drop"));
    assertEquals(Set.of("outbox.table"), badTable.keySet(), badTable::toString);
    assertFalse(badTable.toString().contains("drop"), "the bad value is not echoed");

    Map<String, List<String>> absentTable = errorsOf(c -> c.put("outbox.table", "no_such_table"));
    assertEquals(Set.of("outbox.table"), absentTable.keySet(), absentTable::toString);

    Map<String, List<String>> renewal =
        errorsOf(
            c -> {
              c.put("lease.duration.ms", "5000");
              c.put("lease.renewal.interval.ms", "5000");
            });
    assertEquals(Set.of("lease.renewal.interval.ms"), renewal.keySet(), renewal::toString);

    Map<String, List<String>> acks = errorsOf(c -> c.put("producer.override.acks", "1"));
    assertEquals(Set.of("producer.override.acks"), acks.keySet(), acks::toString);

    // A key Connect defines with a type of its own (a transform's type is a CLASS): the error names
    // it; the entry, with the text as given, made Connect fail the whole request (500).
    Map<String, List<String>> filter =
        errorsOf(
            c -> {
              c.put("delivery.guarantee", "exactly-once");
              c.put("transforms", "drop");
              c.put("transforms.drop.type", "org.apache.kafka.connect.transforms.Filter");
            });
    assertTrue(filter.containsKey("transforms.drop.type"), filter::toString);

    // Port 1, where nothing listens: a free port let go could be taken by the other test JVM.
    String unreachable = "jdbc:postgresql://127.0.0.1:1/unreachable_db";
    Map<String, List<String>> down = errorsOf(c -> c.put("connection.url", unreachable));
    assertEquals(Set.of("connection.url"), down.keySet(), down::toString);
    assertFalse(down.toString().contains("unreachable_db"), "the URL is not echoed");
    assertFalse(down.toString().contains("127.0.0.1:1"), "the URL is not echoed");
  }

  /**
   * What the docs tell users about a literal password (ConfigurationDocTest keeps them to it):
   * validation masks it, the connector's config as Connect returns it does not.
   */
  @Test
  void literalPasswordIsMaskedOnlyByValidation() throws Exception {
    String literal = "it-literal-password-" + UUID.randomUUID();
    Map<String, String> config = valid();
    config.put("connection.password", literal); // trusted locally: the server never asks for it

    ConfigInfos validated =
        CLUSTER.connect().validateConnectorConfig(ConnectCluster.CONNECTOR_CLASS, config);
    String shown =
        validated.configs().stream()
            .filter(info -> info.configValue().name().equals("connection.password"))
            .findFirst()
            .orElseThrow()
            .configValue()
            .value();
    assertEquals("[hidden]", shown);

    config.remove("name");
    CLUSTER.deploy(CONNECTOR, config);
    deployed = true;
    Response response =
        CLUSTER
            .connect()
            .requestGet(
                CLUSTER.connect().endpointForResource("connectors/" + CONNECTOR + "/config"));
    assertEquals(200, response.getStatus());
    String body = String.valueOf(response.getEntity()); // the kit hands back the body it read
    assertTrue(body.contains(literal), "GET shows it in clear");
  }

  @Test
  void poisonRowIsParkedFailedWhileItsNeighboursArePublished() throws Exception {
    LogCapture logs = LogCapture.get();
    long mark = logs.mark();
    List<OutboxMessage> rows =
        List.of(
            json("p-1", "agg-a", "{\"n\":1}"),
            json("p-poison", "agg-a", "{\"n\":2, not json"),
            json("p-3", "agg-a", "{\"n\":3}"),
            json("p-4", "agg-b", "[4, \"four\"]"),
            json("p-5", "agg-a", "{\"n\":5}"));
    db.insert(KEY, rows);
    Map<String, String> config = ConnectCluster.relayConfig(db, KEY, 2);
    config.put("topic.template", TOPIC);
    config.put("payload.format", "json");
    config.put("value.converter", ConnectCluster.JSON_CONVERTER);
    config.put("value.converter.schemas.enable", "false");
    CLUSTER.deploy(CONNECTOR, config);
    deployed = true;

    await("the poison row FAILED and its neighbours PUBLISHED")
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> db.count("PUBLISHED", KEY) == 4 && "FAILED".equals(db.row("p-poison").status()));
    Row poison = db.row("p-poison");
    assertEquals("PAYLOAD_INVALID_JSON", poison.lastFailureCode());
    assertNull(poison.kafkaTopic());
    assertNull(poison.kafkaOffset());

    List<Delivered> delivered = CLUSTER.readAll(TOPIC);
    assertEquals(
        new TreeSet<>(List.of("p-1", "p-3", "p-4", "p-5")),
        delivered.stream()
            .map(Delivered::messageId)
            .collect(Collectors.toCollection(TreeSet::new)));
    for (Delivered d : delivered) {
      OutboxMessage sent =
          rows.stream().filter(m -> m.messageId().equals(d.messageId())).findFirst().orElseThrow();
      assertEquals(JSON.readTree(sent.payload()), JSON.readTree(d.value()), d.messageId());
    }
    assertFalse(
        logs.matching(
                mark,
                e ->
                    e.level().equals("WARN")
                        && e.message().contains("message_id=p-poison")
                        && e.message().contains("reason=PAYLOAD_INVALID_JSON"))
            .isEmpty(),
        "the poison row is reported with its reason");
    assertEquals(1, ConnectMBeans.sumOverTasks(CONNECTOR, 2, "failed-total"), "failed-total");
    CLUSTER.assertRunning(CONNECTOR, 2);
  }

  private static OutboxMessage json(String id, String aggregate, String payload) {
    return OutboxMessage.builder()
        .messageId(id)
        .aggregateType("order")
        .aggregateId(aggregate)
        .eventType("OrderChanged")
        .payload(payload.getBytes(StandardCharsets.UTF_8))
        .build();
  }
}
