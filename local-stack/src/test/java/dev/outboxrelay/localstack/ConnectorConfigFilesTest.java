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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every connector config this repository ships passes the connector's own validation, uses only
 * keys that exist, and takes its password from a config provider the worker it is meant for has.
 */
class ConnectorConfigFilesTest {
  private static final Pattern REFERENCE = Pattern.compile("\\$\\{([a-z]+):([^}]*)}");

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
            "manifests/exactly-once/kafka-connector-exactly-once.yaml",
            "manifests/exactly-once/kafka-connect-exactly-once.yaml"));
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
    Set<String> problems = ConnectorConfigKeys.problems(shipped.config());
    assertTrue(problems.isEmpty(), shipped + " has keys Connect would ignore: " + problems);
  }

  /** A key the check must accept or reject, in a config with some context keys. */
  record KeyCase(String name, Map<String, String> config, String key, String rejected) {
    @Override
    public String toString() {
      return name;
    }
  }

  private static KeyCase keyCase(String name, String key, String... context) {
    Map<String, String> config = new LinkedHashMap<>();
    config.put("connector.class", ConnectWorker.CONNECTOR_CLASS);
    config.put("tasks.max", "1");
    for (String entry : context) {
      String[] kv = entry.split("=", 2);
      config.put(kv[0], kv[1]);
    }
    config.putIfAbsent(key, "1");
    return new KeyCase(name, config, key, key);
  }

  /** An alias whose type key is misspelled: Connect has no type for it. */
  private static KeyCase missingType(String family) {
    KeyCase c = keyCase(family + " without type", family + ".x.typ", family + "=x");
    return new KeyCase(c.name(), c.config(), c.key(), family + ".x.type");
  }

  private static final String ROUTE =
      "transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter";
  private static final String IS_DLQ =
      "predicates.isDlq.type=org.apache.kafka.connect.transforms.predicates.TopicNameMatches";

  /** A typo for each rule; correctKeys() has the keys they misspell. */
  static Stream<KeyCase> typos() {
    return Stream.of(
        keyCase("producer override", "producer.override.lingr.ms"),
        keyCase("consumer override", "consumer.override.isolaton.level"),
        keyCase("admin override", "admin.override.request.timout.ms"),
        keyCase("errors key", "errors.tolerence"),
        keyCase("sink-only errors key", "errors.deadletterqueue.topic.name"),
        keyCase("exactly-once key", "exactly.once.suport"),
        keyCase("transaction boundary", "transaction.boundry"),
        keyCase("offsets topic", "offsets.storage.topc"),
        keyCase("topic creation groups", "topic.creation.group"),
        keyCase("topic config", "topic.creation.default.min.insync.replica"),
        keyCase("topic creation key", "topic.creation.default.replication.factr"),
        keyCase("undeclared topic creation group", "topic.creation.defualt.partitions"),
        keyCase("include of the default group", "topic.creation.default.include"),
        keyCase(
            "group topic config",
            "topic.creation.compact.cleanup.polcy",
            "topic.creation.groups=compact"),
        keyCase("converter key without converter", "value.converter.schemas.enable"),
        keyCase("unlisted transform alias", "transforms.rout.regex", "transforms=route", ROUTE),
        keyCase("transform config", "transforms.route.regx", "transforms=route", ROUTE),
        keyCase("transform framework key", "transforms.route.negte", "transforms=route", ROUTE),
        missingType("transforms"),
        keyCase(
            "unlisted transform predicate",
            "transforms.route.predicate",
            "transforms=route",
            ROUTE,
            "predicates=isDlq",
            IS_DLQ,
            "transforms.route.predicate=isDql"),
        keyCase("unlisted predicate alias", "predicates.isDql.pattern", "predicates=isDlq", IS_DLQ),
        keyCase("predicate config", "predicates.isDlq.patern", "predicates=isDlq", IS_DLQ),
        missingType("predicates"));
  }

  /** The same contexts with the correct keys: the check rejects the typo, not the family. */
  static Stream<KeyCase> correctKeys() {
    return Stream.of(
        keyCase("producer override", "producer.override.linger.ms"),
        keyCase("consumer override", "consumer.override.isolation.level"),
        keyCase("admin override", "admin.override.request.timeout.ms"),
        keyCase("errors key", "errors.tolerance"),
        keyCase("exactly-once key", "exactly.once.support"),
        keyCase("transaction boundary", "transaction.boundary"),
        keyCase("offsets topic", "offsets.storage.topic"),
        keyCase("topic creation groups", "topic.creation.groups"),
        keyCase("topic config", "topic.creation.default.min.insync.replicas"),
        keyCase("topic creation key", "topic.creation.default.replication.factor"),
        keyCase(
            "include of a declared group",
            "topic.creation.compact.include",
            "topic.creation.groups=compact"),
        keyCase(
            "group topic config",
            "topic.creation.compact.cleanup.policy",
            "topic.creation.groups=compact"),
        keyCase(
            "converter key with converter",
            "value.converter.schemas.enable",
            "value.converter=org.apache.kafka.connect.json.JsonConverter"),
        keyCase("transform config", "transforms.route.regex", "transforms=route", ROUTE),
        keyCase(
            "transform predicate",
            "transforms.route.predicate",
            "transforms=route",
            ROUTE,
            "predicates=isDlq",
            IS_DLQ,
            "transforms.route.predicate=isDlq"),
        keyCase("transform framework key", "transforms.route.negate", "transforms=route", ROUTE),
        keyCase("predicate config", "predicates.isDlq.pattern", "predicates=isDlq", IS_DLQ));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("typos")
  void rejectsATypoInEveryKeyFamily(KeyCase typo) {
    Set<String> problems = ConnectorConfigKeys.problems(typo.config());
    assertTrue(
        problems.stream().anyMatch(p -> p.startsWith(typo.rejected() + ":")),
        typo.rejected() + " must be rejected, problems: " + problems);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("correctKeys")
  void acceptsTheCorrectKeyOfEveryFamily(KeyCase correct) {
    assertEquals(Set.of(), ConnectorConfigKeys.problems(correct.config()), correct.key());
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

  /**
   * The file provider reads only under its allowed paths (else a connector config could read any
   * file of the worker), and every shipped {@code ${file:...}} reference lies within them.
   */
  @Test
  void fileReferencesAreWithinTheWorkersAllowedPaths() {
    int checked = 0;
    for (String worker :
        List.of("config/connect-worker.properties", "docker/connect-worker.properties")) {
      String allowed =
          RepoFiles.properties(worker).getProperty("config.providers.file.param.allowed.paths");
      assertTrue(allowed != null && !allowed.isBlank(), worker + " restricts the file provider");
      for (String file :
          List.of(
              "config/local-connector.json",
              "config/production-connector.json",
              "config/exactly-once-connector.json",
              "config/schema-registry-connector.json")) {
        Matcher m = Pattern.compile("\\$\\{file:([^}:]+):").matcher(RepoFiles.read(file));
        while (m.find()) {
          checked++;
          assertTrue(
              m.group(1).startsWith(allowed + "/"),
              file + " reads " + m.group(1) + " outside " + worker + "'s " + allowed);
        }
      }
    }
    assertTrue(checked > 0, "no ${file:...} reference checked");
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
        .filter(s -> s.file().equals("manifests/exactly-once/kafka-connector-exactly-once.yaml"))
        .forEach(s -> manifest.putAll(s.config()));
    exactlyOnce.put("manifests/exactly-once/kafka-connector-exactly-once.yaml", manifest);
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
