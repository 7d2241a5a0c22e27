package dev.outboxrelay.writer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.math.BigDecimal;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** The message model: what is required, payloads as JSON or bytes, headers and traceparent. */
class OutboxMessageTest {
  /** The example of the W3C Trace Context specification. */
  static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  private static OutboxMessage.Builder order() {
    return OutboxMessage.builder().aggregateType("order").aggregateId("o-42").eventType("Placed");
  }

  /** A null JSON payload is no payload (a tombstone), as payload(null) is, not the text null. */
  @Test
  void aNullJsonPayloadIsATombstone() {
    OutboxMessage message =
        OutboxMessage.builder()
            .aggregateType("order")
            .aggregateId("a")
            .eventType("OrderDeleted")
            .jsonPayload(java.util.Map.of("x", 1))
            .jsonPayload(null)
            .build();

    assertNull(message.payload());
    // A value serializing to JSON null is one too: not four bytes "null", a value in Kafka with
    // payload.format=bytes or string and a tombstone with json.
    assertNull(
        OutboxMessage.builder()
            .aggregateType("order")
            .aggregateId("a")
            .eventType("OrderDeleted")
            .jsonPayload(com.fasterxml.jackson.databind.node.NullNode.getInstance())
            .build()
            .payload());
  }

  /**
   * JSON text or bytes given to jsonPayload would be written as one JSON string (quoted, or
   * base64): consumers would get a string, and an inferred schema parks every such row. Refused,
   * pointing at payload(byte[]).
   */
  @Test
  void jsonPayloadRefusesTextAndBytesItWouldQuote() {
    for (Object value :
        List.of(
            "{\"id\":1}",
            new StringBuilder("{}"),
            new byte[] {'{', '}'},
            new char[] {'{', '}'},
            java.nio.ByteBuffer.wrap(new byte[] {'{', '}'}))) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> order().jsonPayload(value));
      assertTrue(e.getMessage().contains("payload(byte[])"), e.getMessage());
      assertFalse(e.getMessage().contains("id"), "the value is not quoted: " + e.getMessage());
    }
    assertEquals(
        "{\"id\":1}",
        new String(order().jsonPayload(Map.of("id", 1)).build().payload(), StandardCharsets.UTF_8));
  }

  /** A payload no connector could relay (over the most payload.max.bytes allows) is refused. */
  @Test
  void aPayloadLargerThanAnyConnectorRelaysIsRefused() {
    OutboxMessage.requirePayloadSize(OutboxMessage.MAX_PAYLOAD_BYTES); // the largest: accepted
    assertThrows(
        IllegalArgumentException.class,
        () -> OutboxMessage.requirePayloadSize(OutboxMessage.MAX_PAYLOAD_BYTES + 1));
    // One allocation (and the builder's copy) to show build() checks it.
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> order().payload(new byte[OutboxMessage.MAX_PAYLOAD_BYTES + 1]).build());
    assertTrue(
        e.getMessage().startsWith("payload must be at most 104857600 bytes"), e.getMessage());
  }

  /**
   * A Jackson module on the classpath that fails to load (a mismatched version, a broken service
   * file) fails the JSON payload's mapper alone, saying so by class: not this class's
   * initialization, which made every later use of the writer a NoClassDefFoundError.
   */
  @Test
  void aModuleThatFailsToLoadFailsOnlyTheJsonPayloadsMapper() {
    OutboxMessage.LoadedMapper broken =
        OutboxMessage.LoadedMapper.of(
            () -> {
              throw new java.util.ServiceConfigurationError("com.example.BrokenModule: secret");
            });

    IllegalStateException e = assertThrows(IllegalStateException.class, broken::get);
    assertEquals(
        "jsonPayload: a Jackson module found on the classpath failed to load"
            + " (java.util.ServiceConfigurationError); payload(byte[]) needs no mapper",
        e.getMessage());
    assertNull(e.getCause(), "nothing of the failure's own message");
    OutboxMessage.LoadedMapper loaded = OutboxMessage.LoadedMapper.of(OutboxMessage::payloadMapper);
    assertEquals(loaded.mapper(), loaded.get());
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
    assertEveryTextFieldRefuses(
        "\0", " must not contain the character U+0000, which PostgreSQL text cannot hold");
  }

  /**
   * A blank correlation id is none: sent, it was an empty header no operator could select rows by;
   * refused, an application passing on an absent request header would fail its business change.
   */
  @Test
  void aBlankCorrelationIdIsNone() {
    for (String blank : new String[] {"", "  "}) {
      assertNull(order().correlationId(blank).build().correlationId());
    }
    assertEquals(" c-1", order().correlationId(" c-1").build().correlationId(), "kept as given");
  }

  /**
   * Every text field and header refuses a value holding {@code bad}, with an error naming the field
   * and then {@code rule}.
   */
  private static void assertEveryTextFieldRefuses(String bad, String rule) {
    Map<String, UnaryOperator<OutboxMessage.Builder>> fields =
        Map.of(
            "messageId", b -> b.messageId("m" + bad),
            "aggregateType", b -> b.aggregateType("order" + bad),
            "aggregateId", b -> b.aggregateId("o" + bad),
            "eventType", b -> b.eventType("P" + bad),
            "topic", b -> b.topic("t" + bad),
            "correlationId", b -> b.correlationId("c" + bad),
            "header tenant", b -> b.header("tenant", "acme" + bad),
            "a header name", b -> b.header("ten" + bad + "ant", "acme"));
    fields.forEach(
        (name, spoil) -> {
          IllegalArgumentException e =
              assertThrows(IllegalArgumentException.class, () -> spoil.apply(order()).build());
          assertEquals(name + rule, e.getMessage());
        });
  }

  /**
   * A lone UTF-16 surrogate is no character: the driver would store '?' in its place, so "order-" +
   * U+D800 and "order-?" would be one message id, and the second insert would be answered DUPLICATE
   * and lost. Refused in every text field, naming it; a proper pair is a character.
   */
  @Test
  void aSurrogateWithoutItsPairIsRefusedNamingTheField() {
    String rule =
        " must not contain a UTF-16 surrogate without its pair, which is no character: UTF-8"
            + " cannot hold it, and it would be stored as '?'";
    assertEveryTextFieldRefuses("\uD800", rule); // a high half alone
    assertEveryTextFieldRefuses("\uDC00", rule); // a low half alone
    assertEveryTextFieldRefuses("\uDC00\uD800", rule); // the halves in the wrong order
    // A pair (U+1F600) is one character, and stored as it is.
    assertEquals(
        "order-\uD83D\uDE00",
        order().messageId("order-\uD83D\uDE00").header("mood", "\uD83D\uDE00").build().messageId());
  }

  /**
   * The table's btree index on (instance_key, aggregate_id, seq) refuses a longer entry with
   * SQLState 54000 ({@link PostgresOutboxWriterDatabaseTest} shows the bound fits).
   */
  /** Instant.MAX, a likely "never", would fail the caller's transaction naming no field. */
  @Test
  void aDeadlineOutsideWhatTheTableStoresIsRefusedNamingTheField() {
    for (Instant deadline :
        List.of(Instant.MAX, Instant.MIN, Instant.parse("+10000-01-01T00:00:00Z"))) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class, () -> order().deliverBefore(deadline).build());
      assertTrue(e.getMessage().startsWith("deliverBefore must be between"), e.getMessage());
    }
    Instant latest = Instant.parse("9999-12-31T23:59:59Z");
    assertEquals(latest, order().deliverBefore(latest).build().deliverBefore());
    assertEquals(null, order().deliverBefore(null).build().deliverBefore());
  }

  @Test
  void anAggregateIdOver1024Utf8BytesIsRefusedNamingTheField() {
    String message = "aggregateId must be at most 1024 bytes in UTF-8";
    for (String tooLong :
        new String[] {
          "a".repeat(1025),
          "\u00e9".repeat(512) + "a", // 2 bytes each
          "\u20ac".repeat(341) + "ab", // 3 bytes each
          "\uD83D\uDE00".repeat(256) + "a", // 4 bytes each, 2 UTF-16 units
        }) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> order().aggregateId(tooLong).build());
      assertTrue(e.getMessage().startsWith(message), e.getMessage());
      assertFalse(e.getMessage().contains(tooLong.substring(0, 16)), "never echoes the value");
    }
    for (String longest :
        new String[] {
          "a".repeat(1024),
          "\u00e9".repeat(512),
          "\u20ac".repeat(341) + "a",
          "\uD83D\uDE00".repeat(256)
        }) {
      assertEquals(longest, order().aggregateId(longest).build().aggregateId());
    }
  }

  /**
   * An explicit topic the relay would not publish to would have the row recorded FAILED
   * (TOPIC_UNROUTABLE) after the business change committed: refused when building instead, by the
   * very rule the relay routes with ({@link TopicNames#isRoutable}).
   */
  @Test
  void anExplicitTopicTheRelayCouldNotPublishToIsRefusedNamingTheField() {
    for (String illegal :
        new String[] {
          "",
          "Orders/EU",
          "orders eu",
          ".",
          "..",
          "t".repeat(250),
          "__consumer_offsets",
          "__transaction_state",
        }) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> order().topic(illegal).build(),
              () -> "accepted [" + illegal + "]");
      assertEquals(
          "topic must be 1 to 249 characters of [a-zA-Z0-9._-], other than '.' and '..', and not"
              + " one of Kafka's internal topics, or null for the connector's template",
          e.getMessage());
      assertFalse(TopicNames.isRoutable(illegal), illegal);
    }
    for (String legal : new String[] {"orders", "Orders.EU-v1_2", "t".repeat(249), "__orders"}) {
      assertEquals(legal, order().topic(legal).build().topic());
    }
    assertNull(order().topic(null).build().topic(), "null: the connector's template");
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

  record Shipped(Instant at, LocalDate day, Duration took, java.util.Date legacy) {}

  /**
   * The mapper is built once, by whichever thread asks first: one whose context class loader cannot
   * see the application's jars (a pool thread in a Spring Boot fat jar) must still find the modules
   * this library's loader sees, or java.time would stay unsupported for the JVM's life.
   */
  @Test
  void thePayloadMapperFindsModulesThroughThisLibrarysLoaderNotTheFirstCallers() throws Exception {
    ObjectMapper[] built = {null};
    Thread pooled =
        new Thread(() -> built[0] = OutboxMessage.payloadMapper(), "context-sees-nothing");
    pooled.setContextClassLoader(new URLClassLoader(new URL[0], null));
    pooled.start();
    pooled.join();

    assertEquals(
        "\"2023-11-14T22:13:20Z\"",
        built[0].writeValueAsString(Instant.parse("2023-11-14T22:13:20Z")));
  }

  /** Nested as deep as the relay reads (900 levels), and one deeper, which it would park. */
  @Test
  void aPayloadNestedDeeperThanTheRelayReadsIsRefusedNamingTheLimit() {
    Object deepest = List.of();
    for (int level = 1; level < OutboxMessage.MAX_PAYLOAD_NESTING; level++) {
      deepest = List.of(deepest);
    }
    byte[] written = order().jsonPayload(deepest).build().payload();
    assertEquals(OutboxMessage.MAX_PAYLOAD_NESTING * 2, written.length, "[[...]] 900 deep");

    Object tooDeep = List.of(deepest);
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> order().jsonPayload(tooDeep));
    assertEquals(
        "payload nests deeper than 900 levels, more than the relay reads (PAYLOAD_INVALID_JSON)",
        e.getMessage());
    assertNull(e.getCause());

    Object pastJacksonsOwnLimit = tooDeep;
    for (int level = 901; level <= 1000; level++) {
      pastJacksonsOwnLimit = List.of(pastJacksonsOwnLimit);
    }
    Object deeperStill = pastJacksonsOwnLimit;
    assertEquals(
        e.getMessage(),
        assertThrows(IllegalArgumentException.class, () -> order().jsonPayload(deeperStill))
            .getMessage(),
        "Jackson's own limit (1,000) said the same way");
  }

  /** Brackets inside strings, escaped quotes and multi-byte characters do not count. */
  @Test
  void nestingIsCountedOutsideStrings() {
    assertEquals(
        4,
        OutboxMessage.nestingDepth(
            "{\"a\":\"[[{\\\"}\",\"ü[\":[1,{\"c\":[]}],\"d\":{}}"
                .getBytes(StandardCharsets.UTF_8)));
    assertEquals(0, OutboxMessage.nestingDepth("\"[{\"".getBytes(StandardCharsets.UTF_8)));
  }

  /**
   * Dates as ISO-8601 text: Jackson's default numbers (1700000000.123456789 for an Instant) are
   * decimals a double cannot carry, which a connector with payload.format=json would not publish.
   */
  @Test
  void jsonPayloadWritesDatesAndDurationsAsIsoText() {
    Instant at = Instant.parse("2023-11-14T22:13:20.123456789Z");
    OutboxMessage m =
        order()
            .jsonPayload(
                new Shipped(
                    at,
                    LocalDate.parse("2023-11-14"),
                    Duration.ofSeconds(3600, 1),
                    java.util.Date.from(Instant.parse("2023-11-14T22:13:20.123Z"))))
            .build();
    assertEquals(
        "{\"at\":\"2023-11-14T22:13:20.123456789Z\",\"day\":\"2023-11-14\","
            + "\"took\":\"PT1H0.000000001S\",\"legacy\":\"2023-11-14T22:13:20.123+00:00\"}",
        new String(m.payload(), StandardCharsets.UTF_8));
  }

  /** Numbers are the caller's: the library changes none of them (see jsonPayload's javadoc). */
  @Test
  void jsonPayloadWritesNumbersAsTheyAre() {
    assertEquals(
        "{\"exact\":12345678901234567890.5}",
        new String(
            order()
                .jsonPayload(Map.of("exact", new BigDecimal("12345678901234567890.5")))
                .build()
                .payload(),
            StandardCharsets.UTF_8));
  }

  /** Jackson cannot serialize it: no properties, no serializer. */
  static final class Opaque {}

  @Test
  void aPayloadJacksonCannotSerializeIsRejectedByJsonPayload() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> order().jsonPayload(new Opaque()));
    assertTrue(e.getMessage().startsWith("payload could not be serialized as JSON"), e::toString);
  }

  /** A value whose any-getter repeats a property's name: Jackson writes the member twice. */
  static final class Twice {
    public String getType() {
      return "OrderPlaced";
    }

    @JsonAnyGetter
    public Map<String, Object> extra() {
      return Map.of("type", "x");
    }
  }

  /**
   * The relay reads payloads strictly and would park a payload with a member twice
   * (PAYLOAD_INVALID_JSON) after the business change committed: refused when building instead.
   */
  @Test
  void aPayloadWithAMemberTwiceIsRejectedByJsonPayload() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> order().jsonPayload(new Twice()));
    assertTrue(e.getMessage().startsWith("payload could not be serialized as JSON"), e::toString);
    assertFalse(e.getMessage().contains("type"), e::toString);
    assertNull(e.getCause(), "Jackson's exception names the key: not kept as the cause");
  }

  /** A value whose getter fails with a message that quotes data. */
  static final class FailingGetter {
    public String getCard() {
      throw new IllegalStateException("card 4111-1111 not loaded");
    }
  }

  @Test
  void aGetterThatFailsLeavesNoTraceOfItsMessageInTheError() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> order().jsonPayload(new FailingGetter()));
    for (Throwable t = e; t != null; t = t.getCause()) {
      assertFalse(String.valueOf(t.getMessage()).contains("4111"), e::toString);
      assertEquals(0, t.getSuppressed().length);
    }
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
  void headersBecomeOneJsonObjectWhoseOrderTheJsonbColumnDoesNotKeep() {
    OutboxMessage m =
        order()
            .header("tenant", "acme")
            .traceparent(TRACEPARENT)
            .header("empty", null)
            .header("tenant", "acme-2")
            .build();
    // The builder's order, kept by this object only: the row's jsonb column stores the keys in an
    // order of its own (PostgresOutboxWriterDatabaseTest), and Kafka gets them in that order.
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

  /**
   * Message ids are taken as they are, line breaks and escape sequences included (the relay relays
   * them), but a log line that prints a message cannot be forged by one: toString escapes them as
   * the connector's log lines do ({@link Printable}), and so does an error naming a header.
   */
  @Test
  void toStringAndErrorsEscapeControlAndFormatCharacters() {
    OutboxMessage forged =
        order().messageId("o-1\r\nERROR forged").eventType("Placed\u202eecalP").build();
    assertEquals("o-1\r\nERROR forged", forged.messageId(), "the id is kept as given");
    assertEquals(
        "OutboxMessage[messageId=o-1\\u000d\\u000aERROR forged, eventType=Placed\\u202eecalP]",
        forged.toString());
    OutboxMessage terminal = order().messageId("\u001b[2J\u001b[31mo-2").build();
    assertEquals(
        "OutboxMessage[messageId=\\u001b[2J\\u001b[31mo-2, eventType=Placed]", terminal.toString());

    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> order().header("tenant\r\nERROR forged", "acme\0").build());
    assertEquals(
        "header tenant\\u000d\\u000aERROR forged must not contain the character U+0000, which"
            + " PostgreSQL text cannot hold",
        e.getMessage());
  }
}
