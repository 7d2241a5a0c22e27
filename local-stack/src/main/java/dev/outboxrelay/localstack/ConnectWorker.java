package dev.outboxrelay.localstack;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
   * Starts the worker with {@code OUTBOX_DB_PASSWORD} in its environment, for connector configs
   * that say {@code ${env:OUTBOX_DB_PASSWORD}}; the password appears nowhere else.
   */
  Process start(Path workerTemplate, Path builtPlugins, String dbPassword) {
    copyPlugins(builtPlugins);
    Path config = state.connectDir().resolve("worker.properties");
    PropertiesFiles.write(
        config,
        workerProperties(PropertiesFiles.read(workerTemplate)),
        "Effective Connect worker config: " + workerTemplate + " with ports and paths of this run");
    console.step(
        "Connect", "starting distributed worker on " + ports.connectUrl() + " (plugin.path only)");
    Process process =
        gate.spawn(
            () -> {
              Process p =
                  ProcessControl.startJava(
                      kafka.classpath(),
                      kafka.jvmOptions(Component.CONNECT),
                      "org.apache.kafka.connect.cli.ConnectDistributed",
                      List.of(config.toString()),
                      Map.of("OUTBOX_DB_PASSWORD", dbPassword),
                      state.log(Component.CONNECT.id()),
                      state.root());
              state.writePid(Component.CONNECT, p.pid());
              return p;
            });
    awaitReady(
        new ConnectRest(ports.connectUrl()),
        KafkaProcesses.aliveCheck(process, "Connect", state.log(Component.CONNECT.id())));
    console.step("Connect", "ready (pid " + process.pid() + ")");
    return process;
  }

  /** The template with the values only this run knows. */
  Properties workerProperties(Properties template) {
    Properties p = new Properties();
    p.putAll(template);
    p.setProperty("bootstrap.servers", ports.bootstrapServers());
    p.setProperty("listeners", ports.connectUrl());
    p.setProperty("rest.advertised.host.name", Ports.LOOPBACK);
    p.setProperty("rest.advertised.port", Integer.toString(ports.connect()));
    p.setProperty("plugin.path", state.plugins().toString());
    return p;
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

  static boolean hasPlugin(Path pluginDir) {
    if (!Files.isDirectory(pluginDir)) {
      return false;
    }
    try (Stream<Path> files = Files.walk(pluginDir)) {
      return files.anyMatch(f -> f.getFileName().toString().endsWith(".jar"));
    } catch (java.io.IOException e) {
      return false;
    }
  }

  /** Waits for {@code /health} (the worker has joined its group), then reports the plugin. */
  void awaitReady(ConnectRest rest, Runnable aliveCheck) {
    Waiter.until(
        "Kafka Connect becoming healthy at " + rest.baseUrl(),
        READY_TIMEOUT,
        () -> rest.tryGet("/health").map(ConnectRest.Response::ok).orElse(false),
        aliveCheck);
    Optional<String> version = pluginVersion(rest);
    if (version.isPresent()) {
      console.detail("plugin " + CONNECTOR_CLASS + " " + version.get() + " loaded");
    } else {
      console.detail(
          "the worker lists no "
              + CONNECTOR_CLASS
              + " (see "
              + state.log(Component.CONNECT.id())
              + ")");
    }
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
