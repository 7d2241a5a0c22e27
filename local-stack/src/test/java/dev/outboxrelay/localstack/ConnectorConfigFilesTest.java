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
    JsonNode connector = RepoFiles.yaml("manifests/kafka-connector.yaml");
    JsonNode connect = RepoFiles.yaml("manifests/kafka-connect.yaml");
    Map<String, String> strimzi = new LinkedHashMap<>();
    strimzi.put("connector.class", connector.path("spec").path("class").asText());
    strimzi.put("tasks.max", connector.path("spec").path("tasksMax").asText());
    strimzi.putAll(RepoFiles.stringMap(connector.path("spec").path("config")));
    Set<String> strimziProviders =
        Set.of(connect.path("spec").path("config").path("config.providers").asText().split(","));
    return Stream.of(
        new Shipped(
            "config/local-connector.json", restConfig("config/local-connector.json"), localWorker),
        new Shipped(
            "config/production-connector.json",
            restConfig("config/production-connector.json"),
            imageWorker),
        new Shipped("manifests/kafka-connector.yaml", strimzi, strimziProviders));
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
          List.of("config/local-connector.json", "config/production-connector.json")) {
        Matcher m = Pattern.compile("\\$\\{env:([^}:]+)}").matcher(RepoFiles.read(file));
        while (m.find()) {
          assertTrue(
              allowed.matcher(m.group(1)).matches(),
              file + " reads ${env:" + m.group(1) + "} which " + worker + " does not allow");
        }
      }
    }
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
