package dev.outboxrelay.writer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The message model: what is required, payloads as JSON or bytes, headers and traceparent. */
class OutboxMessageTest {
  /** The example of the W3C Trace Context specification. */
  static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  private static OutboxMessage.Builder order() {
    return OutboxMessage.builder().aggregateType("order").aggregateId("o-42").eventType("Placed");
  }

  @Test
  void aggregateTypeAggregateIdAndEventTypeAreRequired() {
    assertEquals(
        "aggregateType is required",
        assertThrows(IllegalArgumentException.class, () -> order().aggregateType(" ").build())
            .getMessage());
    assertEquals(
        "aggregateId is required",
        assertThrows(IllegalArgumentException.class, () -> order().aggregateId(null).build())
            .getMessage());
    assertEquals(
        "eventType is required",
        assertThrows(IllegalArgumentException.class, () -> order().eventType("").build())
            .getMessage());
    assertThrows(IllegalArgumentException.class, () -> order().messageId(" ").build());
  }

  /**
   * What the table would refuse is refused here, naming the field: the database's refusal quotes
   * the whole row, payload included, in an error applications log.
   */
  @Test
  void whatTheTableWouldRefuseIsRefusedNamingTheField() {
    assertEquals(
        "message id must be at most 255 characters",
        assertThrows(
                IllegalArgumentException.class, () -> order().messageId("m".repeat(256)).build())
            .getMessage());
    // 255 characters, 510 UTF-16 units: the table counts characters.
    assertEquals(510, order().messageId("\uD83D\uDE00".repeat(255)).build().messageId().length());
    for (var field :
        Map.<String, java.util.function.UnaryOperator<OutboxMessage.Builder>>of(
                "messageId", b -> b.messageId("m\0"),
                "aggregateType", b -> b.aggregateType("order\0"),
                "aggregateId", b -> b.aggregateId("o\0"),
                "eventType", b -> b.eventType("P\0"),
                "topic", b -> b.topic("t\0"),
                "correlationId", b -> b.correlationId("c\0"),
                "header tenant", b -> b.header("tenant", "acme\0"),
                "a header name", b -> b.header("ten\0ant", "acme"))
            .entrySet()) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class, () -> field.getValue().apply(order()).build());
      assertEquals(
          field.getKey()
              + " must not contain the character U+0000, which PostgreSQL text cannot"
              + " hold",
          e.getMessage());
    }
  }

  @Test
  void theRelaysOwnHeaderNamesAreRefused() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> order().header("outbox.message_id", "x"));
    assertTrue(e.getMessage().startsWith("header names starting with outbox. are the relay's own"));
    assertEquals("x", order().header("outboxed", "x").build().headers().get("outboxed"));
  }

  @Test
  void aMessageIdIsARandomUuidUnlessGiven() {
    OutboxMessage a = order().build();
    assertTrue(
        a.messageId().matches("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
        a.messageId());
    assertNotEquals(a.messageId(), order().build().messageId());
    assertEquals("o-42:placed", order().messageId("o-42:placed").build().messageId());
  }

  record OrderPlaced(String orderId, long totalCents, List<String> items) {}

  @Test
  void jsonPayloadSerializesWithJackson() {
    OutboxMessage m =
        order().jsonPayload(new OrderPlaced("o-42", 4200, List.of("book", "pen"))).build();
    assertEquals(
        "{\"orderId\":\"o-42\",\"totalCents\":4200,\"items\":[\"book\",\"pen\"]}",
        new String(m.payload(), StandardCharsets.UTF_8));

    Map<String, Object> map = new LinkedHashMap<>();
    map.put("id", "o-42");
    map.put("note", "naïve \"quoted\"");
    assertEquals(
        "{\"id\":\"o-42\",\"note\":\"naïve \\\"quoted\\\"\"}",
        new String(order().jsonPayload(map).build().payload(), StandardCharsets.UTF_8));
  }

  /** Jackson cannot serialize it: no properties, no serializer. */
  static final class Opaque {}

  @Test
  void aPayloadJacksonCannotSerializeIsRejectedWhenBuilding() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> order().jsonPayload(new Opaque()));
    assertTrue(e.getMessage().startsWith("payload could not be serialized as JSON"), e::toString);
  }

  @Test
  void rawBytesAreKeptAsGivenAndCopied() {
    byte[] bytes = {0, 1, (byte) 0xff};
    OutboxMessage m = order().payload(bytes).build();
    bytes[0] = 9;
    assertArrayEquals(new byte[] {0, 1, (byte) 0xff}, m.payload());
    m.payload()[1] = 9;
    assertArrayEquals(new byte[] {0, 1, (byte) 0xff}, m.payload());
    assertNull(order().payload(null).build().payload(), "a tombstone");
    assertNull(order().build().payload());
  }

  @Test
  void headersKeepTheirOrderAndBecomeOneJsonObject() {
    OutboxMessage m =
        order()
            .header("tenant", "acme")
            .traceparent(TRACEPARENT)
            .header("empty", null)
            .header("tenant", "acme-2")
            .build();
    assertEquals(List.of("tenant", "traceparent", "empty"), List.copyOf(m.headers().keySet()));
    assertEquals(
        "{\"tenant\":\"acme-2\",\"traceparent\":\"" + TRACEPARENT + "\",\"empty\":null}",
        m.headersJson());
    assertThrows(UnsupportedOperationException.class, () -> m.headers().put("x", "y"));
    assertNull(order().build().headersJson(), "no headers, no JSON");
    assertThrows(NullPointerException.class, () -> order().header(null, "x"));
  }

  @Test
  void traceparentSetsTheW3cHeader() {
    assertEquals(
        Map.of("traceparent", TRACEPARENT), order().traceparent(TRACEPARENT).build().headers());
    String unsampled = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
    assertEquals(unsampled, order().traceparent(unsampled).build().headers().get("traceparent"));
  }

  @Test
  void traceparentRejectsWhatW3cTraceContextRejects() {
    String trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    String parent = "00f067aa0ba902b7";
    for (String invalid :
        new String[] {
          "",
          "garbage",
          TRACEPARENT.toUpperCase(),
          "01-" + trace + "-" + parent + "-01", // only version 00 is known
          "ff-" + trace + "-" + parent + "-01",
          "00-" + trace + "-" + parent + "-01-extra",
          "00-" + trace + "-" + parent + "-1",
          "00-" + trace.substring(1) + "-" + parent + "-01",
          "00-" + trace + "-" + parent + "0-01",
          "00-" + trace.replace('4', 'g') + "-" + parent + "-01",
          "00_" + trace + "_" + parent + "_01",
          " " + TRACEPARENT,
          TRACEPARENT + "\n",
        }) {
      assertThrows(
          IllegalArgumentException.class,
          () -> order().traceparent(invalid),
          () -> "accepted [" + invalid + "]");
    }
    assertEquals(
        "traceparent must not have an all-zero trace or parent id",
        assertThrows(
                IllegalArgumentException.class,
                () -> order().traceparent("00-" + "0".repeat(32) + "-" + parent + "-01"))
            .getMessage());
    assertThrows(
        IllegalArgumentException.class,
        () -> order().traceparent("00-" + trace + "-" + "0".repeat(16) + "-01"));
  }

  @Test
  void aNullTraceparentMeansOutsideAnyTraceAndLeavesNoHeader() {
    assertEquals(Map.of(), order().traceparent(null).build().headers());
    assertEquals(
        Map.of("tenant", "acme"),
        order()
            .header("tenant", "acme")
            .traceparent(TRACEPARENT)
            .traceparent(null)
            .build()
            .headers());
  }

  @Test
  void correlationIdDeadlineAndTopicAreOptional() {
    OutboxMessage plain = order().build();
    assertNull(plain.topic());
    assertNull(plain.correlationId());
    assertNull(plain.deliverBefore());
  }
}
