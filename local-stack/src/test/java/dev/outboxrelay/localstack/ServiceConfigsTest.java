package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The broker and worker configs the launcher writes: loopback only, ports and paths of the run. */
class ServiceConfigsTest {
  private final StateDir state = new StateDir(Path.of("/tmp/stack-test"));
  private final StackPorts ports = new StackPorts(15432, 19092, 19093, 18083, 19404);

  @Test
  void theBrokerListensOnLoopbackOnlyInCombinedMode() {
    Properties p = new KafkaBroker(state, ports, null, null, SpawnGate.open()).serverProperties();
    assertEquals("broker,controller", p.getProperty("process.roles"));
    assertEquals("1@127.0.0.1:19093", p.getProperty("controller.quorum.voters"));
    assertEquals(
        "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093", p.getProperty("listeners"));
    assertEquals("PLAINTEXT://127.0.0.1:19092", p.getProperty("advertised.listeners"));
    assertEquals("/tmp/stack-test/kafka/data", p.getProperty("log.dirs"));
    assertEquals("1", p.getProperty("offsets.topic.replication.factor"));
  }

  @Test
  void theWorkerKeepsTheTemplateAndSetsOnlyAddressesAndPluginPath() {
    Properties template = RepoFiles.properties("config/connect-worker.properties");
    Properties p =
        new ConnectWorker(state, ports, null, null, SpawnGate.open())
            .workerProperties(template, Delivery.AT_LEAST_ONCE);
    assertEquals("127.0.0.1:19092", p.getProperty("bootstrap.servers"));
    assertEquals("http://127.0.0.1:18083", p.getProperty("listeners"));
    assertEquals("18083", p.getProperty("rest.advertised.port"));
    assertEquals("/tmp/stack-test/plugins", p.getProperty("plugin.path"));
    // The template's /opt/kafka/secrets need not exist here: a missing allowed path stops the
    // worker.
    assertEquals(
        "/tmp/stack-test/secrets",
        p.getProperty(ConnectWorker.FILE_PROVIDER_PATHS),
        "the run's own");
    for (String key : template.stringPropertyNames()) {
      if (!key.startsWith("rest.advertised.")
          && !key.equals("bootstrap.servers")
          && !key.equals("listeners")
          && !key.equals("plugin.path")
          && !key.equals(ConnectWorker.FILE_PROVIDER_PATHS)) {
        assertEquals(template.getProperty(key), p.getProperty(key), key);
      }
    }
    assertTrue(p.getProperty("config.providers").contains("env"));
    assertEquals(null, p.getProperty("exactly.once.source.support"), "the default worker's");
  }

  @Test
  void anExactlyOnceWorkerIsTheSameWorkerWithExactlyOnceSourceSupport() {
    Properties template = RepoFiles.properties("config/connect-worker.properties");
    ConnectWorker worker = new ConnectWorker(state, ports, null, null, SpawnGate.open());
    Properties atLeastOnce = worker.workerProperties(template, Delivery.AT_LEAST_ONCE);
    Properties exactlyOnce = worker.workerProperties(template, Delivery.EXACTLY_ONCE);
    assertEquals("enabled", exactlyOnce.getProperty("exactly.once.source.support"));
    exactlyOnce.remove("exactly.once.source.support");
    assertEquals(atLeastOnce, exactlyOnce, "nothing else differs");
  }

  /**
   * Exactly-once workers need the transaction state log, which one broker can only hold at RF 1.
   */
  @Test
  void theBrokerCanHoldTheTransactionStateLogOfAnExactlyOnceWorker() {
    Properties p = new KafkaBroker(state, ports, null, null, SpawnGate.open()).serverProperties();
    assertEquals("1", p.getProperty("transaction.state.log.replication.factor"));
    assertEquals("1", p.getProperty("transaction.state.log.min.isr"));
  }

  @Test
  void inExactlyOnceModeRegistrationAddsTheGuaranteeAndConnectsRequirementToTheFile() {
    var atLeastOnce = ConnectRest.JSON.createObjectNode();
    var exactlyOnce = ConnectRest.JSON.createObjectNode();
    Path file = RepoFiles.file("config/local-connector.json");
    String url = "jdbc:postgresql://127.0.0.1:25432/outbox";
    ConnectorRegistration.prepare(file, url, "app", Delivery.AT_LEAST_ONCE, atLeastOnce);
    ConnectorRegistration.prepare(file, url, "app", Delivery.EXACTLY_ONCE, exactlyOnce);
    assertFalse(atLeastOnce.has("delivery.guarantee"), "the default mode registers the file as is");
    assertFalse(atLeastOnce.has("exactly.once.support"));
    assertEquals("exactly-once", exactlyOnce.path("delivery.guarantee").asText());
    assertEquals("required", exactlyOnce.path("exactly.once.support").asText());
    exactlyOnce.remove(List.of("delivery.guarantee", "exactly.once.support"));
    assertEquals(atLeastOnce, exactlyOnce, "nothing else differs");
  }

  @Test
  void theDemoConsumerReadsCommittedRecordsOnlyInExactlyOnceMode() {
    Properties atLeastOnce =
        new DemoConsumer("127.0.0.1:19092", Delivery.AT_LEAST_ONCE, null).consumerProperties("r1");
    Properties exactlyOnce =
        new DemoConsumer("127.0.0.1:19092", Delivery.EXACTLY_ONCE, null).consumerProperties("r1");
    assertEquals(null, atLeastOnce.getProperty("isolation.level"), "Kafka's default, as before");
    assertEquals("read_committed", exactlyOnce.getProperty("isolation.level"));
    exactlyOnce.remove("isolation.level");
    assertEquals(atLeastOnce, exactlyOnce, "nothing else differs");
  }

  @Test
  void theWorkerRunsTheJmxExporterAgentOnLoopbackWithTheRelaysRules() {
    ConnectWorker.MetricsAgent agent =
        new ConnectWorker.MetricsAgent(
            Path.of("/tmp/stack-test/agents/jmx_prometheus_javaagent.jar"),
            Path.of("/tmp/stack-test/config/jmx-exporter.yml"));
    assertEquals(
        "-javaagent:/tmp/stack-test/agents/jmx_prometheus_javaagent.jar=127.0.0.1:19404:"
            + "/tmp/stack-test/config/jmx-exporter.yml",
        agent.jvmOption(ports.metrics()));
  }

  /**
   * The build copies the agent next to the classpaths (generate-resources ran before the tests).
   */
  @Test
  void theBuildCopiesTheAgentAndKeepsItOffBothClasspaths() throws Exception {
    Path jar = RepoFiles.file("local-stack/target/agents/jmx_prometheus_javaagent.jar");
    try (JarFile agent = new JarFile(jar.toFile())) {
      Attributes manifest = agent.getManifest().getMainAttributes();
      assertEquals("io.prometheus.jmx.JavaAgent", manifest.getValue("Premain-Class"));
    }
    for (String classpath : List.of("kafka.classpath", "launcher.classpath")) {
      String entries = Files.readString(RepoFiles.file("local-stack/target/" + classpath));
      assertFalse(entries.contains("jmx_prometheus"), classpath + " holds the agent");
    }
  }

  /**
   * A connector file that is not valid JSON is named with where it fails, not with Jackson's
   * message, which quotes the file's text there (a secret written into it included).
   */
  @Test
  void aConnectorFileThatIsNotJsonIsNotQuoted(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("connector.json");
    Files.writeString(file, "{\"name\": \"x\", \"config\": {\"connection.password\": SENTINEL}}");

    StackException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            StackException.class,
            () ->
                ConnectorRegistration.prepare(
                    file,
                    "jdbc:postgresql://127.0.0.1:25432/outbox",
                    "app",
                    Delivery.AT_LEAST_ONCE,
                    ConnectRest.JSON.createObjectNode()));
    assertTrue(e.getMessage().contains("not valid JSON at line 1"), e.getMessage());
    for (Throwable t = e; t != null; t = t.getCause()) {
      assertFalse(String.valueOf(t.getMessage()).contains("SENTINEL"), t.getMessage());
    }
  }

  @Test
  void registrationFillsInTheConnectionOfTheRunAndKeepsThePasswordReference() {
    var config = ConnectRest.JSON.createObjectNode();
    ConnectorRegistration.Registered registered =
        ConnectorRegistration.prepare(
            RepoFiles.file("config/local-connector.json"),
            "jdbc:postgresql://127.0.0.1:25432/outbox",
            "app",
            Delivery.AT_LEAST_ONCE,
            config);
    assertEquals("outbox-relay-local", registered.name());
    assertEquals(List.of("orders-eu"), registered.instanceKeys());
    assertEquals(
        "jdbc:postgresql://127.0.0.1:25432/outbox", config.path("connection.url").asText());
    assertEquals("app", config.path("connection.user").asText());
    assertEquals("${env:OUTBOX_DB_PASSWORD}", config.path("connection.password").asText());
    assertEquals(
        "5000",
        config.path("metrics.backlog.interval.ms").asText(),
        "the stack refreshes the backlog figures every 5 s, not the default 30 s");
  }

  @Test
  void aBacklogIntervalTheFileSetsIsKept(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("connector.json");
    Files.writeString(
        file,
        "{\"name\": \"c\", \"config\": {\"instance.keys\": \"k\","
            + " \"metrics.backlog.interval.ms\": \"60000\"}}");
    var config = ConnectRest.JSON.createObjectNode();
    ConnectorRegistration.prepare(
        file, "jdbc:postgresql://127.0.0.1:1/x", "app", Delivery.AT_LEAST_ONCE, config);
    assertEquals("60000", config.path("metrics.backlog.interval.ms").asText());
  }
}
