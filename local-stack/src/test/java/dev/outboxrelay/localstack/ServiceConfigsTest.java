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
        new ConnectWorker(state, ports, null, null, SpawnGate.open()).workerProperties(template);
    assertEquals("127.0.0.1:19092", p.getProperty("bootstrap.servers"));
    assertEquals("http://127.0.0.1:18083", p.getProperty("listeners"));
    assertEquals("18083", p.getProperty("rest.advertised.port"));
    assertEquals("/tmp/stack-test/plugins", p.getProperty("plugin.path"));
    for (String key : template.stringPropertyNames()) {
      if (!key.startsWith("rest.advertised.")
          && !key.equals("bootstrap.servers")
          && !key.equals("listeners")
          && !key.equals("plugin.path")) {
        assertEquals(template.getProperty(key), p.getProperty(key), key);
      }
    }
    assertTrue(p.getProperty("config.providers").contains("env"));
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

  @Test
  void registrationFillsInTheConnectionOfTheRunAndKeepsThePasswordReference() {
    var config = ConnectRest.JSON.createObjectNode();
    ConnectorRegistration.Registered registered =
        ConnectorRegistration.prepare(
            RepoFiles.file("config/local-connector.json"),
            "jdbc:postgresql://127.0.0.1:25432/outbox",
            "app",
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
    ConnectorRegistration.prepare(file, "jdbc:postgresql://127.0.0.1:1/x", "app", config);
    assertEquals("60000", config.path("metrics.backlog.interval.ms").asText());
  }
}
