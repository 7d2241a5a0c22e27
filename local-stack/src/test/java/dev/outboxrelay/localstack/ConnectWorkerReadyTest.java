package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code up} requires the plugin in the worker's {@code /connector-plugins}, against a stand-in
 * Connect REST API.
 */
class ConnectWorkerReadyTest {
  @TempDir Path root;

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private HttpServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop(0);
    }
  }

  private ConnectRest connectAnswering(String plugins) throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getByName(Ports.LOOPBACK), 0), 0);
    server.createContext(
        "/",
        exchange -> {
          String path = exchange.getRequestURI().getPath();
          String body =
              switch (path) {
                case "/health" -> "{\"status\":\"healthy\"}";
                case "/connector-plugins" -> plugins;
                default -> null;
              };
          byte[] bytes = (body == null ? "{}" : body).getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(body == null ? 404 : 200, bytes.length);
          try (OutputStream os = exchange.getResponseBody()) {
            os.write(bytes);
          }
        });
    server.start();
    return new ConnectRest("http://" + Ports.LOOPBACK + ":" + server.getAddress().getPort());
  }

  private ConnectWorker worker() {
    return new ConnectWorker(
        new StateDir(root),
        new StackPorts(0, 1, 2, 3, 4),
        null,
        new Console(new PrintStream(out, true, StandardCharsets.UTF_8)),
        SpawnGate.open());
  }

  @Test
  void aWorkerWithoutThePluginFailsTheStartAndPointsAtItsLog() throws Exception {
    ConnectRest rest =
        connectAnswering(
            "[{\"class\":\"org.apache.kafka.connect.mirror.MirrorSourceConnector\","
                + "\"type\":\"source\",\"version\":\"4.0.0\"}]");

    StackException e =
        assertThrows(StackException.class, () -> worker().awaitReady(rest, () -> {}));

    assertTrue(
        e.getMessage()
            .startsWith(
                "the Connect worker at "
                    + rest.baseUrl()
                    + " does not list dev.outboxrelay.connect.OutboxSourceConnector in"
                    + " /connector-plugins"),
        e.getMessage());
    assertTrue(
        e.getMessage().contains(root.resolve("logs/connect.log").toString()), e.getMessage());
  }

  @Test
  void aWorkerWithThePluginIsReady() throws Exception {
    ConnectRest rest =
        connectAnswering(
            "[{\"class\":\"dev.outboxrelay.connect.OutboxSourceConnector\","
                + "\"type\":\"source\",\"version\":\"0.1.0-SNAPSHOT\"}]");

    worker().awaitReady(rest, () -> {});

    String console = out.toString(StandardCharsets.UTF_8);
    assertTrue(
        console.contains("plugin dev.outboxrelay.connect.OutboxSourceConnector 0.1.0-SNAPSHOT"),
        console);
  }
}
