package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.URI;
import org.junit.jupiter.api.Test;

class ConnectRestTest {

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
