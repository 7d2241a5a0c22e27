package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code status} reads the headline figures from the worker's Prometheus endpoint, here a stand-in
 * on loopback; and says in one line, without failing, when it cannot. No process of the stack runs
 * (LocalStackIT reads a real worker's endpoint).
 */
class StatusMetricsTest {
  @TempDir Path stateDir;
  private HttpServer server;

  @AfterEach
  void stopServer() {
    if (server != null) {
      server.stop(0);
    }
  }

  private String serve(int status, String body) throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 0);
    server.createContext(
        "/metrics",
        exchange -> {
          byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().add("Content-Type", "text/plain; version=0.0.4");
          exchange.sendResponseHeaders(status, bytes.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
          }
        });
    server.start();
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/metrics";
  }

  /** A stack record whose services are gone: status shows what it can read. */
  private String status(String metricsUrl) {
    int gone = Ports.anyFree();
    String all = status(metricsUrl, "http://127.0.0.1:" + gone, gone);
    assertTrue(all.startsWith("exit 1\n"), "the processes do not run, nothing else fails: " + all);
    assertTrue(all.contains("Outbox rows: not readable"), all);
    return all;
  }

  /** Status of a recorded stack; its output after a first line "exit N". */
  private String status(String metricsUrl, String connectUrl, int gone) {
    new StackRecord(
            "127.0.0.1:" + gone,
            connectUrl,
            metricsUrl,
            "jdbc:postgresql://127.0.0.1:" + gone + "/outbox",
            "postgres",
            true,
            Delivery.AT_LEAST_ONCE,
            false)
        .write(stateDir.resolve("stack.properties"));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit =
        LocalStack.run(
            new String[] {"status", "--state-dir=" + stateDir, "--repo-root=" + RepoFiles.root()},
            Map.of(),
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    return "exit "
        + exit
        + "\n"
        + out.toString(StandardCharsets.UTF_8)
        + err.toString(StandardCharsets.UTF_8);
  }

  /**
   * A process standing in for {@code component}: its command line carries the component's marker,
   * as the launcher starts it, and its pid file names it. It waits on its stdin, a pipe from this
   * JVM: no child of its own, and it ends with the JVM.
   */
  private Process standIn(Component component) throws IOException {
    StateDir state = new StateDir(stateDir);
    Process process =
        new ProcessBuilder("bash", "-c", "read -r _", StackProcesses.marker(state, component))
            .start();
    Files.createDirectories(stateDir.resolve("pids"));
    state.writePid(component, process.pid());
    return process;
  }

  /**
   * Processes of the stack that run without its record (a launcher that ended early, or one still
   * starting) are listed, with how to stop them: status said no stack was running.
   */
  @Test
  void processesRunningWithoutTheStacksRecordAreListed() throws Exception {
    Process kafka = standIn(Component.KAFKA);
    try {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      int exit =
          LocalStack.run(
              new String[] {"status", "--state-dir=" + stateDir, "--repo-root=" + RepoFiles.root()},
              Map.of(),
              new PrintStream(out, true, StandardCharsets.UTF_8),
              new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
      String all = out.toString(StandardCharsets.UTF_8);
      assertEquals(1, exit, all);
      assertTrue(all.contains("but some of its processes run"), all);
      assertTrue(all.contains("  Kafka       running (pid " + kafka.pid() + ")"), all);
      assertTrue(all.contains("Stop them with ./local-stack.sh down."), all);
    } finally {
      kafka.destroyForcibly();
      kafka.waitFor(10, java.util.concurrent.TimeUnit.SECONDS);
    }
  }

  /**
   * A worker that runs but whose REST API does not answer gets one line, and status goes on to the
   * metrics and the rows: it threw there and printed nothing more.
   */
  @Test
  void aWorkerWhoseRestApiDoesNotAnswerGetsOneLine() throws Exception {
    Process connect = standIn(Component.CONNECT);
    try {
      String out = status(serve(200, PrometheusTextTest.SCRAPE));
      assertTrue(
          out.contains("  Connectors: not read (the worker's REST API does not answer; see "), out);
      assertTrue(out.contains("outbox-relay-local (2 tasks): published 7"), out);
    } finally {
      connect.destroyForcibly();
      connect.waitFor(10, java.util.concurrent.TimeUnit.SECONDS);
    }
  }

  @Test
  void printsTheHeadlineFiguresPerConnector() throws IOException {
    String url = serve(200, PrometheusTextTest.SCRAPE);
    String out = status(url);
    assertTrue(
        out.contains(
            "  Metrics ("
                + url
                + ", all tasks of each connector):\n"
                + "    outbox-relay-local (2 tasks): published 7, claims lost 1, retried 3,"
                + " exhausted 0\n"
                + "      backlog: pending 12, in flight 5, awaiting retry 3, failed 1, exhausted 0;"
                + " oldest undelivered row 4.3 s (lag)\n"
                + "    outbox-relay-us (1 task): published 2,"),
        out);
    assertTrue(out.contains("every metrics.backlog.interval.ms, 5 s on this stack"), out);
    assertTrue(out.contains("  Metrics          " + url + "  (Prometheus"), out);
    assertTrue(
        out.contains("  Dashboard        config/metrics/grafana-dashboard.json  (Grafana"), out);
  }

  /**
   * Every process runs (stand-ins) and the worker's REST API lists the connectors: status exits 0
   * only when none of them or their tasks has FAILED, so that a script's health check sees a failed
   * task (it exited 0 then).
   */
  @Test
  void aFailedTaskMakesStatusExitWithOne() throws Exception {
    List<Process> standIns = new ArrayList<>();
    try {
      for (Component component : Component.values()) {
        standIns.add(standIn(component));
      }
      String metrics = serve(200, PrometheusTextTest.SCRAPE);
      String connect = metrics.substring(0, metrics.length() - "/metrics".length());
      String failed = connectors("RUNNING", "FAILED");
      server.createContext("/connectors", exchange -> answer(exchange, connectorsBody[0]));
      int gone = Ports.anyFree();

      connectorsBody[0] = connectors("RUNNING", "RUNNING");
      String healthy = status(metrics, connect, gone);
      assertTrue(healthy.startsWith("exit 0\n"), healthy);
      assertTrue(
          healthy.contains("    outbox-relay-local: RUNNING task 0=RUNNING task 1=RUNNING"),
          healthy);

      connectorsBody[0] = failed;
      String out = status(metrics, connect, gone);
      assertTrue(out.startsWith("exit 1\n"), out);
      assertTrue(out.contains("    outbox-relay-local: RUNNING task 0=RUNNING task 1=FAILED"), out);
      assertTrue(
          out.contains(
              "    A connector or task FAILED: its reason is in GET "
                  + connect
                  + "/connectors/NAME/status"),
          out);

      connectorsBody[0] = connectors("FAILED", "RUNNING");
      assertTrue(status(metrics, connect, gone).startsWith("exit 1\n"));
    } finally {
      for (Process p : standIns) {
        p.destroyForcibly();
        p.waitFor(10, java.util.concurrent.TimeUnit.SECONDS);
      }
    }
  }

  private final String[] connectorsBody = new String[1];

  /** Connect's answer to GET /connectors?expand=status&expand=info: one connector, two tasks. */
  private static String connectors(String connectorState, String task1State) {
    return "{\"outbox-relay-local\":{\"status\":{\"name\":\"outbox-relay-local\","
        + "\"connector\":{\"state\":\""
        + connectorState
        + "\"},\"tasks\":[{\"id\":0,\"state\":\"RUNNING\"},{\"id\":1,\"state\":\""
        + task1State
        + "\"}]},\"info\":{\"config\":{}}}}";
  }

  private static void answer(com.sun.net.httpserver.HttpExchange exchange, String body)
      throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().add("Content-Type", "application/json");
    exchange.sendResponseHeaders(200, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Test
  void anEndpointThatDoesNotAnswerIsOneLine() {
    String url = "http://127.0.0.1:" + Ports.anyFree() + "/metrics";
    String out = status(url);
    assertTrue(out.contains("  Metrics: not reachable at " + url + " (connection refused"), out);
    assertEquals(1, out.split("Metrics: ", -1).length - 1, out);
  }

  @Test
  void anEndpointThatFailsOrHasNoRelaySeriesSaysSo() throws IOException {
    String url = serve(500, "oops");
    assertTrue(status(url).contains("  Metrics: not reachable at " + url + " (answered HTTP 500)"));
    stopServer();
    String empty = serve(200, "# TYPE jvm_threads_current gauge\njvm_threads_current 61.0\n");
    assertTrue(
        status(empty)
            .contains("  Metrics: " + empty + " has no outbox_relay series (no task of the relay"));
  }

  @Test
  void aStackStartedBeforeTheEndpointExistedIsToldHowToGetOne() {
    String out = status("");
    assertTrue(out.contains("  Metrics: this stack was started without a metrics endpoint"), out);
    assertTrue(!out.contains("  Metrics          "), out);
  }
}
