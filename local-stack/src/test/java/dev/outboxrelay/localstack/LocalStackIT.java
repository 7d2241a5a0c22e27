package dev.outboxrelay.localstack;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher end to end, as ./local-stack.sh runs it: real PostgreSQL, broker and Connect worker
 * processes on free ports, the demo (which fails the run unless the owned rows are PUBLISHED in
 * Kafka and the others untouched), the worker's Prometheus endpoint, a second {@code up} (by the
 * script too: no build), {@code status} with the headline figures, the demo alone next to a second
 * connector, and {@code down}.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LocalStackIT {
  @TempDir static Path stateDir;

  private static final Map<String, String> ENV = Map.of("LOCAL_STACK_PORTS", "auto");
  private static String firstUp;
  private static int firstUpExit;

  record Run(int exit, String out, String err) {}

  static Run localStack(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    List<String> all = new ArrayList<>(List.of(args));
    all.add("--repo-root=" + RepoFiles.root());
    all.add("--state-dir=" + stateDir);
    int exit =
        LocalStack.run(
            all.toArray(String[]::new),
            ENV,
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Run(
        exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  @BeforeAll
  static void up() {
    Run run = localStack("up");
    firstUp = run.out() + run.err();
    firstUpExit = run.exit();
  }

  @AfterAll
  static void down() {
    localStack("down");
  }

  @Test
  @Order(1)
  void upStartsTheStackAndTheDemoSucceeds() {
    assertEquals(0, firstUpExit, firstUp);
    assertTrue(firstUp.contains("Result     ok: 4 owned rows PUBLISHED in Kafka; 3 rows"), firstUp);
    assertTrue(firstUp.contains("legacy row written with instance_key NULL"), firstUp);
    assertTrue(
        firstUp.matches(
            "(?s).*\\n  Metrics          http://127\\.0\\.0\\.1:\\d+/metrics  \\(Prometheus.*"),
        firstUp);
    assertTrue(
        firstUp.contains("  Dashboard        config/metrics/grafana-dashboard.json  (Grafana"),
        firstUp);
  }

  @Test
  @Order(2)
  void theConnectorRunsAndKeepsItsPasswordAReference() throws IOException {
    assertEquals(
        "rwx------",
        PosixFilePermissions.toString(Files.getPosixFilePermissions(stateDir.resolve("secrets"))),
        "where the worker's file provider reads password files: the user's alone");
    StackRecord stack = StackRecord.read(stateDir.resolve("stack.properties")).orElseThrow();
    ConnectRest rest = new ConnectRest(stack.connectUrl());
    JsonNode status = rest.get("/connectors/outbox-relay-local/status");
    assertEquals("RUNNING", status.path("connector").path("state").asText());
    assertEquals(
        "${env:OUTBOX_DB_PASSWORD}",
        rest.get("/connectors/outbox-relay-local/config").path("connection.password").asText());
  }

  /**
   * The worker runs the JMX exporter agent on loopback with the relay's rules; the broker does not.
   * Before {@code theDemoTakesTheRunningStack...}, which restarts the tasks (their counters start
   * again from 0).
   */
  @Test
  @Order(3)
  void theWorkerServesTheRelaysMetricsOnItsPrometheusEndpoint() throws Exception {
    StackRecord stack = StackRecord.read(stateDir.resolve("stack.properties")).orElseThrow();
    assertTrue(
        stack.metricsUrl().matches("http://127\\.0\\.0\\.1:\\d+/metrics"), stack.metricsUrl());
    String connect = commandLine(Component.CONNECT);
    assertTrue(
        connect.contains(
            "-javaagent:"
                + stateDir.resolve("agents/jmx_prometheus_javaagent.jar")
                + "=127.0.0.1:"
                + URI.create(stack.metricsUrl()).getPort()
                + ":"
                + stateDir.resolve("config/jmx-exporter.yml")),
        connect);
    assertFalse(commandLine(Component.KAFKA).contains("-javaagent"));

    HttpClient http = HttpClient.newHttpClient();
    Pattern published =
        Pattern.compile(
            "(?m)^outbox_relay_published_total\\{connector=\"outbox-relay-local\",task=\"0\"}"
                + " (\\S+)$");
    await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () -> {
              String body =
                  http.send(
                          HttpRequest.newBuilder(URI.create(stack.metricsUrl())).build(),
                          HttpResponse.BodyHandlers.ofString())
                      .body();
              Matcher m = published.matcher(body);
              assertTrue(m.find(), body);
              assertTrue(Double.parseDouble(m.group(1)) > 0, m.group());
            });
  }

  private static String commandLine(Component component) throws IOException {
    long pid =
        Long.parseLong(
            Files.readString(stateDir.resolve("pids").resolve(component.id() + ".pid")).trim());
    return ProcessControl.commandLine(pid).orElseThrow();
  }

  @Test
  @Order(4)
  void aSecondUpFindsTheRunningStack() {
    Run again = localStack("up");
    assertEquals(0, again.exit(), again.err());
    assertTrue(again.out().startsWith("The local stack is already running"), again.out());
    assertTrue(
        again.out().contains("./local-stack.sh demo runs it against this stack"), again.out());
    Run quiet = localStack("up", "--no-demo");
    assertEquals(0, quiet.exit(), quiet.err());
    assertTrue(!quiet.out().contains("The demo did not run again"), quiet.out());

    // Another database asked for: not "running" on it (the exit code said so before).
    Run elsewhere = localStack("up", "--jdbc-url=jdbc:postgresql://127.0.0.1:1/elsewhere");
    assertEquals(1, elsewhere.exit(), elsewhere.out() + elsewhere.err());
    assertTrue(
        elsewhere
            .out()
            .contains(
                "It runs on the embedded PostgreSQL, not on"
                    + " jdbc:postgresql://127.0.0.1:1/elsewhere as asked"),
        elsewhere.out());

    // Another port asked for: not "running" there either (it exited 0).
    Run otherPort = localStack("up", "--kafka-port=1");
    assertEquals(1, otherPort.exit(), otherPort.out() + otherPort.err());
    assertTrue(
        otherPort.out().matches("(?s).*It runs the Kafka broker on port \\d+, not 1 as asked.*"),
        otherPort.out());
  }

  @Test
  @Order(5)
  void statusShowsTheRowsByOwnerAndTheHeadlineFigures() {
    await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () -> {
              Run status = localStack("status");
              String out = status.out();
              assertEquals(0, status.exit(), out + status.err());
              assertTrue(out.contains("outbox-relay-local: RUNNING task 0=RUNNING"), out);
              assertTrue(out.matches("(?s).*orders-eu +PUBLISHED +4.*"), out);
              assertTrue(out.matches("(?s).*orders-us +PENDING +2.*"), out);
              assertTrue(
                  out.matches(
                      "(?s).*\\n  Metrics \\(http://127\\.0\\.0\\.1:\\d+/metrics, all tasks of each"
                          + " connector\\):\\n"
                          + "    outbox-relay-local \\(1 task\\): published 4, claims lost 0,"
                          + " retried 0, exhausted 0\\n"
                          + "      backlog: pending \\d+, in flight \\d+, awaiting retry 0, failed 0,"
                          + " exhausted 0;"
                          + " oldest undelivered row [^\\n]+ \\(lag\\)\\n.*"),
                  out);
            });
  }

  @Test
  @Order(6)
  void theScriptSkipsTheBuildWhileTheStackRuns(@TempDir Path work) throws Exception {
    LocalStackScript.Result again =
        LocalStackScript.run(work, ENV, "up", "--state-dir=" + stateDir);
    assertEquals(0, again.exit(), again.output());
    assertEquals("", again.mvnCalls(), "the script ran mvn although the stack runs");
    assertTrue(
        again.output().startsWith("[build]    skipped: the local stack is already running"),
        again.output());
    assertTrue(again.output().contains("The local stack is already running"), again.output());
  }

  /**
   * The demo again, as docs/local-stack.md suggests after a look around: a second connector for
   * orders-us registered, more tasks for the demo's connector, and no options at all.
   */
  @Test
  @Order(7)
  void theDemoTakesTheRunningStackKeepsTasksMaxAndJudgesOnlyItsOwnRows() {
    StackRecord stack = StackRecord.read(stateDir.resolve("stack.properties")).orElseThrow();
    ConnectRest rest = new ConnectRest(stack.connectUrl());
    ObjectNode us = ConnectRest.JSON.createObjectNode();
    us.put("connector.class", ConnectWorker.CONNECTOR_CLASS);
    us.put("connection.url", stack.jdbcUrl());
    us.put("connection.user", "postgres");
    us.put("connection.password", "${env:OUTBOX_DB_PASSWORD}");
    us.put("instance.keys", "orders-us");
    us.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
    us.put("value.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
    putUntilAccepted(rest, "/connectors/outbox-relay-us/config", us);
    ObjectNode local = (ObjectNode) rest.get("/connectors/outbox-relay-local/config");
    local.remove("name");
    local.put("tasks.max", "2");
    // The first PUT starts a rebalance, during which Connect answers 409: retried, as the
    // launcher's own registration does.
    putUntilAccepted(rest, "/connectors/outbox-relay-local/config", local);

    Run demo = localStack("demo");

    String all = demo.out() + demo.err();
    assertEquals(0, demo.exit(), all);
    assertTrue(all.contains("Stack      the local stack running in " + stateDir), all);
    assertTrue(
        all.contains("already registered: keeps its tasks.max=2 (local-connector.json says 1)"),
        all);
    assertTrue(
        all.contains(
            "Result     ok: 4 owned rows PUBLISHED in Kafka; 1 row of no connector's instance keys"
                + " (the legacy row) untouched; 2 orders-us rows left to connector"
                + " outbox-relay-us (not checked)"),
        all);
    assertEquals("2", rest.get("/connectors/outbox-relay-local/config").path("tasks.max").asText());
  }

  @Test
  @Order(8)
  void theLogsHoldNoEscapeCodes() throws IOException {
    try (Stream<Path> logs = Files.list(stateDir.resolve("logs"))) {
      List<Path> files = logs.toList();
      assertFalse(files.isEmpty(), "no log written");
      for (Path log : files) {
        assertFalse(Files.readString(log).contains("\u001b"), "an ANSI escape code in " + log);
      }
    }
  }

  @Test
  @Order(9)
  void downStopsEveryProcess() throws IOException {
    List<Long> pids = new ArrayList<>();
    for (Component c : Component.values()) {
      Path pidFile = stateDir.resolve("pids").resolve(c.id() + ".pid");
      pids.add(Long.parseLong(Files.readString(pidFile).trim()));
    }
    Run down = localStack("down");
    assertEquals(0, down.exit(), down.out() + down.err());
    for (long pid : pids) {
      assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "pid " + pid);
    }
    assertFalse(Files.exists(stateDir.resolve("pids")));
    assertEquals(1, localStack("running").exit());
  }

  private static void putUntilAccepted(ConnectRest rest, String path, ObjectNode config) {
    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> {
              var response = rest.put(path, config);
              assertTrue(response.ok() || response.status() == 409, response::toString);
              return response.ok();
            });
  }
}
