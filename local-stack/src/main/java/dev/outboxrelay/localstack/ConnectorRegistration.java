package dev.outboxrelay.localstack;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Registers a connector from a JSON file ({@code {"name": ..., "config": {...}}}, the body of
 * {@code POST /connectors}) with the JDBC URL and user of this run, then waits until it and its
 * tasks run. A connector of that name that is already registered keeps its {@code tasks.max}; its
 * other settings become the file's, and the settings that change are named.
 */
final class ConnectorRegistration {
  private static final Duration REGISTER_TIMEOUT = Duration.ofSeconds(60);
  private static final Duration RUNNING_TIMEOUT = Duration.ofSeconds(60);
  static final String TASKS_MAX = "tasks.max";
  static final String BACKLOG_INTERVAL = "metrics.backlog.interval.ms";
  static final String LOCAL_BACKLOG_INTERVAL_MS = "5000";

  private final ConnectRest rest;
  private final Console console;

  ConnectorRegistration(ConnectRest rest, Console console) {
    this.rest = rest;
    this.console = console;
  }

  record Registered(String name, List<String> instanceKeys) {}

  /**
   * The connector's config from {@code file}, with the connection of this run filled in and, in
   * exactly-once mode, the guarantee and Connect's {@code exactly.once.support=required}.
   */
  static Registered prepare(
      Path file, String jdbcUrl, String user, Delivery delivery, ObjectNode configOut) {
    JsonNode root;
    try {
      root = ConnectRest.JSON.readTree(file.toFile());
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      // Not Jackson's message: it quotes the file's text where it failed, a secret written there
      // included.
      throw new StackException(
          "could not read "
              + file
              + ": not valid JSON at line "
              + (e.getLocation() == null ? "?" : e.getLocation().getLineNr())
              + ", column "
              + (e.getLocation() == null ? "?" : e.getLocation().getColumnNr()));
    } catch (IOException e) {
      throw new StackException("could not read " + file + ": " + e.getMessage(), e);
    }
    String name = root.path("name").asText("");
    JsonNode config = root.path("config");
    if (name.isBlank() || !config.isObject()) {
      throw new StackException(
          file
              + " must look like {\"name\": \"...\", \"config\": {...}} (a POST /connectors body)");
    }
    if (Redaction.carriesPassword(jdbcUrl)) {
      // Connect stores the config in its config topic and shows it at GET
      // /connectors/<name>/config: the password stays a ${env:...} reference. Not repeated here.
      throw new StackException(
          "the connector's JDBC URL (--connector-jdbc-url, else --jdbc-url) carries a password,"
              + " which Connect would store in the connector's config and show through its REST"
              + " API: remove it from the URL and set "
              + StackOptions.DB_PASSWORD_ENV
              + " instead");
    }
    configOut.setAll((ObjectNode) config);
    configOut.put("connection.url", jdbcUrl);
    configOut.put("connection.user", user);
    delivery.connectorSettings().forEach(configOut::put);
    // A laptop's backlog is small and someone is watching: the backlog and lag figures (status,
    // the metrics endpoint) are refreshed every few seconds rather than the default 30 s, unless
    // the file says otherwise.
    if (!configOut.has(BACKLOG_INTERVAL)) {
      configOut.put(BACKLOG_INTERVAL, LOCAL_BACKLOG_INTERVAL_MS);
    }
    List<String> keys =
        Arrays.stream(configOut.path("instance.keys").asText("").split(","))
            .map(String::trim)
            .filter(k -> !k.isEmpty())
            .toList();
    return new Registered(name, keys);
  }

  Registered register(Path file, String jdbcUrl, String user, Delivery delivery) {
    ObjectNode config = ConnectRest.JSON.createObjectNode();
    Registered connector = prepare(file, jdbcUrl, user, delivery, config);
    String path = ConnectRest.connectorPath(connector.name(), "/config");
    console.step(
        "Connector",
        "registering "
            + connector.name()
            + " (instance.keys="
            + String.join(",", connector.instanceKeys())
            + ") from "
            + file.getFileName()
            + (delivery.exactlyOnce() ? " in exactly-once mode" : "")
            + ": PUT "
            + path);
    if (delivery.exactlyOnce()) {
      StringBuilder added = new StringBuilder();
      delivery
          .connectorSettings()
          .forEach(
              (k, v) -> added.append(added.isEmpty() ? "" : ", ").append(k).append('=').append(v));
      console.detail("with " + added + " on top of the file's settings");
    }
    AtomicReference<ConnectRest.Response> last = new AtomicReference<>();
    AtomicReference<String> change = new AtomicReference<>();
    Waiter.until(
        "registering the connector",
        REGISTER_TIMEOUT,
        () -> {
          // Read what is registered right before replacing it (409 and 5xx: not ready yet).
          Optional<ConnectRest.Response> current = rest.tryGet(path);
          if (current.isEmpty() || current.get().status() == 409 || current.get().status() >= 500) {
            return false;
          }
          if (current.get().ok()) {
            change.set(keepTasksMax(current.get().json(), config, file));
          }
          ConnectRest.Response response = rest.put(path, config);
          last.set(response);
          // 409: the worker group is rebalancing; 5xx: the worker is not ready yet. Both pass.
          return response.ok() || (response.status() != 409 && response.status() < 500);
        },
        () -> {});
    if (change.get() != null) {
      console.detail(change.get());
    }
    if (!last.get().ok()) {
      throw new StackException(
          "Connect refused the connector config ("
              + last.get().status()
              + "):\n"
              + last.get().body());
    }
    awaitRunning(connector.name());
    return connector;
  }

  /**
   * Keeps the registered connector's {@code tasks.max} in {@code config} (whoever raised it meant
   * it) and says what else the file changes. Returns that sentence.
   */
  static String keepTasksMax(JsonNode registered, ObjectNode config, Path file) {
    String tasksMax = registered.path(TASKS_MAX).asText(null);
    String kept = "";
    if (tasksMax != null) {
      if (!tasksMax.equals(config.path(TASKS_MAX).asText(null))) {
        kept =
            " (" + file.getFileName() + " says " + config.path(TASKS_MAX).asText("nothing") + ")";
      }
      config.put(TASKS_MAX, tasksMax);
    }
    Set<String> changed = new TreeSet<>();
    config
        .properties()
        .forEach(
            e -> {
              if (!e.getValue().asText().equals(registered.path(e.getKey()).asText(null))) {
                changed.add(e.getKey());
              }
            });
    registered
        .fieldNames()
        .forEachRemaining(
            key -> {
              if (!key.equals("name") && !config.has(key)) {
                changed.add(key);
              }
            });
    return "already registered: keeps its tasks.max="
        + (tasksMax == null ? "(default)" : tasksMax)
        + kept
        + "; "
        + (changed.isEmpty()
            ? "its other settings already equal the file's"
            : "settings set to the file's: " + String.join(", ", changed));
  }

  private void awaitRunning(String name) {
    String path = ConnectRest.connectorPath(name, "/status");
    Waiter.until(
        "connector " + name + " and its tasks RUNNING",
        RUNNING_TIMEOUT,
        () ->
            rest.tryGet(path)
                .filter(ConnectRest.Response::ok)
                .map(r -> running(r.json()))
                .orElse(false),
        () ->
            rest.tryGet(path)
                .filter(ConnectRest.Response::ok)
                .ifPresent(r -> failIfFailed(r.json())));
    JsonNode status = rest.get(path);
    console.step(
        "Connector",
        name + " RUNNING with " + status.path("tasks").size() + " task(s) on " + worker(status));
  }

  private static boolean running(JsonNode status) {
    JsonNode tasks = status.path("tasks");
    if (!"RUNNING".equals(status.path("connector").path("state").asText()) || tasks.isEmpty()) {
      return false;
    }
    for (JsonNode task : tasks) {
      if (!"RUNNING".equals(task.path("state").asText())) {
        return false;
      }
    }
    return true;
  }

  private static void failIfFailed(JsonNode status) {
    failIfFailed("connector", status.path("connector"));
    for (JsonNode task : status.path("tasks")) {
      failIfFailed("task " + task.path("id").asText(), task);
    }
  }

  private static void failIfFailed(String what, JsonNode state) {
    if ("FAILED".equals(state.path("state").asText())) {
      String trace = state.path("trace").asText("");
      List<String> lines = trace.lines().limit(12).toList();
      throw new StackException(what + " FAILED:\n    " + String.join("\n    ", lines));
    }
  }

  private static String worker(JsonNode status) {
    return status.path("connector").path("worker_id").asText("?");
  }
}
