package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.junit.jupiter.api.Test;

/**
 * docker/ and manifests/ cannot be run here (no Docker, no Kubernetes), so every fact they rely on
 * is checked: files they copy exist, paths agree between the files, versions match the build's
 * Kafka version, ports stay on loopback, and secrets flow through config providers.
 */
class DeploymentFilesTest {
  private static final Dockerfile DOCKERFILE =
      Dockerfile.parse(RepoFiles.read("docker/Dockerfile"));
  private static final JsonNode COMPOSE = RepoFiles.yaml("docker/docker-compose.yml");

  /** What `mvn -Pdemo-image package` leaves in the build stage's /src, per COPY --from=build. */
  /** The JMX exporter agent that local-stack/pom.xml copies (execution metrics-agent). */
  private static final String AGENT_BUILD_OUTPUT =
      "/src/local-stack/target/agents/jmx_prometheus_javaagent.jar";

  private static final Map<String, String> BUILD_OUTPUTS =
      Map.of(
          "/src/connector/target/plugin/",
          "connector/pom.xml",
          "/src/local-stack/target/demo-lib/",
          "local-stack/pom.xml",
          "/src/local-stack/target/classes/",
          "local-stack/pom.xml",
          AGENT_BUILD_OUTPUT,
          "local-stack/pom.xml");

  private static final Pattern JAVAAGENT =
      Pattern.compile("-javaagent:(\\S+\\.jar)=(?:([^:\\s]+):)?(\\d+):(\\S+)");

  /**
   * {@code kubectl apply -f manifests/} (not recursive) is safe: it creates at most one connector
   * per instance key (the exactly-once variant of the same keys lives in a folder of its own, and
   * both at once split the keys' rows between two connectors), and no Secret, whose placeholder
   * password would overwrite the one a secret store made.
   */
  @Test
  void applyingTheManifestsFolderCreatesOneConnectorPerInstanceKeyAndNoSecret() throws Exception {
    Map<String, String> connectorOfKey = new HashMap<>();
    List<Path> files;
    try (var listed = Files.list(RepoFiles.file("manifests"))) {
      files = listed.filter(f -> f.toString().endsWith(".yaml")).sorted().toList();
    }
    assertFalse(files.isEmpty());
    for (Path file : files) {
      for (JsonNode doc : RepoFiles.yamlDocuments("manifests/" + file.getFileName())) {
        String kind = doc.path("kind").asText();
        assertFalse(kind.equals("Secret"), file + " applies a Secret");
        if (kind.equals("KafkaConnector")) {
          String name = doc.path("metadata").path("name").asText();
          for (String key :
              doc.path("spec").path("config").path("instance.keys").asText().split(",")) {
            String other = connectorOfKey.put(key.trim(), name);
            assertTrue(other == null, key + " owned by " + other + " and " + name);
          }
        }
      }
    }
    assertFalse(connectorOfKey.isEmpty(), "a connector is applied");
    // The exactly-once variant owns the same keys: it must stay out of the folder's top level.
    JsonNode exactlyOnce =
        RepoFiles.yaml("manifests/exactly-once/kafka-connector-exactly-once.yaml");
    assertTrue(
        connectorOfKey.containsKey(
            exactlyOnce.path("spec").path("config").path("instance.keys").asText().split(",")[0]));
  }

  /**
   * The image's file config provider may read one directory, which must exist or the worker does
   * not start: the Connect stage creates it.
   */
  @Test
  void theImageCreatesTheOnlyDirectoryItsFileProviderMayRead() {
    String allowed =
        RepoFiles.properties("docker/connect-worker.properties")
            .getProperty("config.providers.file.param.allowed.paths");
    assertTrue(allowed != null && allowed.startsWith("/"), "the file provider is restricted");
    Dockerfile.Stage connect = DOCKERFILE.stages().get(DOCKERFILE.stages().size() - 1);
    assertTrue(
        connect.copies().stream()
            .anyMatch(
                c ->
                    c.destination().replaceAll("/$", "").equals(allowed)
                        || c.destination()
                            .equals(allowed + "/" + Path.of(c.destination()).getFileName())),
        "the Connect stage creates " + allowed);
  }

  /**
   * The images that run (the demo client, Connect) say which user they run as, and it is not root:
   * the demo's base image runs as root, and Connect's user would change with a USER root added to
   * the stage for a RUN. The demo's state directory (its launcher log) is one that user may create.
   */
  @Test
  void theImagesThatRunDoSoAsAUserThatIsNotRoot() {
    for (String name : List.of("demo", "connect")) {
      List<String> users = DOCKERFILE.stage(name).instructions("USER");
      assertFalse(users.isEmpty(), "stage " + name + " names its user");
      String user = users.get(users.size() - 1);
      assertFalse(
          user.equals("root")
              || user.equals("0")
              || user.startsWith("0:")
              || user.startsWith("root:"),
          "stage " + name + " runs as " + user);
    }
    // The demo writes its launcher log under its state directory: one its user may create.
    assertTrue(
        DOCKERFILE.stage("demo").instructions("ENV").stream()
            .anyMatch(e -> e.startsWith("LOCAL_STACK_HOME=/tmp/")),
        "the demo's state directory is one its user may create");
  }

  /**
   * A stage that runs copies files from the context, never a directory: a directory copies what an
   * adopter put there too (a secret in docker/secrets/, meant to be mounted, went into an image
   * layer). Such secrets and compose's environment files stay out of the context and of git.
   */
  @Test
  void theImagesBakeInNoDirectoryOfTheContextNorItsSecrets() {
    for (String name : List.of("demo", "connect")) {
      for (Dockerfile.Copy copy : DOCKERFILE.stage(name).copies()) {
        if (copy.from() == null) {
          for (String source : copy.sources()) {
            assertTrue(
                Files.isRegularFile(RepoFiles.file(source)),
                "stage " + name + " copies " + source + ", which is no single file");
          }
        }
      }
    }
    String ignore = RepoFiles.read("docker/Dockerfile.dockerignore");
    String git = RepoFiles.read(".gitignore");
    for (String ignored : List.of("docker/secrets/*", "!docker/secrets/README.md")) {
      assertTrue(ignore.lines().anyMatch(ignored::equals), "dockerignore: " + ignored);
      assertTrue(git.lines().anyMatch(ignored::equals), ".gitignore: " + ignored);
    }
    assertTrue(ignore.lines().anyMatch("**/.env"::equals), "dockerignore: **/.env");
  }

  /**
   * The plugin's archive ships docker/'s files by name: copied whole, the directory carried what an
   * adopter put in docker/secrets/ to mount, and compose's .env files, into the release zip. Every
   * other file of docker/ is named, so none is left out of doc/.
   */
  @Test
  void thePluginArchiveShipsDockersFilesByNameAndNoSecret() throws Exception {
    org.w3c.dom.Document assembly =
        javax.xml.parsers.DocumentBuilderFactory.newInstance()
            .newDocumentBuilder()
            .parse(RepoFiles.file("connector/src/assembly/plugin.xml").toFile());
    org.w3c.dom.NodeList fileSets = assembly.getElementsByTagName("fileSet");
    List<String> included = null;
    for (int i = 0; i < fileSets.getLength(); i++) {
      org.w3c.dom.Element fileSet = (org.w3c.dom.Element) fileSets.item(i);
      if (fileSet.getElementsByTagName("directory").item(0).getTextContent().equals("../docker")) {
        included = new ArrayList<>();
        org.w3c.dom.NodeList includes = fileSet.getElementsByTagName("include");
        for (int j = 0; j < includes.getLength(); j++) {
          included.add(includes.item(j).getTextContent().strip());
        }
      }
    }
    assertTrue(included != null && !included.isEmpty(), "docker/ is shipped by name");
    // The files git tracks there (a developer's untracked ones are no file of the project).
    Process git =
        new ProcessBuilder("git", "ls-files", ".")
            .directory(RepoFiles.file("docker").toFile())
            .redirectErrorStream(true)
            .start();
    List<String> tracked = new String(git.getInputStream().readAllBytes()).lines().toList();
    assertEquals(0, git.waitFor(), "git ls-files: " + tracked);
    assertTrue(tracked.contains("Dockerfile"), tracked.toString());
    assertEquals(new TreeSet<>(tracked), new TreeSet<>(included));
  }

  @Test
  void everyFileTheDockerfileCopiesFromTheContextExists() {
    for (Dockerfile.Stage stage : DOCKERFILE.stages()) {
      for (Dockerfile.Copy copy : stage.copies()) {
        if (copy.from() == null) {
          for (String source : copy.sources()) {
            assertTrue(
                source.equals(".") || Files.exists(RepoFiles.file(source)),
                "docker/Dockerfile copies " + source + ", which does not exist");
          }
        }
      }
    }
  }

  @Test
  void everyBuildOutputTheDockerfileCopiesIsProducedByTheBuild() {
    assertTrue(
        DOCKERFILE.stage("build").instructions("RUN").get(0).contains("-Pdemo-image package"));
    assertTrue(RepoFiles.read("local-stack/pom.xml").contains("<id>demo-image</id>"));
    assertTrue(
        RepoFiles.read("local-stack/pom.xml")
            .contains("<outputDirectory>${project.build.directory}/demo-lib</outputDirectory>"));
    assertTrue(RepoFiles.read("connector/pom.xml").contains("<finalName>plugin</finalName>"));
    for (Dockerfile.Stage stage : DOCKERFILE.stages()) {
      for (Dockerfile.Copy copy : stage.copies()) {
        if ("build".equals(copy.from())) {
          for (String source : copy.sources()) {
            assertTrue(
                BUILD_OUTPUTS.containsKey(source),
                "docker/Dockerfile copies " + source + " from the build; nothing here makes it");
          }
        }
      }
    }
  }

  /**
   * The agent the image copies is the file every build writes (this module's own build wrote it
   * before the tests ran), and the exporter version is the one whose rule engine checks the rules
   * (connector/'s PrometheusExportTest).
   */
  @Test
  void theMetricsAgentTheImageCopiesIsWhatTheBuildWrites() {
    String pom = RepoFiles.read("local-stack/pom.xml");
    assertTrue(pom.contains("<artifactId>jmx_prometheus_javaagent</artifactId>"));
    assertTrue(pom.contains("<destFileName>jmx_prometheus_javaagent.jar</destFileName>"));
    assertTrue(
        pom.contains("<outputDirectory>${project.build.directory}/agents</outputDirectory>"));
    assertTrue(
        Files.isRegularFile(RepoFiles.file(AGENT_BUILD_OUTPUT.substring("/src/".length()))),
        AGENT_BUILD_OUTPUT + " was not written by this build");
    Matcher agent =
        Pattern.compile("<jmx.exporter.version>([^<]+)</jmx.exporter.version>").matcher(pom);
    Matcher collector =
        Pattern.compile(
                "<artifactId>collector</artifactId>\\s*<version>([^<]+)</version>", Pattern.DOTALL)
            .matcher(RepoFiles.read("connector/pom.xml"));
    assertTrue(agent.find(), "local-stack/pom.xml names the agent's version");
    assertTrue(
        collector.find(), "connector/pom.xml tests the rules with io.prometheus.jmx:collector");
    assertEquals(collector.group(1), agent.group(1), "the agent runs the rules the tests check");
  }

  @Test
  void theConnectImageRunsTheJmxExporterAgentWithTheRelaysRulesOnPort9404() {
    Dockerfile.Stage connect = DOCKERFILE.stage("connect");
    Map<String, String> copied = new HashMap<>();
    connect.copies().forEach(c -> c.sources().forEach(s -> copied.put(s, c.destination())));
    String kafkaOpts =
        connect.instructions("ENV").stream()
            .filter(e -> e.startsWith("KAFKA_OPTS="))
            .map(e -> e.substring("KAFKA_OPTS=".length()).replaceAll("^\"|\"$", ""))
            .findFirst()
            .orElseThrow(() -> new AssertionError("the connect stage sets no KAFKA_OPTS"));
    Matcher agent = JAVAAGENT.matcher(kafkaOpts);
    assertTrue(agent.matches(), kafkaOpts);
    assertEquals(copied.get(AGENT_BUILD_OUTPUT), agent.group(1), "the agent is the copied jar");
    assertEquals(
        copied.get("config/metrics/jmx-exporter.yml"), agent.group(4), "the rules are the copy");
    assertEquals("9404", agent.group(3));
    assertTrue(agent.group(2) == null, "all interfaces of the container: compose maps the port");
    assertFalse(agent.group(1).startsWith("/opt/kafka/libs/"), "the agent is not a library");
    assertFalse(
        agent.group(1).startsWith(stripSlash(copied.get("/src/connector/target/plugin/"))),
        "the agent is not a plugin");
    assertTrue(
        List.of(connect.instructions("EXPOSE").get(0).split("\\s+")).contains("9404"),
        connect.instructions("EXPOSE").toString());
    List<String> ports = new ArrayList<>();
    COMPOSE.path("services").path("connect").path("ports").forEach(p -> ports.add(p.asText()));
    assertTrue(ports.contains("127.0.0.1:9404:9404"), ports.toString());
  }

  @Test
  void theConnectImageIsApacheKafkaOfTheProjectsKafkaVersion() {
    Dockerfile.Stage connect = DOCKERFILE.stage("connect");
    assertEquals("apache/kafka:" + RepoFiles.kafkaVersion(), DOCKERFILE.baseImage(connect));
    assertEquals(
        connect,
        DOCKERFILE.stages().get(DOCKERFILE.stages().size() - 1),
        "the Connect image is the default (last) stage");
  }

  @Test
  void theConnectImageRunsTheWorkerConfigItCopiesWithThePluginOnPluginPath() {
    Dockerfile.Stage connect = DOCKERFILE.stage("connect");
    Map<String, String> copied = new HashMap<>();
    connect.copies().forEach(c -> c.sources().forEach(s -> copied.put(s, c.destination())));
    String workerConfig = copied.get("docker/connect-worker.properties");
    assertTrue(
        connect.instructions("CMD").get(0).contains("connect-distributed.sh\", \"" + workerConfig),
        "CMD runs connect-distributed.sh with " + workerConfig);
    Properties worker = RepoFiles.properties("docker/connect-worker.properties");
    assertEquals(
        stripSlash(copied.get("/src/connector/target/plugin/")),
        stripSlash(worker.getProperty("plugin.path")));
  }

  @Test
  void composeBuildsItsImagesFromThisDockerfileAndItsStages() {
    Set<String> stageNames = new TreeSet<>();
    DOCKERFILE.stages().forEach(s -> stageNames.add(s.name()));
    Path composeDir = RepoFiles.file("docker");
    int built = 0;
    for (JsonNode service : COMPOSE.path("services")) {
      JsonNode build = service.path("build");
      if (build.isMissingNode()) {
        continue;
      }
      built++;
      Path context = composeDir.resolve(build.path("context").asText()).normalize();
      assertEquals(RepoFiles.root(), context, "the build context is the repository root");
      assertTrue(Files.isRegularFile(context.resolve(build.path("dockerfile").asText())));
      assertTrue(stageNames.contains(build.path("target").asText()), build.toString());
    }
    assertEquals(2, built);
  }

  @Test
  void composeRunsKafkaOfTheProjectsVersionAndPublishesOnLoopbackOnly() {
    assertEquals(
        "apache/kafka:" + RepoFiles.kafkaVersion(),
        COMPOSE.path("services").path("kafka").path("image").asText());
    for (JsonNode service : COMPOSE.path("services")) {
      for (JsonNode port : service.path("ports")) {
        assertTrue(port.asText().startsWith("127.0.0.1:"), "published off loopback: " + port);
      }
    }
  }

  @Test
  void composeDemoRegistersTheFileTheImageShipsAgainstTheComposeServices() {
    JsonNode services = COMPOSE.path("services");
    Map<String, String> flags = new HashMap<>();
    for (JsonNode arg : services.path("demo").path("command")) {
      String[] kv = arg.asText().replaceFirst("^--", "").split("=", 2);
      flags.put(kv[0], kv[1]);
    }
    String connectorConfig = flags.get("connector-config");
    boolean shipped =
        DOCKERFILE.stage("demo").copies().stream()
            .anyMatch(
                c ->
                    c.destination().equals(connectorConfig)
                        && c.sources().contains("config/local-connector.json"));
    assertTrue(shipped, "the demo image ships " + connectorConfig);
    String brokerInternal =
        services.path("kafka").path("environment").path("KAFKA_ADVERTISED_LISTENERS").asText();
    assertTrue(brokerInternal.contains("//" + flags.get("bootstrap-servers")));
    assertEquals(
        flags.get("bootstrap-servers"),
        RepoFiles.properties("docker/connect-worker.properties").getProperty("bootstrap.servers"));
    assertTrue(flags.get("jdbc-url").contains("//postgres:5432/"));
    assertTrue(
        flags
            .get("jdbc-url")
            .endsWith(
                "/" + services.path("postgres").path("environment").path("POSTGRES_DB").asText()));
    assertTrue(flags.get("connect-url").startsWith("http://connect:"));
  }

  @Test
  void composeGivesConnectThePasswordTheConnectorConfigReadsFromItsEnvironment() {
    assertTrue(RepoFiles.read("config/local-connector.json").contains("${env:OUTBOX_DB_PASSWORD}"));
    JsonNode services = COMPOSE.path("services");
    String postgres =
        services.path("postgres").path("environment").path("POSTGRES_PASSWORD").asText();
    assertEquals(
        postgres, services.path("connect").path("environment").path("OUTBOX_DB_PASSWORD").asText());
    assertEquals(
        postgres,
        services.path("demo").path("environment").path(StackOptions.DB_PASSWORD_ENV).asText());
    assertTrue(
        services.path("demo").path("environment").path("OUTBOX_DB_PASSWORD").isMissingNode());
  }

  @Test
  void dockerIgnoreKeepsBuildOutputAndLocalStateOutOfTheContext() {
    String ignore = RepoFiles.read("docker/Dockerfile.dockerignore");
    assertTrue(ignore.contains("**/target/"));
    assertTrue(ignore.contains(".local-stack/"));
  }

  @Test
  void bothWorkerConfigsAgreeExceptOnAddressesAndPaths() {
    Properties local = RepoFiles.properties("config/connect-worker.properties");
    Properties image = RepoFiles.properties("docker/connect-worker.properties");
    Set<String> placeSpecific =
        Set.of("bootstrap.servers", "listeners", "rest.advertised.host.name", "plugin.path");
    assertEquals(
        new TreeSet<>(local.stringPropertyNames()), new TreeSet<>(image.stringPropertyNames()));
    for (String key : local.stringPropertyNames()) {
      if (!placeSpecific.contains(key)) {
        assertEquals(local.getProperty(key), image.getProperty(key), key);
      }
    }
  }

  @Test
  void thePodMonitorScrapesBothConnectClustersAndTheRulesAreTheShippedAlerts() {
    List<JsonNode> monitoring = RepoFiles.yamlDocuments("manifests/monitoring.yaml");
    JsonNode podMonitor = monitoring.get(0);
    JsonNode rule = monitoring.get(1);
    assertEquals("PodMonitor", podMonitor.path("kind").asText());
    assertEquals("PrometheusRule", rule.path("kind").asText());
    JsonNode spec = podMonitor.path("spec");
    assertEquals(
        "KafkaConnect", spec.path("selector").path("matchLabels").path("strimzi.io/kind").asText());
    List<String> clusters = new ArrayList<>();
    spec.path("selector")
        .path("matchExpressions")
        .get(0)
        .path("values")
        .forEach(v -> clusters.add(v.asText()));
    for (String manifest :
        List.of(
            "manifests/kafka-connect.yaml",
            "manifests/exactly-once/kafka-connect-exactly-once.yaml")) {
      JsonNode connect = RepoFiles.yaml(manifest);
      assertTrue(
          clusters.contains(connect.path("metadata").path("name").asText()),
          manifest + " is scraped");
      assertEquals(
          connect.path("metadata").path("namespace").asText(),
          spec.path("namespaceSelector").path("matchNames").get(0).asText());
      assertTrue(connect.path("spec").has("metricsConfig"), manifest + " serves the metrics");
    }
    // Strimzi's name for the metrics port (9404) of its pods.
    assertEquals("tcp-prometheus", spec.path("podMetricsEndpoints").get(0).path("port").asText());
    assertEquals(
        RepoFiles.yaml("config/metrics/alerts.yml").path("groups"),
        rule.path("spec").path("groups"),
        "the PrometheusRule holds config/metrics/alerts.yml's groups as they are");
  }

  /**
   * No step an adopter copies puts a password on a command line: argv shows in ps, the shell keeps
   * it in its history, and a server logging DDL writes a CREATE ROLE ... PASSWORD whole.
   */
  @Test
  void noCopiedStepPutsAPasswordOnACommandLine() throws java.io.IOException {
    List<Path> files = new ArrayList<>();
    for (String dir : List.of("docs", "manifests", "config", "docker")) {
      try (java.util.stream.Stream<Path> walk = Files.walk(RepoFiles.file(dir))) {
        walk.filter(Files::isRegularFile).forEach(files::add);
      }
    }
    files.add(RepoFiles.file("README.md"));
    Pattern onACommandLine = Pattern.compile("PASSWORD '|--from-literal=password");
    for (Path file : files) {
      String text = Files.readString(file);
      assertFalse(onACommandLine.matcher(text).find(), () -> file + " puts a password in argv");
    }
  }

  @Test
  void strimziResourcesReferToEachOther() {
    JsonNode connect = RepoFiles.yaml("manifests/kafka-connect.yaml");
    JsonNode connector = RepoFiles.yaml("manifests/kafka-connector.yaml");
    JsonNode secret = RepoFiles.yaml("manifests/examples/secret.yaml");
    List<JsonNode> rbac = RepoFiles.yamlDocuments("manifests/rbac.yaml");
    String namespace = connect.path("metadata").path("namespace").asText();
    String connectName = connect.path("metadata").path("name").asText();
    String secretName = secret.path("metadata").path("name").asText();

    assertEquals(RepoFiles.kafkaVersion(), connect.path("spec").path("version").asText());
    assertEquals(
        "true",
        connect
            .path("metadata")
            .path("annotations")
            .path("strimzi.io/use-connector-resources")
            .asText());
    assertEquals(
        connectName, connector.path("metadata").path("labels").path("strimzi.io/cluster").asText());
    for (JsonNode resource : List.of(connector, secret, rbac.get(0), rbac.get(1))) {
      assertEquals(namespace, resource.path("metadata").path("namespace").asText());
    }

    JsonNode config = connect.path("spec").path("config");
    assertEquals("secrets", config.path("config.providers").asText());
    assertEquals(
        "io.strimzi.kafka.KubernetesSecretConfigProvider",
        config.path("config.providers.secrets.class").asText());

    // ${secrets:<namespace>/<secret>:<key>} must name this Secret and a key it holds.
    List<String> references = new ArrayList<>();
    connector
        .path("spec")
        .path("config")
        .forEach(
            v -> {
              if (v.asText().startsWith("${secrets:")) {
                references.add(v.asText());
              }
            });
    assertFalse(references.isEmpty());
    for (String reference : references) {
      String path = reference.substring("${secrets:".length(), reference.length() - 1);
      assertTrue(path.startsWith(namespace + "/" + secretName + ":"), reference);
      String key = path.substring(path.indexOf(':') + 1);
      assertTrue(secret.path("stringData").has(key), reference + " names a key the Secret lacks");
    }

    // sslmode=verify-full checks the server against the file sslrootcert names: the Connect
    // container must have it, from a Secret volume (else the driver looks for
    // ~/.postgresql/root.crt, which the image lacks, and every connection fails).
    String url = connector.path("spec").path("config").path("connection.url").asText();
    Matcher rootCert = Pattern.compile("[?&]sslrootcert=([^&]+)").matcher(url);
    assertTrue(url.contains("sslmode=verify-full") && rootCert.find(), url);
    JsonNode template = connect.path("spec").path("template");
    JsonNode mount = template.path("connectContainer").path("volumeMounts").get(0);
    assertTrue(
        rootCert.group(1).startsWith(mount.path("mountPath").asText() + "/"),
        rootCert.group(1) + " lies in no volume mounted into the Connect container");
    JsonNode volume = template.path("pod").path("volumes").get(0);
    assertEquals(mount.path("name").asText(), volume.path("name").asText());
    assertFalse(volume.path("secret").path("secretName").asText().isEmpty());
    assertFalse(url.contains("ApplicationName"), "the relay names its own sessions: " + url);
    // Strimzi's file provider refuses an allowed path that does not exist: every pod fails.
    assertEquals(
        mount.path("mountPath").asText(),
        config.path("config.providers.strimzifile.param.allowed.paths").asText());
    // Without requests the pods are the first evicted under memory pressure (BestEffort).
    JsonNode resources = connect.path("spec").path("resources");
    assertEquals(
        resources.path("limits").path("memory").asText(),
        resources.path("requests").path("memory").asText());
    assertFalse(resources.path("requests").path("memory").asText().isEmpty());

    // The provider reads through the Kubernetes API as the Connect pods' service account.
    JsonNode role = rbac.get(0);
    JsonNode binding = rbac.get(1);
    assertEquals("Role", role.path("kind").asText());
    assertEquals(secretName, role.path("rules").get(0).path("resourceNames").get(0).asText());
    assertEquals("get", role.path("rules").get(0).path("verbs").get(0).asText());
    assertEquals(
        role.path("metadata").path("name").asText(), binding.path("roleRef").path("name").asText());
    assertEquals(connectName + "-connect", binding.path("subjects").get(0).path("name").asText());
  }

  /**
   * The exactly-once KafkaConnect is kafka-connect.yaml with exactly-once source support, as a
   * Connect cluster of its own (group and internal topics), whose service account may read the
   * database Secret; its KafkaConnector runs on it.
   */
  @Test
  void theExactlyOnceConnectClusterIsTheSameClusterWithExactlyOnceSourceSupport() {
    ObjectNode atLeastOnce = (ObjectNode) RepoFiles.yaml("manifests/kafka-connect.yaml");
    ObjectNode exactlyOnce =
        (ObjectNode) RepoFiles.yaml("manifests/exactly-once/kafka-connect-exactly-once.yaml");
    JsonNode connector = RepoFiles.yaml("manifests/exactly-once/kafka-connector-exactly-once.yaml");
    String name = exactlyOnce.path("metadata").path("name").asText();
    JsonNode spec = exactlyOnce.path("spec");

    assertEquals(RepoFiles.kafkaVersion(), spec.path("version").asText());
    assertEquals("enabled", spec.path("config").path("exactly.once.source.support").asText());
    assertTrue(
        atLeastOnce.path("spec").path("config").path("exactly.once.source.support").isMissingNode(),
        "the at-least-once cluster keeps Connect's default");
    for (String own :
        List.of("groupId", "configStorageTopic", "offsetStorageTopic", "statusStorageTopic")) {
      assertFalse(
          spec.path(own).asText().equals(atLeastOnce.path("spec").path(own).asText()),
          own + " must differ from kafka-connect.yaml's: it is another Connect cluster");
    }
    assertEquals(
        name, connector.path("metadata").path("labels").path("strimzi.io/cluster").asText());
    assertEquals(
        atLeastOnce.path("metadata").path("namespace").asText(),
        connector.path("metadata").path("namespace").asText());

    // What Connect makes of it: Strimzi's fields plus spec.config (providers are Strimzi's jars).
    Map<String, String> worker = new HashMap<>();
    worker.put("bootstrap.servers", spec.path("bootstrapServers").asText());
    worker.put("group.id", spec.path("groupId").asText());
    worker.put("config.storage.topic", spec.path("configStorageTopic").asText());
    worker.put("offset.storage.topic", spec.path("offsetStorageTopic").asText());
    worker.put("status.storage.topic", spec.path("statusStorageTopic").asText());
    RepoFiles.stringMap(spec.path("config"))
        .forEach(
            (k, v) -> {
              if (!k.startsWith("config.providers")) {
                worker.put(k, v);
              }
            });
    assertTrue(new DistributedConfig(worker).exactlyOnceSourceEnabled());

    // Otherwise the same resource: the same Kafka, build, metrics and settings.
    for (ObjectNode resource : List.of(atLeastOnce, exactlyOnce)) {
      ((ObjectNode) resource.path("metadata")).remove("name");
      ((ObjectNode) resource.path("metadata").path("annotations")).removeAll();
      ObjectNode s = (ObjectNode) resource.path("spec");
      s.remove(
          List.of("groupId", "configStorageTopic", "offsetStorageTopic", "statusStorageTopic"));
      ((ObjectNode) s.path("config")).remove("exactly.once.source.support");
      ((ObjectNode) s.path("build").path("output")).remove("image");
    }
    assertEquals(atLeastOnce, exactlyOnce);

    List<String> accounts = new ArrayList<>();
    RepoFiles.yamlDocuments("manifests/rbac.yaml")
        .get(1)
        .path("subjects")
        .forEach(subject -> accounts.add(subject.path("name").asText()));
    assertTrue(accounts.contains(name + "-connect"), accounts.toString());
  }

  @Test
  void strimziBuildsThePluginZipThatTheConnectorModuleProduces() {
    JsonNode artifact =
        RepoFiles.yaml("manifests/kafka-connect.yaml")
            .path("spec")
            .path("build")
            .path("plugins")
            .get(0)
            .path("artifacts")
            .get(0);
    assertEquals("zip", artifact.path("type").asText());
    assertTrue(
        artifact.path("url").asText().matches(".*/outboxrelay-outbox-relay-connector-[^/]+\\.zip"));
    assertTrue(artifact.has("sha512sum"), "Strimzi should verify the download");
    assertTrue(
        RepoFiles.read("connector/pom.xml")
            .contains(
                "<plugin.name>outboxrelay-${project.artifactId}-${project.version}</plugin.name>"));
  }

  private static String stripSlash(String path) {
    return path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
  }
}
