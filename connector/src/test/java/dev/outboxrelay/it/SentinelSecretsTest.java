package dev.outboxrelay.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.ConnectMBeans;
import dev.outboxrelay.testing.ConnectMBeans.Attribute;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.LogCapture.Event;
import dev.outboxrelay.testing.OutboxDb;
import dev.outboxrelay.testing.Sentinels;
import dev.outboxrelay.writer.OutboxMessage;
import jakarta.ws.rs.core.Response;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfo;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfos;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorStateInfo;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Secrets never leak: sentinel strings in the password, in the JDBC URL and in failing rows'
 * payloads and headers never show in any log event (every logger, every level, while the failure
 * paths run), in the connectors' REST status or validation errors, or in any Kafka MBean (names,
 * attribute names, values).
 */
class SentinelSecretsTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.ONE_WORKER);

  private static final Logger log = LoggerFactory.getLogger(SentinelSecretsTest.class);
  private static final Logger controlLog = LoggerFactory.getLogger("dev.outboxrelay.it.control");
  private static final java.util.logging.Logger controlJul =
      java.util.logging.Logger.getLogger("org.postgresql.itcontrol");

  private static final String RELAY = "sentinel-relay";
  private static final String VANISHING = "sentinel-vanishing";
  private static final String KEY = "sentinel";
  private static final String TOPIC = "it-sentinel";
  private static final String URL_MARKER = "it-sentinel-url";

  private final String password = sentinel("Password");
  private final String urlSecret = sentinel("Url");
  private final String payloadSecret = sentinel("Payload");
  private final String headerSecret = sentinel("HeaderValue");
  private final String headerNameSecret = sentinel("HeaderName").toLowerCase();
  private final String control = sentinel("Control");
  private Sentinels secrets;
  private final List<String> deployed = new ArrayList<>();

  private static String sentinel(String what) {
    return "Sntl" + what + UUID.randomUUID().toString().replace("-", "");
  }

  @AfterEach
  void undeploy() throws InterruptedException {
    LogCapture.get().stopWatching();
    for (String name : deployed) {
      CLUSTER.delete(name);
    }
  }

  @Test
  @SuppressWarnings("try") // the resource only scopes the log levels
  void sentinelsNeverReachLogsStatusOrMetrics() throws Exception {
    LogCapture logs = LogCapture.get();
    try (OutboxDb db = OutboxDb.fresh("it_sentinel").migrate().migrateTable("vanishing")) {
      // The rows are written before watching starts: the test's own inserts are not the relay's.
      db.insert(
          KEY,
          List.of(
              row("s-good-1", "{\"ok\":1}").build(),
              row("s-poison-json", "{\"secret\":\"" + payloadSecret + "\", broken")
                  .header("x-secret", headerSecret)
                  .build(),
              row("s-poison-header", "{\"secret\":\"" + payloadSecret + "\"}").build(),
              row("s-good-2", "{\"ok\":2}").build()));
      // A reserved header name, which the writer library refuses: as another writer would.
      db.update(
          "UPDATE outbox SET headers = jsonb_build_object(?, ?) WHERE message_id = ?",
          "outbox." + headerNameSecret,
          headerSecret,
          "s-poison-header");
      // An unknown parameter the driver ignores, and a harmless name that shows the URL was used.
      String url = db.url() + "?ApplicationName=" + URL_MARKER + "&itSecret=" + urlSecret;
      long mark = logs.mark();
      secrets = Sentinels.watch(password, urlSecret, payloadSecret, headerSecret, headerNameSecret);
      logs.watch(control);

      try (AutoCloseable everything = LogCapture.everyLevel()) {
        controlLog.trace("control event {}", control);
        controlJul.finest("control event " + control);

        // Validation errors of a config carrying the secrets.
        secrets.assertAbsent("validation errors", validationErrors(unreachableConfig(db)));

        // A connector that parks two poison rows and publishes their neighbours.
        Map<String, String> config = withSecrets(ConnectCluster.relayConfig(db, KEY, 2), url);
        config.put("topic.template", TOPIC);
        config.put("payload.format", "json");
        config.put("value.converter", ConnectCluster.JSON_CONVERTER);
        config.put("value.converter.schemas.enable", "false");
        deploy(RELAY, config);
        await("poison rows FAILED, neighbours PUBLISHED")
            .atMost(Duration.ofSeconds(60))
            .until(
                () ->
                    db.count("PUBLISHED", KEY) == 2
                        && db.count("FAILED", KEY) == 2
                        && ConnectMBeans.sumOverTasks(RELAY, 2, "failed-total") == 2);
        assertEquals("PAYLOAD_INVALID_JSON", db.row("s-poison-json").lastFailureCode());
        assertEquals("HEADER_NAME_RESERVED", db.row("s-poison-header").lastFailureCode());
        assertTrue(db.backends(URL_MARKER) > 0, "the relay connected with the URL given");

        // A connector whose table disappears: its task fails.
        Map<String, String> vanishing =
            withSecrets(ConnectCluster.relayConfig(db, "vanishing-key", 1), url);
        vanishing.put("outbox.table", "vanishing");
        deploy(VANISHING, vanishing);
        db.update("DROP TABLE vanishing");
        CLUSTER
            .connect()
            .assertions()
            .assertConnectorIsRunningAndTasksHaveFailed(VANISHING, 1, "task fails on the table");
      }

      // REST status: connector and task states and traces.
      for (String name : List.of(RELAY, VANISHING)) {
        secrets.assertAbsent(name + " status", get("connectors/" + name + "/status"));
      }
      secrets.assertAbsent("all statuses", get("connectors?expand=status"));
      ConnectorStateInfo failed = CLUSTER.status(VANISHING);
      String trace = failed.tasks().get(0).trace();
      assertEquals("FAILED", failed.tasks().get(0).state());
      assertTrue(trace.contains("42P01"), () -> "the trace says what failed: " + trace);

      // Metrics: every Kafka MBean, the relay's plugin metrics among them.
      List<Attribute> attributes = ConnectMBeans.scan("kafka");
      assertTrue(
          attributes.stream()
              .anyMatch(
                  a ->
                      a.bean().toString().contains("type=plugins,connector=" + RELAY)
                          && a.name().equals("failed-total")),
          "the scan sees the relay's plugin metrics");
      assertEquals(List.of(), secrets.inMBeans("kafka"), "MBeans carrying a secret");

      // Logs: every event since the rows were written, of every logger and level.
      List<Event> controlHits =
          logs.sentinelHits().stream().filter(e -> e.fullText().contains(control)).toList();
      assertEquals(
          2, controlHits.size(), () -> "the capture sees TRACE and FINEST: " + controlHits);
      assertTrue(logs.scannedCount() > mark, "events were scanned");
      assertFalse(
          logs.matching(mark, e -> e.message().contains("message_id=s-poison-json")).isEmpty(),
          "the poison row's failure was logged");
      List<String> leaks =
          secrets.inLogs(LogCapture.TEST_REST_CLIENT).stream()
              .filter(leak -> !leak.contains(control))
              .toList();
      assertEquals(List.of(), leaks, "log events carrying a secret");
    }
  }

  private void deploy(String name, Map<String, String> config) throws InterruptedException {
    deployed.add(name);
    CLUSTER.deploy(name, config);
  }

  private Map<String, String> withSecrets(Map<String, String> config, String url) {
    config.put("connection.url", url);
    config.put("connection.password", password);
    return config;
  }

  private Map<String, String> unreachableConfig(OutboxDb db) throws IOException {
    // Port 1, where nothing listens: a free port let go could be taken by the other test JVM.
    Map<String, String> config =
        withSecrets(
            ConnectCluster.relayConfig(db, KEY, 1),
            "jdbc:postgresql://127.0.0.1:1/x?itSecret=" + urlSecret);
    config.put("name", "sentinel-validate");
    return config;
  }

  private static String validationErrors(Map<String, String> config) {
    ConfigInfos infos =
        CLUSTER.connect().validateConnectorConfig(ConnectCluster.CONNECTOR_CLASS, config);
    assertTrue(infos.errorCount() > 0, "the unreachable database is reported");
    StringBuilder errors = new StringBuilder();
    for (ConfigInfo info : infos.configs()) {
      errors.append(info.configValue().name()).append(info.configValue().errors());
    }
    return errors.toString();
  }

  private static String get(String resource) {
    Response response =
        CLUSTER.connect().requestGet(CLUSTER.connect().endpointForResource(resource));
    assertEquals(200, response.getStatus(), resource);
    return String.valueOf(response.getEntity()); // the kit hands back the body it read
  }

  private static OutboxMessage.Builder row(String id, String payload) {
    return OutboxMessage.builder()
        .messageId(id)
        .aggregateType("order")
        .aggregateId("agg-" + id)
        .eventType("OrderChanged")
        .payload(payload.getBytes(StandardCharsets.UTF_8));
  }
}
