package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class ConnectRestTest {

  /**
   * Right after a connector is created, Connect answers another's config with 500 "a rebalance is
   * expected" (or 409): the launcher asks again instead of failing the demo.
   */
  @Test
  void aGetIsAskedAgainWhileConnectRebalances() throws IOException {
    AtomicInteger asked = new AtomicInteger();
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/connectors/c/config",
        exchange -> {
          int n = asked.incrementAndGet();
          String body =
              n == 1
                  ? "{\"error_code\":500,\"message\":\"Request cannot be completed because a"
                      + " rebalance is expected\"}"
                  : n == 2 ? "{\"error_code\":409,\"message\":\"rebalance\"}" : "{\"a\":\"b\"}";
          byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(n == 1 ? 500 : n == 2 ? 409 : 200, bytes.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
          }
        });
    server.start();
    try {
      ConnectRest rest = new ConnectRest("http://127.0.0.1:" + server.getAddress().getPort());
      assertEquals("b", rest.get("/connectors/c/config").get("a").asText());
      assertEquals(3, asked.get());
    } finally {
      server.stop(0);
    }
  }

  /** A connector's name is one path segment, whatever it holds: a space made an invalid URI. */
  @Test
  void aConnectorsNameIsEncodedAsOnePathSegment() {
    assertEquals(
        "/connectors/outbox-relay-local/config",
        ConnectRest.connectorPath("outbox-relay-local", "/config"));
    String spaced = ConnectRest.connectorPath("orders outbox/eu", "/status");
    assertEquals("/connectors/orders%20outbox%2Feu/status", spaced);
    assertEquals("/connectors/orders outbox/eu/status", URI.create(spaced).getPath());
  }
}
