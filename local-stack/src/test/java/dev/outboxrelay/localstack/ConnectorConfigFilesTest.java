package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import dev.outboxrelay.config.OutboxSourceConfig;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.runtime.SourceConnectorConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every connector config this repository ships passes the connector's own validation, uses only
 * keys that exist, and takes its password from a config provider the worker it is meant for has.
 */
class ConnectorConfigFilesTest {
  private static final Pattern REFERENCE = Pattern.compile("\\$\\{([a-z]+):([^}]*)}");

  /** Keys Connect itself defines for every source connector, plus its dynamic families. */
  private static final List<String> FRAMEWORK_PREFIXES =
      List.of(
          "topic.creation.",
          "transforms.",
          "predicates.",
          "errors.",
          "producer.override.",
          "admin.override.",
          "key.converter.",
          "value.converter.",
          "header.converter.");

  /** A connector config and the worker config of the Connect cluster it is meant for. */
  record Shipped(String file, Map<String, String> config, Set<String> workerProviders) {
    @Override
    public String toString() {
      return file;
    }
  }

  static Stream<Shipped> shippedConfigs() {
    Set<String> localWorker = providers(RepoFiles.properties("config/connect-worker.properties"));
    Set<String> imageWorker = providers(RepoFiles.properties("docker/connect-worker.properties"));
    return Stream.of(
        new Shipped(
            "config/local-connector.json", restConfig("config/local-connector.json"), localWorker),
        new Shipped(
            "config/production-connector.json",
            restConfig("config/production-connector.json"),
            imageWorker),
        new Shipped(
            "config/schema-registry-connector.json",
            restConfig("config/schema-registry-connector.json"),
            imageWorker),
        new Shipped(
            "config/exactly-once-connector.json",
            restConfig("config/exactly-once-connector.json"),
            imageWorker),
        strimzi("manifests/kafka-connector.yaml", "manifests/kafka-connect.yaml"),
        strimzi(
            "manifests/kafka-connector-exactly-once.yaml",
            "manifests/kafka-connect-exactly-once.yaml"));
  }

  /** A KafkaConnector's config as Connect sees it, and the providers of its KafkaConnect. */
  private static Shipped strimzi(String connectorFile, String connectFile) {
    JsonNode connector = RepoFiles.yaml(connectorFile);
    JsonNode connect = RepoFiles.yaml(connectFile);
    Map<String, String> config = new LinkedHashMap<>();
    config.put("connector.class", connector.path("spec").path("class").asText());
    config.put("tasks.max", connector.path("spec").path("tasksMax").asText());
    config.putAll(RepoFiles.stringMap(connector.path("spec").path("config")));
    Set<String> providers =
        Set.of(connect.path("spec").path("config").path("config.providers").asText().split(","));
    return new Shipped(connectorFile, config, providers);
  }

  private static Map<String, String> restConfig(String file) {
    JsonNode root = RepoFiles.json(file);
    assertFalse(
        root.path("name").asText("").isBlank(), file + ": a POST /connectors body has a name");
    root.path("config")
        .properties()
        .forEach(
            e ->
                assertTrue(
                    e.getValue().isTextual(),
                    file + ": Connect configs are strings; " + e.getKey() + " is not"));
    return RepoFiles.stringMap(root.path("config"));
  }

  private static Set<String> providers(Properties worker) {
    return Set.of(worker.getProperty("config.providers", "").split(","));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("shippedConfigs")
  void namesTheConnector(Shipped shipped) {
    assertEquals(ConnectWorker.CONNECTOR_CLASS, shipped.config().get("connector.class"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("shippedConfigs")
  void usesOnlyKeysThatExist(Shipped shipped) {
    Set<String> connectorKeys = OutboxSourceConfig.configDef().names();
    Set<String> frameworkKeys = SourceConnectorConfig.configDef().names();
    Set<String> unknown = new TreeSet<>();
    for (String key : shipped.config().keySet()) {
      boolean known =
          connectorKeys.contains(key)
              || frameworkKeys.contains(key)
              || FRAMEWORK_PREFIXES.stream().anyMatch(key::startsWith);
      if (!known) {
        unknown.add(key);
      }
    }
    assertTrue(unknown.isEmpty(), shipped + " uses keys nobody defines: " + unknown);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("shippedConfigs")
  void setsEveryKeyWithoutDefault(Shipped shipped) {
    for (ConfigDef.ConfigKey key : OutboxSourceConfig.configDef().configKeys().values()) {
      if (!key.hasDefault()) {
        assertTrue(shipped.config().containsKey(key.name), shipped + " must set " + key.name);
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("shippedConfigs")
  void passesTheConnectorsConfigDefAndCrossFieldChecks(Shipped shipped) {
    for (ConfigValue value : OutboxSourceConfig.configDef().validate(shipped.config())) {
      assertTrue(
          value.errorMessages().isEmpty(),
          shipped + ": " + value.name() + " " + value.errorMessages());
    }
    new OutboxSourceConfig(shipped.config()); // throws ConfigException on a cross-field problem
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("shippedConfigs")
  void takesThePasswordFromAConfigProviderOfItsWorker(Shipped shipped) {
    String password = shipped.config().get("connection.password");
    assertTrue(
        password != null && REFERENCE.matcher(password).matches(),
        shipped + ": connection.password must be a ${provider:...} reference, never a literal");
    for (String value : shipped.config().values()) {
      Matcher m = REFERENCE.matcher(value);
      while (m.find()) {
        assertTrue(
            shipped.workerProviders().contains(m.group(1)),
            shipped
                + " uses config provider '"
                + m.group(1)
                + "' that its worker does not declare: "
                + shipped.workerProviders());
      }
    }
  }

  @Test
  void envReferencesAreWithinTheWorkersAllowList() {
    for (String worker :
        List.of("config/connect-worker.properties", "docker/connect-worker.properties")) {
      Pattern allowed =
          Pattern.compile(
              RepoFiles.properties(worker)
                  .getProperty("config.providers.env.param.allowlist.pattern"));
      for (String file :
          List.of(
              "config/local-connector.json",
              "config/production-connector.json",
              "config/exactly-once-connector.json")) {
        Matcher m = Pattern.compile("\\$\\{env:([^}:]+)}").matcher(RepoFiles.read(file));
        while (m.find()) {
          assertTrue(
              allowed.matcher(m.group(1)).matches(),
              file + " reads ${env:" + m.group(1) + "} which " + worker + " does not allow");
        }
      }
    }
  }

  /**
   * The exactly-once examples are the production connector in exactly-once mode: the guarantee,
   * Connect's requirement (so that a worker without exactly-once support refuses the connector), no
   * more tasks than buckets, and otherwise the same settings as their at-least-once originals.
   */
  @Test
  void theExactlyOnceExamplesAreTheProductionConnectorInExactlyOnceMode() {
    Map<String, String> production = restConfig("config/production-connector.json");
    Map<String, Map<String, String>> exactlyOnce = new LinkedHashMap<>();
    exactlyOnce.put(
        "config/exactly-once-connector.json", restConfig("config/exactly-once-connector.json"));
    Map<String, String> manifest = new LinkedHashMap<>();
    shippedConfigs()
        .filter(s -> s.file().equals("manifests/kafka-connector-exactly-once.yaml"))
        .forEach(s -> manifest.putAll(s.config()));
    exactlyOnce.put("manifests/kafka-connector-exactly-once.yaml", manifest);
    Map<String, String> strimziProduction = new LinkedHashMap<>();
    shippedConfigs()
        .filter(s -> s.file().equals("manifests/kafka-connector.yaml"))
        .forEach(s -> strimziProduction.putAll(s.config()));
    Set<String> modeKeys =
        Set.of(
            "delivery.guarantee",
            "exactly.once.support",
            "exactly.once.buckets",
            "transaction.boundary");
    exactlyOnce.forEach(
        (file, config) -> {
          assertEquals("exactly-once", config.get("delivery.guarantee"), file);
          assertEquals("required", config.get("exactly.once.support"), file);
          assertTrue(
              Integer.parseInt(config.get("tasks.max"))
                  <= Integer.parseInt(config.get("exactly.once.buckets")),
              file + ": the connector starts at most exactly.once.buckets tasks");
          Map<String, String> rest = new LinkedHashMap<>(config);
          rest.keySet().removeAll(modeKeys);
          Map<String, String> original =
              file.startsWith("config/") ? production : strimziProduction;
          assertEquals(original, rest, file + " differs from its original beyond the mode");
        });
  }

  @Test
  void localConnectorIsTheMinimalOneTheDemoExpects() {
    Map<String, String> local = restConfig("config/local-connector.json");
    assertEquals(DemoRows.OWNED_KEY, local.get("instance.keys"));
    assertEquals("org.apache.kafka.connect.storage.StringConverter", local.get("key.converter"));
    assertEquals(
        "org.apache.kafka.connect.converters.ByteArrayConverter", local.get("value.converter"));
    Map<String, ConfigDef.ConfigKey> keys = OutboxSourceConfig.configDef().configKeys();
    for (String key : local.keySet()) {
      // Credentials default to null (none); any other key with a default is tuning.
      ConfigDef.ConfigKey k = keys.get(key);
      if (k != null && k.hasDefault() && k.defaultValue != null) {
        fail("config/local-connector.json should stay minimal but sets defaulted " + key);
      }
    }
  }
}
