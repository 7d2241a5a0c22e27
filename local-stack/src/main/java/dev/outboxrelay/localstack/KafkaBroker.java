package dev.outboxrelay.localstack;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;

/**
 * One KRaft node in combined mode (broker and controller), on loopback, as Kafka's own scripts
 * would run it: {@code StorageTool format}, then {@code kafka.Kafka server.properties}.
 */
final class KafkaBroker {
  private static final Duration FORMAT_TIMEOUT = Duration.ofSeconds(90);
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(120);

  private final StateDir state;
  private final StackPorts ports;
  private final KafkaProcesses kafka;
  private final Console console;
  private final SpawnGate gate;

  KafkaBroker(
      StateDir state, StackPorts ports, KafkaProcesses kafka, Console console, SpawnGate gate) {
    this.state = state;
    this.ports = ports;
    this.kafka = kafka;
    this.console = console;
    this.gate = gate;
  }

  Process start() {
    Path config = writeServerProperties();
    String clusterId = Uuid.randomUuid().toString();
    console.step("Kafka", "formatting KRaft storage (cluster id " + clusterId + ")");
    format(config, clusterId);
    console.step(
        "Kafka", "starting broker + controller on " + ports.bootstrapServers() + " (KRaft) ...");
    Process process =
        gate.spawn(
            () -> {
              Process p =
                  ProcessControl.startJava(
                      kafka.classpath(),
                      kafka.jvmOptions(Component.KAFKA),
                      "kafka.Kafka",
                      List.of(config.toString()),
                      Map.of(),
                      state.log(Component.KAFKA.id()),
                      state.root(),
                      true);
              return ProcessControl.recorded(p, () -> state.writePid(Component.KAFKA, p.pid()));
            });
    awaitReady(process);
    console.step("Kafka", "ready (pid " + process.pid() + ")");
    return process;
  }

  Properties serverProperties() {
    String controller = Ports.LOOPBACK + ":" + ports.controller();
    Properties p = new Properties();
    p.setProperty("process.roles", "broker,controller");
    p.setProperty("node.id", "1");
    p.setProperty("controller.quorum.voters", "1@" + controller);
    p.setProperty(
        "listeners", "PLAINTEXT://" + ports.bootstrapServers() + ",CONTROLLER://" + controller);
    p.setProperty("advertised.listeners", "PLAINTEXT://" + ports.bootstrapServers());
    p.setProperty("controller.listener.names", "CONTROLLER");
    p.setProperty("inter.broker.listener.name", "PLAINTEXT");
    p.setProperty("listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT");
    p.setProperty("log.dirs", state.kafkaDir().resolve("data").toString());
    // One node: every internal topic with replication factor 1, few partitions for a fast start.
    p.setProperty("offsets.topic.replication.factor", "1");
    p.setProperty("offsets.topic.num.partitions", "5");
    p.setProperty("transaction.state.log.replication.factor", "1");
    p.setProperty("transaction.state.log.min.isr", "1");
    p.setProperty("share.coordinator.state.topic.replication.factor", "1");
    p.setProperty("share.coordinator.state.topic.min.isr", "1");
    p.setProperty("group.initial.rebalance.delay.ms", "0");
    // Topics named by the connector's topic template appear on first use, with 3 partitions.
    p.setProperty("auto.create.topics.enable", "true");
    p.setProperty("num.partitions", "3");
    return p;
  }

  private Path writeServerProperties() {
    Path file = state.kafkaDir().resolve("server.properties");
    PropertiesFiles.write(
        file, serverProperties(), "KRaft broker + controller of the local stack (generated)");
    return file;
  }

  private void format(Path config, String clusterId) {
    Path log = state.log(Component.KAFKA.id());
    Process format =
        ProcessControl.startJava(
            kafka.classpath(),
            kafka.jvmOptions(Component.KAFKA),
            "kafka.tools.StorageTool",
            List.of("format", "-t", clusterId, "-c", config.toString()),
            Map.of(),
            log,
            state.root(),
            false);
    try {
      if (!format.waitFor(FORMAT_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
        format.destroyForcibly();
        throw new StackException("formatting the Kafka storage took over " + FORMAT_TIMEOUT);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      format.destroyForcibly();
      throw new StackException("interrupted while formatting the Kafka storage", e);
    }
    if (format.exitValue() != 0) {
      throw new StackException(
          "formatting the Kafka storage failed. Last lines of "
              + log
              + ":\n"
              + ProcessControl.tail(log, 20));
    }
  }

  private void awaitReady(Process process) {
    Properties admin = new Properties();
    admin.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, ports.bootstrapServers());
    admin.setProperty(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "3000");
    admin.setProperty(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000");
    admin.setProperty(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
    try (Admin client = Admin.create(admin)) {
      Waiter.until(
          "the Kafka broker answering on " + ports.bootstrapServers(),
          READY_TIMEOUT,
          () -> hasBroker(client),
          KafkaProcesses.aliveCheck(process, "Kafka", state.log(Component.KAFKA.id())));
    }
  }

  private static boolean hasBroker(Admin client) {
    try {
      return !client.describeCluster().nodes().get(5, TimeUnit.SECONDS).isEmpty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (Exception e) {
      return false;
    }
  }
}
