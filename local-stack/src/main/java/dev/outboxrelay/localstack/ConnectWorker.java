package dev.outboxrelay.localstack;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.stream.Stream;

/**
 * A distributed Connect worker, {@code ConnectDistributed worker.properties}, configured from
 * config/connect-worker.properties. The connector reaches it through plugin.path only.
 */
final class ConnectWorker {
  static final String CONNECTOR_CLASS = "dev.outboxrelay.connect.OutboxSourceConnector";
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(120);

  private final StateDir state;
  private final StackPorts ports;
  private final KafkaProcesses kafka;
  private final Console console;
  private final SpawnGate gate;

  ConnectWorker(
      StateDir state, StackPorts ports, KafkaProcesses kafka, Console console, SpawnGate gate) {
    this.state = state;
    this.ports = ports;
    this.kafka = kafka;
    this.console = console;
    this.gate = gate;
  }

  /**
   * The Prometheus JMX exporter, run as a {@code -javaagent} of the worker: its jar and the rules
   * that turn the relay's MBeans into {@code outbox_relay_*} series.
   */
  record MetricsAgent(Path jar, Path rules) {
    /** {@code -javaagent:<jar>=127.0.0.1:<port>:<rules>}: served on loopback only. */
    String jvmOption(int port) {
      return "-javaagent:" + jar + "=" + Ports.LOOPBACK + ":" + port + ":" + rules;
    }
  }

  /**
   * Starts the worker with {@code OUTBOX_DB_PASSWORD} in its environment, for connector configs
   * that say {@code ${env:OUTBOX_DB_PASSWORD}}; the password appears nowhere else, and it is the
   * only {@code OUTBOX_*} or {@code LOCAL_STACK_*} variable the worker gets (its {@code env} config
   * provider hands {@code OUTBOX_*} variables to any connector). The JMX exporter agent serves the
   * worker's metrics on {@link StackPorts#metricsUrl()}.
   */
  Process start(
      Path workerTemplate,
      Path builtPlugins,
      MetricsAgent builtAgent,
      String dbPassword,
      Delivery delivery) {
    copyPlugins(builtPlugins);
    createSecretsDir();
    MetricsAgent agent = copyMetricsAgent(builtAgent);
    List<String> jvmOptions = new ArrayList<>(kafka.jvmOptions(Component.CONNECT));
    jvmOptions.add(agent.jvmOption(ports.metrics()));
    Path config = state.connectDir().resolve("worker.properties");
    PropertiesFiles.write(
        config,
        workerProperties(PropertiesFiles.read(workerTemplate), delivery),
        "Effective Connect worker config: "
            + workerTemplate
            + " with ports and paths of this run"
            + (delivery.exactlyOnce() ? " and exactly-once source support" : ""));
    console.step(
        "Connect",
        "starting distributed worker on "
            + ports.connectUrl()
            + " (plugin.path only"
            + (delivery.exactlyOnce() ? ", " + Delivery.WORKER_SUPPORT + "=enabled" : "")
            + ")");
    console.detail("Prometheus metrics (JMX exporter agent) on " + ports.metricsUrl());
    Process process =
        gate.spawn(
            () -> {
              Process p =
                  ProcessControl.startJava(
                      kafka.classpath(),
                      jvmOptions,
                      "org.apache.kafka.connect.cli.ConnectDistributed",
                      List.of(config.toString()),
                      Map.of("OUTBOX_DB_PASSWORD", dbPassword),
                      state.log(Component.CONNECT.id()),
                      state.root(),
                      true);
              return ProcessControl.recorded(p, () -> state.writePid(Component.CONNECT, p.pid()));
            });
    awaitReady(
        new ConnectRest(ports.connectUrl()),
        KafkaProcesses.aliveCheck(process, "Connect", state.log(Component.CONNECT.id())));
    console.step("Connect", "ready (pid " + process.pid() + ")");
    return process;
  }

  /**
   * The template with the values only this run knows: addresses, the plugin path and, in
   * exactly-once mode, {@code exactly.once.source.support=enabled}.
   */
  Properties workerProperties(Properties template, Delivery delivery) {
    Properties p = new Properties();
    p.putAll(template);
    delivery.workerSettings().forEach(p::setProperty);
    p.setProperty("bootstrap.servers", ports.bootstrapServers());
    p.setProperty("listeners", ports.connectUrl());
    p.setProperty("rest.advertised.host.name", Ports.LOOPBACK);
    p.setProperty("rest.advertised.port", Integer.toString(ports.connect()));
    p.setProperty("plugin.path", state.plugins().toString());
    if (p.containsKey(FILE_PROVIDER_PATHS)) {
      p.setProperty(FILE_PROVIDER_PATHS, state.secrets().toString());
    }
    return p;
  }

  /** The file config provider's allowed paths: each must exist, or the worker does not start. */
  static final String FILE_PROVIDER_PATHS = "config.providers.file.param.allowed.paths";

  private void createSecretsDir() {
    try {
      Files.createDirectories(state.secrets());
      try {
        // The worker's file provider reads password files here: the user's alone.
        Files.setPosixFilePermissions(
            state.secrets(), PosixFilePermissions.fromString("rwx------"));
      } catch (UnsupportedOperationException e) {
        // Not a POSIX file system: its own access rules apply.
      }
    } catch (IOException e) {
      throw new StackException("cannot create " + state.secrets() + ": " + e.getMessage());
    }
  }

  /**
   * The worker loads a copy of the built plugin, so rebuilding the project while the stack runs
   * never changes jars under a running worker.
   */
  private void copyPlugins(Path builtPlugins) {
    if (!hasPlugin(builtPlugins)) {
      throw new StackException(
          "no Connect plugin under "
              + builtPlugins
              + ": build it with `mvn -B -DskipTests package` (./local-stack.sh up does it)");
    }
    StateDir.copyRecursively(builtPlugins, state.plugins());
  }

  /**
   * The worker runs a copy of the agent and of the rules, like the plugin: a rebuild (or {@code mvn
   * clean}) while the stack runs leaves the running worker's files alone.
   */
  private MetricsAgent copyMetricsAgent(MetricsAgent built) {
    Path jar = state.agents().resolve(built.jar().getFileName().toString());
    Path rules = state.root().resolve("config").resolve(built.rules().getFileName().toString());
    try {
      Files.createDirectories(jar.getParent());
      Files.createDirectories(rules.getParent());
      Files.copy(built.jar(), jar, StandardCopyOption.REPLACE_EXISTING);
      Files.copy(built.rules(), rules, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new StackException(
          "could not copy the metrics agent and its rules into "
              + state.root()
              + ": "
              + e.getMessage(),
          e);
    }
    return new MetricsAgent(jar, rules);
  }

  static boolean hasPlugin(Path pluginDir) {
    if (!Files.isDirectory(pluginDir)) {
      return false;
    }
    try (Stream<Path> files = Files.walk(pluginDir)) {
      return files.anyMatch(f -> f.getFileName().toString().endsWith(".jar"));
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * Waits for {@code /health} (the worker has joined its group), then requires the plugin in {@code
   * /connector-plugins}: a worker that did not load it fails the start, with where to look.
   */
  void awaitReady(ConnectRest rest, Runnable aliveCheck) {
    Waiter.until(
        "Kafka Connect becoming healthy at " + rest.baseUrl(),
        READY_TIMEOUT,
        () -> rest.tryGet("/health").map(ConnectRest.Response::ok).orElse(false),
        aliveCheck);
    Optional<String> version = pluginVersion(rest);
    if (version.isEmpty()) {
      Path log = state.log(Component.CONNECT.id());
      throw new StackException(
          "the Connect worker at "
              + rest.baseUrl()
              + " does not list "
              + CONNECTOR_CLASS
              + " in /connector-plugins: it did not load the plugin from plugin.path ("
              + state.plugins()
              + "). Look for the plugin scan and its errors in "
              + log
              + "; its last lines:\n"
              + ProcessControl.tail(log, 25));
    }
    console.detail("plugin " + CONNECTOR_CLASS + " " + version.get() + " loaded");
  }

  static Optional<String> pluginVersion(ConnectRest rest) {
    JsonNode plugins = rest.get("/connector-plugins?connectorsOnly=true");
    for (JsonNode plugin : plugins) {
      if (CONNECTOR_CLASS.equals(plugin.path("class").asText())) {
        return Optional.of(plugin.path("version").asText());
      }
    }
    return Optional.empty();
  }
}
