package dev.outboxrelay.mapping;

import static dev.outboxrelay.mapping.TestRows.row;
import static dev.outboxrelay.mapping.TestRows.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.outboxrelay.mapping.MappingResult.Mapped;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The JSON value through Kafka's real JsonConverter, schemas disabled, as a worker would. */
class JsonPayloadRoundTripTest {
  /** Reads floats as BigDecimal, so a comparison sees any change of a number's value. */
  private static final ObjectMapper EXACT =
      JsonMapper.builder().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS).build();

  /** Numbers equal when both are integers or both are not, and their values are equal. */
  private static final Comparator<JsonNode> SAME_JSON =
      (a, b) -> {
        if (a.isNumber() && b.isNumber()) {
          boolean sameKind = a.isIntegralNumber() == b.isIntegralNumber();
          return sameKind && a.decimalValue().compareTo(b.decimalValue()) == 0 ? 0 : 1;
        }
        return a.equals(b) ? 0 : 1;
      };

  private final RecordMapper mapper =
      new RecordMapper(
          new MappingSettings(
              "events", RoutingConvention.OUTBOX_RELAY, PayloadFormat.JSON, 1 << 20, null));
  private final JsonConverter converter = new JsonConverter();

  @BeforeEach
  void configureConverter() {
    converter.configure(Map.of("schemas.enable", "false"), false);
  }

  private SourceRecord map(String payload) {
    return assertInstanceOf(Mapped.class, mapper.map(row().payload(payload).build())).record();
  }

  private void assertSameJsonAfterConverter(String payload) throws IOException {
    SourceRecord record = map(payload);
    byte[] written =
        converter.fromConnectData(record.topic(), record.valueSchema(), record.value());

    JsonNode expected = EXACT.readTree(utf8(payload));
    JsonNode actual = EXACT.readTree(written);
    assertTrue(
        expected.equals(SAME_JSON, actual),
        () -> "converter wrote different JSON for " + payload + ": " + actual);
  }

  @Test
  void documentRoundTripsThroughJsonConverter() throws IOException {
    assertSameJsonAfterConverter(
        "{\"id\":17,\"name\":\"Zo\\u00eb \\u2713 \\\"quoted\\\"\\n\",\"total\":19.99,"
            + "\"tags\":[\"a\",null,true,false,[],{}],"
            + "\"nested\":{\"z\":1,\"a\":[1.5,-0.25,1.0E-5,{\"deep\":[[[\"x\"]]]}]},"
            + "\"nothing\":null,\"min\":-9223372036854775808,\"max\":9223372036854775807,"
            + "\"empty\":{},\"list\":[],\"unicode\":\"\uD83D\uDE00\"}");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "0",
        "-0",
        "0.0",
        "-0.0",
        "1.0",
        "1.10",
        "1e2",
        "1E-7",
        "0.1",
        "19.99",
        "123456789.123456",
        "1.7976931348623157e308",
        "-2.2250738585072014E-308",
        "4503599627370497",
        "\"a string\"",
        "true",
        "false",
        "[1,\"two\",3.5]",
      })
  void everyScalarAndNumberFormRoundTrips(String payload) throws IOException {
    assertSameJsonAfterConverter(payload);
  }

  /**
   * A decimal negative zero keeps its sign (read as a BigDecimal it was published as 0.0); an
   * integer -0 is 0, as no integer type has a negative zero.
   */
  @Test
  void aNegativeZeroKeepsItsSign() throws IOException {
    ObjectMapper doubles = new ObjectMapper();
    String payload =
        "{\"v\":-0.0,\"e\":-0e3,\"a\":[1.5,-0.000,{\"x/~y\":-0E-2}],\"z\":0.0,\"i\":-0,"
            + "\"n\":-0.5,\"k\":\"-0.0\"}";
    SourceRecord record = map(payload);
    JsonNode written =
        doubles.readTree(
            converter.fromConnectData(record.topic(), record.valueSchema(), record.value()));
    for (String at : List.of("/v", "/e", "/a/1", "/a/2/x~1~0y")) {
      assertEquals(
          Double.doubleToRawLongBits(-0.0),
          Double.doubleToRawLongBits(written.at(at).doubleValue()),
          () -> at + " in " + written);
    }
    assertEquals(
        Double.doubleToRawLongBits(0.0),
        Double.doubleToRawLongBits(written.at("/z").doubleValue()));
    assertEquals(0L, written.at("/i").longValue());
    assertTrue(written.at("/i").isIntegralNumber());
    assertEquals(-0.5, written.at("/n").doubleValue());
    assertEquals("-0.0", written.at("/k").textValue());

    // A second read only where a negative zero may be: not for negative fractions, nor dates.
    for (String none : List.of("[-0.5]", "[-0.0025]", "{\"d\":\"2026-07-01\"}", "[-1.0]")) {
      assertFalse(JsonValues.mayHoldNegativeZero(none), none);
    }
    for (String some : List.of("[-0.00]", "-0e3", "[-0.0E1]", "-0.")) {
      assertTrue(JsonValues.mayHoldNegativeZero(some), some);
    }

    SourceRecord root = map("-0.0");
    assertEquals(
        Double.doubleToRawLongBits(-0.0), Double.doubleToRawLongBits((Double) root.value()));
  }

  @Test
  void valueIsSchemalessWithMapsListsLongsAndDoublesInMemberOrder() {
    SourceRecord record = map("{\"z\":1,\"a\":[2.5,\"s\",null],\"m\":{\"k\":false}}");

    assertNull(record.valueSchema());
    Map<?, ?> value = assertInstanceOf(Map.class, record.value());
    assertEquals(List.of("z", "a", "m"), List.copyOf(value.keySet()));
    assertEquals(1L, value.get("z"));
    assertInstanceOf(Long.class, value.get("z"));
    List<?> array = assertInstanceOf(List.class, value.get("a"));
    assertInstanceOf(Double.class, array.get(0));
    assertEquals(2.5, array.get(0));
    assertEquals("s", array.get(1));
    assertNull(array.get(2));
    assertEquals(Map.of("k", false), value.get("m"));
  }

  /**
   * Schemaless, a surrogate without its pair is kept: JsonConverter writes it back as the same
   * escape, where Avro and Protobuf (an inferred schema) would write '?'.
   */
  @Test
  void aSurrogateWithoutItsPairIsWrittenBackAsItsEscape() throws IOException {
    String payload = "{\"\\ud83d\":\"a\\uDE00\"}";
    assertSameJsonAfterConverter(payload);
    SourceRecord record = map(payload);
    byte[] written =
        converter.fromConnectData(record.topic(), record.valueSchema(), record.value());
    assertEquals("{\"\\uD83D\":\"a\\uDE00\"}", new String(written, StandardCharsets.UTF_8));
  }

  @Test
  void jsonNullIsATombstone() {
    SourceRecord record = map(" null ");

    assertNull(record.value());
    assertNull(converter.fromConnectData(record.topic(), record.valueSchema(), record.value()));
  }
}
