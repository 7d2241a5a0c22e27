package dev.outboxrelay.mapping;

import static dev.outboxrelay.mapping.TestRows.row;
import static dev.outboxrelay.mapping.UnpublishableReasons.RECORD_TOO_LARGE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.outboxrelay.mapping.InferredSchema.NullMembers;
import dev.outboxrelay.mapping.MappingResult.Mapped;
import dev.outboxrelay.mapping.MappingResult.Unpublishable;
import dev.outboxrelay.testing.DebeziumOutboxTable.DebeziumRow;
import dev.outboxrelay.testing.EventRouterReference;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.StringConverter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code payload.json.schema=inferred} against Debezium's real outbox event router with {@code
 * table.expand.json.payload=true} (run in-process): where the router expands a payload, a consumer
 * reading through JsonConverter with schemas sees the same schema and the same value from both.
 * Where the router fails or drops data, the relay keeps the data or parks the row.
 */
class InferredSchemaTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Payloads the router expands the same way on every run. */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"a\":1,\"b\":\"x\",\"c\":true,\"d\":1.5,\"f\":{\"g\":1},\"h\":[1,2],\"i\":9999999999}",
        "{\"id\":\"o-1\",\"customer\":{\"name\":\"Zoë\",\"vip\":true},\"lines\":[\"book\",\"pen\"]}",
        "{\"neg\":-5,\"min\":-2147483648,\"below\":-2147483649,\"e\":1e2,\"one\":1.0,\"f\":-0.25}",
        "{\"long\":-9223372036854775808,\"max\":9223372036854775807}",
        "{}",
        "{\"empty\":{},\"deep\":{\"er\":{\"est\":{}}}}",
        "{\"n\":null,\"list\":[],\"kept\":1}",
        "{\"n\":[null,1,null],\"s\":[\"a\",null]}",
        "{\"o\":[{\"x\":1},{\"x\":2}]}",
        "{\"o\":[{\"x\":1},{\"y\":\"s\"}]}",
        "{\"o\":[{\"y\":1,\"x\":1},{\"x\":2,\"z\":true}]}",
        "{\"o\":[{\"x\":null},{\"x\":2}]}",
        "{\"o\":[{\"x\":[]},{\"x\":[1]}]}",
        "{\"o\":[{}]}",
        "{\"aa\":[[1,2],[3]],\"bb\":[[\"x\"]]}",
        "{\"nested\":{\"deep\":{\"x\":[{\"a\":[{\"b\":1}]}]}}}",
        "{\"a-b\":1,\"1x\":2,\"ü\":\"✓ \\\"q\\\"\\n\"}",
        "{\"s\":[\"a\",\"b\"],\"b\":[true,false],\"f\":[1.5,2.5]}",
        // The router types an array of arrays by its first: a required struct, values all kept.
        "{\"aa\":[[{\"a\":1},{\"b\":1}],[{\"a\":2}]]}",
        "{\"m\":[[{\"i\":1}],[{},{\"i\":2}]]}",
        // Under a nameless parent (an array in an array) a name of blanks is no parent either.
        "{\"aa\":[[{\"\\u0001\":{\"b\":{\"c\":1}}}]]}",
        "{\"aa\":[[{\"\\u2003\":{\"b\":{\"c\":1}}}]]}"
      })
  void aConsumerSeesWhatTheEventRouterExpanded(String payload) throws IOException {
    for (NullMembers nulls : NullMembers.values()) {
      assertEquals(
          normalized(debezium(payload, nulls)),
          normalized(relay(payload, nulls)),
          () -> "null members " + nulls + ", payload " + payload);
    }
  }

  /** Under optional_bytes a null member is an optional bytes field; an array of nulls too. */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"n\":null,\"kept\":1}",
        "{\"arr\":[null]}",
        "{\"o\":[{\"x\":null},{\"x\":2}],\"p\":[{\"y\":null}]}"
      })
  void nullMembersAsOptionalBytesAsTheEventRouterHasThem(String payload) throws IOException {
    assertEquals(
        normalized(debezium(payload, NullMembers.OPTIONAL_BYTES)),
        normalized(relay(payload, NullMembers.OPTIONAL_BYTES)));
  }

  @Test
  void structsAreNamedAfterThePayloadColumnAndTheirPath() {
    Struct value =
        inferred(
            "{\"customer\":{\"address\":{\"city\":\"Oslo\"}},\"lines\":[{\"sku\":\"b\"}]}",
            new InferredSchema("body", NullMembers.IGNORE));
    Schema schema = value.schema();
    assertEquals("body", schema.name());
    assertTrue(schema.isOptional());
    Schema customer = schema.field("customer").schema();
    assertEquals("body.customer", customer.name());
    assertEquals("body.customer.address", customer.field("address").schema().name());
    assertEquals("body.lines", schema.field("lines").schema().valueSchema().name());
  }

  @Test
  void anInt32AndAnInt64InOneArrayWidenToInt64() {
    // The router fails on this array ("different number types") and sends the payload as text.
    Struct value = inferred("{\"ids\":[1,10000000000],\"o\":[{\"n\":1},{\"n\":10000000000}]}");
    assertEquals(Schema.Type.INT64, value.schema().field("ids").schema().valueSchema().type());
    assertEquals(List.of(1L, 10_000_000_000L), value.getArray("ids"));
    List<Struct> objects = value.getArray("o");
    assertEquals(10_000_000_000L, objects.get(1).getInt64("n"));
    assertEquals(1L, objects.get(0).getInt64("n"));
  }

  @Test
  void objectsInAnArrayMergeAtEveryDepthSoNoMemberIsLost() {
    // The router merges one level only: the third element's z.r would be dropped.
    Struct value =
        inferred("{\"o\":[{\"y\":1,\"x\":1},{\"x\":2,\"z\":{\"q\":1}},{\"z\":{\"r\":true}}]}");
    Schema element = value.schema().field("o").schema().valueSchema();
    assertEquals(List.of("y", "x", "z"), names(element));
    assertEquals(List.of("q", "r"), names(element.field("z").schema()));
    assertFalse(element.isOptional(), "a merged element struct is required, as the router's");
    List<Struct> objects = value.getArray("o");
    assertEquals(true, objects.get(2).getStruct("z").getBoolean("r"));
    assertNull(objects.get(2).getStruct("z").get("q"));
    assertEquals(1, objects.get(1).getStruct("z").getInt32("q"));
  }

  @Test
  void arraysOfArraysMergeTheirElementsToo() {
    // The router takes the first inner array's element type, and fails on the second here.
    Struct value = inferred("{\"aa\":[[1],[10000000000]],\"oo\":[[{\"a\":1}],[{\"b\":2}]]}");
    assertEquals(List.of(List.of(1L), List.of(10_000_000_000L)), value.getArray("aa"));
    Schema inner = value.schema().field("oo").schema().valueSchema().valueSchema();
    assertEquals(List.of("a", "b"), names(inner));
  }

  @Test
  void anArrayWithANullElementKeepsItsMergedStructOptional() throws IOException {
    // Required, the null element would make the converter refuse the record.
    String payload = "{\"o\":[null,{\"a\":1},{\"b\":2}]}";
    Struct value = inferred(payload);
    assertTrue(value.schema().field("o").schema().valueSchema().isOptional());
    assertTrue(relay(payload, NullMembers.IGNORE).contains("\"payload\":{\"o\":[null,"));
  }

  @Test
  void integersBesideDecimalsWidenToFloat64WhenEveryOneIsExact() {
    // The router fails on [1, 1.5], and on the objects' price when it meets 20 after 19.99.
    Struct value = inferred("{\"m\":[1,1.5],\"lines\":[{\"price\":19.99},{\"price\":20}]}");
    assertEquals(List.of(1.0, 1.5), value.getArray("m"));
    List<Struct> lines = value.getArray("lines");
    assertEquals(20.0, lines.get(1).getFloat64("price"));
    assertEquals(
        Schema.Type.FLOAT64,
        value.schema().field("lines").schema().valueSchema().field("price").schema().type());
  }

  /** A decimal negative zero keeps its sign in a struct too, beside integers widened or not. */
  @Test
  void aNegativeZeroKeepsItsSignInAStruct() {
    Struct value = inferred("{\"v\":-0.0,\"m\":[1,-0.0]}");
    assertEquals(
        Double.doubleToRawLongBits(-0.0), Double.doubleToRawLongBits(value.getFloat64("v")));
    List<Double> m = value.getArray("m");
    assertEquals(Double.doubleToRawLongBits(-0.0), Double.doubleToRawLongBits(m.get(1)));
  }

  /** Merged, the null element beside it must stay possible, at any depth. */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"o\":[{\"z\":[{\"a\":1},{\"b\":1}]},{\"z\":[null]}]}",
        "{\"aa\":[[{\"a\":1},{\"b\":1}],[null]]}"
      })
  void aNullElementAnywhereBesideAMergedStructKeepsItOptional(String payload) {
    for (NullMembers nulls : NullMembers.values()) {
      assertTrue(relay(payload, nulls).contains("null]"), () -> nulls + " " + payload);
    }
  }

  /**
   * Under optional_bytes an array with no type of its own beside a null (a null element, or a null
   * member in another of an array's objects) is an array of optional bytes, as an array of nulls
   * is: its nulls and empty arrays are kept. Under ignore it is left out, as nulls are.
   */
  @Test
  void anUntypedArrayBesideNullsIsAnArrayOfOptionalBytesUnderOptionalBytes() throws IOException {
    String member = "{\"d\":[{\"a\":null},{\"a\":[]}]}";
    assertEquals(
        JSON.readTree("{\"d\":[{\"a\":null},{\"a\":[]}]}"),
        JSON.readTree(schemaless(member, NullMembers.OPTIONAL_BYTES)));
    for (String element :
        List.of(
            "{\"x\":[null,[]],\"y\":[{\"c\":[null]},{\"c\":[[],[]]}]}",
            // At any depth.
            "{\"x\":[null,[[]]]}",
            "{\"y\":[{\"c\":null},{\"c\":[[]]}]}",
            "{\"y\":[{\"c\":null},{\"c\":[[],[]]}]}")) {
      assertEquals(
          JSON.readTree(element),
          JSON.readTree(schemaless(element, NullMembers.OPTIONAL_BYTES)),
          element);
    }
    assertEquals(
        JSON.readTree("{\"d\":[{},{}],\"y\":[{},{}]}"),
        JSON.readTree(schemaless(member.replace("}]}", "}],\"y\":[{},{}]}"), NullMembers.IGNORE)));
  }

  /**
   * Deep and wide at once: values are filled in top-down and schemas built once per shape, so the
   * work grows with the payload, not with its depth times its size (Connect validates what is put
   * into a struct all the way down).
   */
  @Test
  void aDeepPayloadWithAWideBottomMaps() {
    StringBuilder bottom = new StringBuilder("{");
    for (int i = 0; i < 20_000; i++) {
      bottom.append(i == 0 ? "" : ",").append("\"m").append(i).append("\":").append(i);
    }
    bottom.append('}');
    String payload = "{\"a\":[".repeat(200) + bottom + ",{}]}".repeat(200);
    Struct value = inferred(payload);
    assertEquals(2, value.getArray("a").size());
  }

  /** Never an exception out of map(): an empty array and nulls under optional_bytes. */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"a\":[[],null]}",
        "{\"o\":[{\"x\":[]},{\"x\":null}]}",
        "{\"o\":[{\"x\":null},{\"x\":[]}]}"
      })
  void anEmptyArrayBesideNullsIsNeverReadAsBytes(String payload) {
    MappingResult result = mapper(NullMembers.OPTIONAL_BYTES).map(row().payload(payload).build());
    if (result instanceof Mapped mapped) {
      withSchemas().fromConnectData("t", mapped.record().valueSchema(), mapped.record().value());
    } else {
      assertEquals(
          UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE, ((Unpublishable) result).reasonCode());
    }
  }

  /**
   * Objects of one array with different members each: every struct has all of them, so 20,000
   * objects of one member (about 250 KB) would be 400 million members. Parked as too large, once
   * the filled-in members alone pass the record limit, before they fill the heap.
   */
  @Test
  void anArrayOfObjectsWithDifferentMembersEachIsParkedWhenItsValueOutgrowsTheRecord() {
    assertEquals(RECORD_TOO_LARGE, parkedFor(objectsWithOwnMembers(20_000)));
    assertEquals(RECORD_TOO_LARGE, parkedFor(objectsWithOwnMembers(400)));
    Struct small = inferred(objectsWithOwnMembers(100));
    assertEquals(100, small.getArray("o").size());
  }

  private static String objectsWithOwnMembers(int count) {
    StringBuilder json = new StringBuilder("{\"o\":[");
    for (int i = 0; i < count; i++) {
      json.append(i == 0 ? "" : ",").append("{\"k").append(i).append("\":1}");
    }
    return json.append("]}").toString();
  }

  /**
   * Each struct is named by its path, so names grow with the depth squared: 439 levels of members
   * named with 2,000 characters (a payload of 880 KB) would name their structs with 190 million.
   * Parked once the names alone pass the record limit, before they fill the heap.
   */
  @Test
  void structNamesLongerThanARecordAreParked() {
    String member = "{\"" + "m".repeat(2_000) + "\":";
    assertEquals(RECORD_TOO_LARGE, parkedFor(member.repeat(439) + "{}" + "}".repeat(439)));
    Struct shallow = inferred(member.repeat(3) + "{}" + "}".repeat(3));
    assertEquals(1, shallow.schema().fields().size());
  }

  /**
   * A value grows in a converter beyond the payload's text: an integer widened to a double gains
   * ".0" in JsonConverter, and Avro writes every double in eight bytes and an optional value's
   * union index in one. 300,000 ones beside a half (600 KB) would be a record of 1.2 MB or more.
   */
  @Test
  void valuesThatGrowPastTheRecordInAConverterAreParked() {
    String payload = "{\"m\":[0.5" + ",1".repeat(300_000) + "]}";
    assertEquals(RECORD_TOO_LARGE, parkedFor(payload));
    RecordMapper roomy = mapper(new InferredSchema("payload", NullMembers.IGNORE), 4 << 20);
    assertInstanceOf(Mapped.class, roomy.map(row().payload(payload).build()), "within 4 MiB");
  }

  /**
   * Avro writes an optional array as a union index, a block count and an end marker, a byte more
   * than its brackets: 90,000 elements [[[[0]]]] (900 KB of JSON) take 14 bytes each there, 1.26 MB
   * in all, which the producer would refuse. Counted at 11 bytes each, the record passed.
   */
  @Test
  void arraysThatGrowPastTheRecordInAvroAreParked() {
    String payload = "{\"m\":[[[[[0]]]]" + ",[[[[0]]]]".repeat(89_999) + "]}";
    assertEquals(RECORD_TOO_LARGE, parkedFor(payload));
    RecordMapper roomy = mapper(new InferredSchema("payload", NullMembers.IGNORE), 2 << 20);
    assertInstanceOf(Mapped.class, roomy.map(row().payload(payload).build()), "within 2 MiB");
  }

  /**
   * A character outside the Basic Multilingual Plane (an emoji) is four bytes in the payload and
   * twelve as a JSON converter writes it (two escapes): 200,000 of them, 800 KB of payload, are 2.4
   * MB through JsonConverter with schemas, which the producer would refuse at every claim of the
   * row. In a member's name too.
   */
  @Test
  void charactersAJsonConverterEscapesGrowPastTheRecordAndAreParked() {
    String emoji = new String(Character.toChars(0x1F600));
    String payload = "{\"m\":\"" + emoji.repeat(200_000) + "\"}";
    assertEquals(RECORD_TOO_LARGE, parkedFor(payload));
    RecordMapper roomy = mapper(new InferredSchema("payload", NullMembers.IGNORE), 4 << 20);
    SourceRecord record =
        assertInstanceOf(Mapped.class, roomy.map(row().payload(payload).build())).record();
    assertTrue(
        withSchemas().fromConnectData("t", record.valueSchema(), record.value()).length
            > MappingSettings.DEFAULT_RECORD_MAX_BYTES,
        "as the converter writes it, over the default limit");

    String name = "{\"" + emoji.repeat(200_000) + "\":1}";
    assertEquals(RECORD_TOO_LARGE, parkedFor(name));
  }

  /**
   * A member that some objects of an array lack is written as {@code "name":null} into each of
   * them, escaped as JsonConverter escapes it: a name of 100 emoji (400 bytes, 1,200 escaped)
   * filled into 2,000 objects is 2.4 MB of a 6 KB payload, counted at 0.8 MB by the name's bytes; a
   * name of 200 control characters likewise.
   */
  @Test
  void aFilledInMemberIsCountedAsJsonConverterEscapesItsName() {
    String emoji = new String(Character.toChars(0x1F600));
    for (String name : List.of(emoji.repeat(100), "\\u0001".repeat(200))) {
      String payload = "{\"arr\":[{\"" + name + "\":1}" + ",{}".repeat(2_000) + "]}";
      MappingResult result =
          jsonMapper(ConverterKind.JSON, MappingSettings.DEFAULT_RECORD_MAX_BYTES)
              .map(row().payload(payload).build());
      assertEquals(
          RECORD_TOO_LARGE,
          assertInstanceOf(Unpublishable.class, result, name.substring(0, 6)).reasonCode());
    }
  }

  /**
   * JsonConverter with schemas writes the inferred schema into every record, a path name per
   * struct: 20,000 members (220 KB of payload) take about a megabyte of schema, and 450 levels of
   * 9-character members (5 KB) name their structs with a megabyte. Counted as the converter writes
   * it, exactly, so both are parked where the producer would refuse them at every claim.
   */
  @Test
  void theSchemaJsonConverterWritesIntoEachRecordIsCounted() {
    StringBuilder wide = new StringBuilder("{");
    for (int i = 0; i < 20_000; i++) {
      wide.append(i == 0 ? "" : ",").append(String.format("\"k%05d\":1", i));
    }
    String widePayload = wide.append("}").toString();
    String member = "{\"aaaaaaaaa\":";
    String deepPayload = member.repeat(449) + "{}" + "}".repeat(449);
    for (String payload : List.of(widePayload, deepPayload)) {
      RecordMapper schemaless = jsonMapper(ConverterKind.JSON, 4 << 20);
      SourceRecord record =
          assertInstanceOf(Mapped.class, schemaless.map(row().payload(payload).build())).record();
      byte[] withSchema = withSchemas().fromConnectData("t", record.valueSchema(), record.value());
      assertTrue(withSchema.length > MappingSettings.DEFAULT_RECORD_MAX_BYTES, "over the limit");

      RecordMapper enveloped =
          jsonMapper(ConverterKind.JSON_WITH_SCHEMAS, MappingSettings.DEFAULT_RECORD_MAX_BYTES);
      assertEquals(
          RECORD_TOO_LARGE,
          assertInstanceOf(Unpublishable.class, enveloped.map(row().payload(payload).build()))
              .reasonCode());
      RecordMapper bare = jsonMapper(ConverterKind.JSON, MappingSettings.DEFAULT_RECORD_MAX_BYTES);
      assertInstanceOf(
          Mapped.class, bare.map(row().payload(payload).build()), "the schema takes it over");
    }
  }

  /**
   * With an Avro value converter, two different structs of one name are parked: Avro defines a name
   * once, and its registration failed the task at every claim of the row. An array's objects in an
   * array are unnamed, so their members' structs are named by the member alone. Other converters
   * take both; one name with the same fields is one definition.
   */
  @Test
  void twoDifferentStructsOfOneNameAreParkedForAnAvroConverter() {
    for (InferredSchema converter :
        List.of(
            new InferredSchema("payload", NullMembers.IGNORE, true),
            new InferredSchema("payload", NullMembers.IGNORE, false, true))) { // scrubbing names
      twoDifferentStructsOfOneNameAreParked(mapper(converter));
    }
  }

  /**
   * A converter that scrubs names (Confluent's Avro or Protobuf converter with {@code
   * scrub.invalid.names}) turns "a-b" into "a_b" and "1st" into "x1st": two members, or two
   * structs, whose names scrub to one are parked, as the converter would refuse the schema (a
   * duplicate field, a name defined twice) at every claim of the row, quoting the names. A name
   * that scrubs to no other's passes.
   */
  @Test
  void namesThatScrubToOneAreParkedForAConverterThatScrubs() {
    for (InferredSchema scrubbing :
        List.of(
            new InferredSchema("payload", NullMembers.IGNORE, false, true),
            InferredSchema.forProtobuf("payload", NullMembers.IGNORE, true))) {
      for (String payload :
          List.of(
              "{\"a-b\":1,\"a_b\":2}",
              "{\"1st\":1,\"x1st\":2}",
              "{\"\u00e9\":1,\"x_C3_A9\":2}",
              "{\"o\":{\"a-b\":{\"x\":1},\"a_b\":{\"y\":\"s\"}}}")) {
        MappingResult result = mapper(scrubbing).map(row().payload(payload).build());
        assertEquals(
            UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE,
            assertInstanceOf(Unpublishable.class, result, payload).reasonCode(),
            payload);
        assertInstanceOf(
            Mapped.class, mapper(NullMembers.IGNORE).map(row().payload(payload).build()), payload);
      }
      assertInstanceOf(
          Mapped.class,
          mapper(scrubbing).map(row().payload("{\"a-b\":1,\"c\":{\"a-b\":2}}").build()),
          "one name per struct");
    }
  }

  /**
   * Two structs whose names scrub to one are one name to a scrubbing Avro converter, split into
   * parts as it splits them: "payload.a." is "payload.a", and "payload.." the root's "payload".
   */
  @Test
  void structsWhoseNamesScrubToOneAreParkedForAScrubbingAvroConverter() {
    RecordMapper scrubbing = mapper(new InferredSchema("payload", NullMembers.IGNORE, false, true));
    for (String payload :
        List.of(
            "{\"a\":[[{\"b-c\":{\"x\":1}}]],\"d\":[[{\"b_c\":{\"y\":\"s\"}}]]}",
            "{\"a.\":{\"x\":1},\"a\":{\"y\":\"s\"}}",
            "{\".\":{\"x\":1}}",
            "{\"a\":[[{\"int.\":{\"x\":1}}]]}")) {
      assertEquals(
          UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE,
          assertInstanceOf(
                  Unpublishable.class, scrubbing.map(row().payload(payload).build()), payload)
              .reasonCode(),
          payload);
      assertInstanceOf(
          Mapped.class, mapper(NullMembers.IGNORE).map(row().payload(payload).build()), payload);
    }
  }

  private void twoDifferentStructsOfOneNameAreParked(RecordMapper avro) {
    for (String payload :
        List.of(
            "{\"a\":[[{\"item\":{\"id\":1}}]],\"b\":[[{\"item\":{\"sku\":\"x\"}}]]}",
            "{\"a\":[[{\"payload\":{\"x\":1}}]]}")) {
      MappingResult result = avro.map(row().payload(payload).build());
      assertEquals(
          UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE,
          assertInstanceOf(Unpublishable.class, result, payload).reasonCode(),
          payload);
      assertInstanceOf(
          Mapped.class, mapper(NullMembers.IGNORE).map(row().payload(payload).build()), payload);
    }
    // Named as an Avro primitive type without a namespace: Avro refuses the name itself.
    for (String payload :
        List.of("{\"a\":[[{\"int\":{\"x\":1}}]]}", "{\"a\":[[{\"string\":{}}]]}")) {
      assertEquals(
          UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE,
          assertInstanceOf(Unpublishable.class, avro.map(row().payload(payload).build()), payload)
              .reasonCode(),
          payload);
    }
    String namespaced =
        "{\"int\":{\"x\":1},\"a\":[{\"string\":{}}]}"; // payload.int, payload.a.string
    assertInstanceOf(Mapped.class, avro.map(row().payload(namespaced).build()), namespaced);
    String sameFields = "{\"a\":[[{\"item\":{\"id\":1}}]],\"b\":[[{\"item\":{\"id\":2}}]]}";
    assertInstanceOf(Mapped.class, avro.map(row().payload(sameFields).build()), sameFields);
  }

  /** {@code payload} parked as uninferable by {@code mapper}, and mapped by a plain one. */
  private static void assertParkedOnlyFor(RecordMapper mapper, String payload) {
    assertEquals(
        UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE,
        assertInstanceOf(Unpublishable.class, mapper.map(row().payload(payload).build()), payload)
            .reasonCode(),
        payload);
    assertInstanceOf(
        Mapped.class, mapper(NullMembers.IGNORE).map(row().payload(payload).build()), payload);
  }

  /**
   * With Confluent's Protobuf value converter, what it refuses at every claim of the row is parked:
   * a member name that is not a Protobuf identifier (unless it scrubs names), a null element of an
   * array (a NullPointerException in the converter) and an array of arrays ("Array cannot be
   * nested"). Other converters take them all.
   */
  @Test
  void whatAProtobufConverterRefusesIsParkedForIt() {
    RecordMapper protobuf =
        mapper(InferredSchema.forProtobuf("payload", NullMembers.IGNORE, false));
    RecordMapper scrubbing =
        mapper(InferredSchema.forProtobuf("payload", NullMembers.IGNORE, true));
    for (String payload :
        List.of(
            "{\"order-id\":1}",
            "{\"1st\":1}",
            "{\"gr\u00f6\u00dfe\":1}",
            "{\"o\":{\"a.b\":1}}",
            "{\"tags\":[\"a\",null]}",
            "{\"m\":[null]}",
            "{\"m\":[[1,2],[3]]}",
            "{\"m\":[{\"n\":[[]]}]}")) {
      assertParkedOnlyFor(protobuf, payload);
    }
    for (String payload : List.of("{\"order-id\":1}", "{\"1st\":1}")) {
      assertInstanceOf(Mapped.class, scrubbing.map(row().payload(payload).build()), payload);
    }
    String arrays = "{\"m\":[[1]]}";
    assertInstanceOf(Unpublishable.class, scrubbing.map(row().payload(arrays).build()), arrays);

    String taken =
        "{\"x_1\":1,\"_x\":2,\"Tags\":[\"a\",\"b\"],\"o\":{\"i\":[1]},\"e\":[],\"n\":null}";
    assertInstanceOf(Mapped.class, protobuf.map(row().payload(taken).build()), taken);
  }

  /**
   * Confluent's Protobuf converter defines each struct member's message type in its parent's
   * message, named as the struct's last name part plus "Message" where that is the member's name: a
   * type named as another member, or two types of one name, fail the descriptor at every claim.
   */
  @Test
  void protobufMessageTypesNamedAsAFieldOrAsEachOtherAreParked() {
    RecordMapper protobuf =
        mapper(InferredSchema.forProtobuf("payload", NullMembers.IGNORE, false));
    RecordMapper scrubbing =
        mapper(InferredSchema.forProtobuf("payload", NullMembers.IGNORE, true));
    for (String payload :
        List.of(
            "{\"error\":{\"code\":1},\"errorMessage\":\"timeout\"}",
            "{\"items\":[{\"a\":1}],\"itemsMessage\":1}",
            "{\"o\":{\"items\":[{\"a\":1}],\"itemsMessage\":{\"b\":2}}}",
            "{\"data\":{\"data\":{\"id\":1}}}",
            "{\"items\":[{\"items\":[{\"a\":1}]}]}")) {
      assertParkedOnlyFor(protobuf, payload);
    }
    String dotted = "{\"x.item\":{\"id\":1},\"y.item\":{\"sku\":\"s\"}}";
    assertInstanceOf(Unpublishable.class, scrubbing.map(row().payload(dotted).build()), dotted);
    for (String taken :
        List.of(
            "{\"error\":{\"code\":1},\"message\":\"timeout\"}",
            "{\"a\":{\"item\":{\"id\":1}},\"b\":{\"item\":{\"sku\":\"s\"}}}",
            "{\"items\":[{\"a\":1}],\"other\":[{\"b\":1}]}",
            "{\"data\":{\"inner\":{\"data\":{\"id\":1}}}}")) {
      assertInstanceOf(Mapped.class, protobuf.map(row().payload(taken).build()), taken);
    }
  }

  /**
   * With an Avro value converter, a member name that is not an Avro name is parked: the converter
   * would refuse it and fail the task at every claim of the row. A null member left out names no
   * field; other converters take any name.
   */
  @Test
  void membersThatAreNoAvroNamesAreParkedForAnAvroConverter() {
    RecordMapper avro = mapper(new InferredSchema("payload", NullMembers.IGNORE, true));
    for (String payload :
        List.of(
            "{\"order-id\":1}",
            "{\"1st\":true}",
            "{\"x.y\":{\"z\":1}}",
            "{\"a\":{\"b c\":\"d\"}}",
            "{\"a\":[{\"x$\":1}]}",
            "{\"\":1}")) {
      MappingResult result = avro.map(row().payload(payload).build());
      assertEquals(
          UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE,
          assertInstanceOf(Unpublishable.class, result, payload).reasonCode(),
          payload);
    }
    for (String payload :
        List.of(
            "{\"ok_1\":{\"_b\":[{\"C9\":1}]},\"not-named\":null}",
            "{\"left-out\":[],\"nulls-only\":[null]}", // no field: the converter sees no name
            "{\"caf\u00e9\":1}", // a letter of any script, as Avro's Java library takes it
            "{}")) {
      assertInstanceOf(Mapped.class, avro.map(row().payload(payload).build()), payload);
    }
    assertInstanceOf(
        Mapped.class,
        mapper(NullMembers.IGNORE).map(row().payload("{\"order-id\":1}").build()),
        "any name for other converters");
  }

  /** The schema's text as JsonConverter writes it, to the byte, for what inference builds. */
  @Test
  void theSchemaTextIsWhatJsonConverterWrites() {
    String emoji = new String(Character.toChars(0x1F600));
    for (String payload :
        List.of(
            "{\"a\":1,\"b\":[{\"c\":\"x\",\"d\":null},{\"c\":\"y\",\"g\":2.5}],\"e\":{\"f\":true}}",
            "{\"q\\\"" + emoji + "\\n\":{\"r\":[[1,2],[3]],\"s\":9007199254740993}}",
            "{}")) {
      for (NullMembers nulls : NullMembers.values()) {
        SourceRecord record =
            assertInstanceOf(
                    Mapped.class,
                    mapper(new InferredSchema("payload", nulls))
                        .map(row().payload(payload).build()))
                .record();
        JsonConverter schemaless = new JsonConverter();
        schemaless.configure(Map.of("schemas.enable", "false"), false);
        long schemaAndEnvelope =
            withSchemas().fromConnectData("t", record.valueSchema(), record.value()).length
                - schemaless.fromConnectData("t", record.valueSchema(), record.value()).length;
        assertEquals(
            schemaAndEnvelope,
            JsonConverterSize.growth(ConverterKind.JSON_WITH_SCHEMAS, record, null, 0),
            payload + " " + nulls);
      }
    }
  }

  private static RecordMapper jsonMapper(ConverterKind converter, int recordMaxBytes) {
    return new RecordMapper(
        new MappingSettings("events", RoutingConvention.DEBEZIUM, PayloadFormat.JSON, 1 << 20, null)
            .withRecordMaxBytes(recordMaxBytes)
            .withValueConverter(converter)
            .withInferredSchema(new InferredSchema("payload", NullMembers.IGNORE)));
  }

  /** Deeper, JsonConverter with schemas (two levels per struct) passes Jackson's 1,000 levels. */
  @Test
  void objectsNestedDeeperThanASchemaCanBeWrittenAreParked() {
    assertEquals(UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE, parkedFor(nested(452)));
    Struct deep = inferred(nested(451));
    withSchemas().fromConnectData("t", deep.schema(), deep);
  }

  /**
   * With an Avro converter (scrubbing names or not), half as deep: its schema text nests twice as
   * deep as JsonConverter's, and past Jackson's 1,000 levels the converter failed the task at every
   * claim of the row.
   */
  @Test
  void objectsNestedDeeperThanAnAvroSchemaCanBeWrittenAreParkedForAnAvroConverter() {
    for (InferredSchema avro :
        List.of(
            new InferredSchema("payload", NullMembers.IGNORE, true),
            new InferredSchema("payload", NullMembers.IGNORE, false, true))) {
      RecordMapper mapper = mapper(avro);
      MappingResult deeper = mapper.map(row().payload(nested(227)).build());
      assertEquals(
          UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE,
          assertInstanceOf(Unpublishable.class, deeper).reasonCode());
      assertInstanceOf(Mapped.class, mapper.map(row().payload(nested(226)).build()));
    }
    assertInstanceOf(
        Mapped.class, mapper(NullMembers.IGNORE).map(row().payload(nested(227)).build()));
  }

  /**
   * With Confluent's JSON Schema converter, a third as deep: its schema text nests an optional
   * struct four levels deep and an optional array three, and reading it back past Jackson's 1,000
   * levels failed the task at every claim of the row, quoting the payload's member names.
   */
  @Test
  void payloadsNestedDeeperThanAJsonSchemaCanBeReadBackAreParkedForAJsonSchemaConverter() {
    RecordMapper mapper = mapper(InferredSchema.forJsonSchema("payload", NullMembers.IGNORE));
    for (String[] deeperAndDeepest :
        new String[][] {
          {nested(152), nested(151)},
          {nestedArrays(299), nestedArrays(298)},
        }) {
      MappingResult deeper = mapper.map(row().payload(deeperAndDeepest[0]).build());
      assertEquals(
          UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE,
          assertInstanceOf(Unpublishable.class, deeper).reasonCode());
      assertInstanceOf(Mapped.class, mapper.map(row().payload(deeperAndDeepest[1]).build()));
    }
    assertInstanceOf(
        Mapped.class, mapper(NullMembers.IGNORE).map(row().payload(nested(152)).build()));
  }

  /** An object whose member holds {@code arrays} arrays nested in one another, then a number. */
  private static String nestedArrays(int arrays) {
    return "{\"a\":" + "[".repeat(arrays) + "1" + "]".repeat(arrays) + "}";
  }

  private static String nested(int objects) {
    return "{\"a\":".repeat(objects - 1) + "{}" + "}".repeat(objects - 1);
  }

  @Test
  void nullsOnlyAndEmptyArraysAreLeftOutLikeNullMembers() {
    Struct value = inferred("{\"nulls\":[null,null],\"none\":[],\"deep\":[[]],\"kept\":true}");
    assertEquals(List.of("kept"), names(value.schema()));
  }

  @Test
  void aNullPayloadIsATombstoneWithoutSchema() {
    SourceRecord record =
        assertInstanceOf(
                Mapped.class, mapper(NullMembers.IGNORE).map(row().payload((byte[]) null).build()))
            .record();
    assertNull(record.value());
    assertNull(record.valueSchema(), "with a schema JsonConverter writes an envelope, not null");

    // As in schemaless JSON: the literal null too.
    SourceRecord literal =
        assertInstanceOf(
                Mapped.class, mapper(NullMembers.IGNORE).map(row().payload("null").build()))
            .record();
    assertNull(literal.value());
    assertNull(literal.valueSchema());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "[1,2]",
        "[{\"a\":1}]",
        "5",
        "\"text\"",
        "true",
        "{\"m\":[1,\"a\"]}",
        "{\"m\":[9007199254740993,1.5]}",
        "{\"a\":[[],1]}",
        "{\"a\":[{},[]]}",
        "{\"o\":[{\"x\":[]},{\"x\":1}]}",
        "{\"o\":[{\"x\":[]},{\"x\":true}]}",
        "{\"o\":[{\"x\":[]},{\"x\":\"s\"}]}",
        "{\"o\":[{\"x\":[]},{\"x\":{\"a\":1}}]}",
        "{\"m\":[{\"a\":1},2]}",
        "{\"o\":[{\"x\":1},{\"x\":\"s\"}]}",
        "{\"o\":[{\"x\":{\"y\":1}},{\"x\":[1]}]}",
        "{\"\":1}"
      })
  void aPayloadNoSchemaHoldsIsParked(String payload) {
    assertEquals(
        UnpublishableReasons.PAYLOAD_SCHEMA_UNINFERABLE, parkedFor(payload), () -> payload);
  }

  @Test
  void numbersThatWouldChangeAreParkedAsForSchemalessJson() {
    assertEquals(
        UnpublishableReasons.PAYLOAD_NUMBER_UNREPRESENTABLE,
        parkedFor("{\"big\":123456789012345678901234567890}"));
    assertEquals(
        UnpublishableReasons.PAYLOAD_NUMBER_UNREPRESENTABLE,
        parkedFor("{\"dec\":1.00000000000000000001}"));
  }

  @Test
  void malformedJsonAndDuplicateMembersAreParkedAsForSchemalessJson() {
    assertEquals(UnpublishableReasons.PAYLOAD_INVALID_JSON, parkedFor("{\"a\":1"));
    assertEquals(UnpublishableReasons.PAYLOAD_INVALID_JSON, parkedFor("{\"a\":1,\"a\":2}"));
    assertEquals(UnpublishableReasons.PAYLOAD_INVALID_JSON, parkedFor("{\"a\":1} trailing"));
  }

  /**
   * A JSON escape of a surrogate without its pair ({@code \\ud83d}) is no character: Avro's and
   * Protobuf's UTF-8 encoders write '?' in its place, and the row was recorded published with other
   * text. Parked as invalid JSON, as an encoded surrogate in the payload's UTF-8 is; in a member's
   * name too, at any depth.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"m\":\"\\ud83d\"}",
        "{\"m\":\"a\\uDE00b\"}",
        "{\"m\":\"\\ude00\\ud83d\"}",
        "{\"m\":\"\\ud83d\uD83D\uDE00\"}",
        "{\"m\":[\"x\",\"\\ud83d\"]}",
        "{\"\\ud83d\":1}",
        "{\"o\":[{\"p\":{\"\\udfff\":\"x\"}}]}"
      })
  void aSurrogateWithoutItsPairIsParkedAsInvalidJson(String payload) {
    assertEquals(UnpublishableReasons.PAYLOAD_INVALID_JSON, parkedFor(payload), () -> payload);
  }

  /**
   * A null member left out (payload.json.null.behavior=ignore) writes no name: a surrogate without
   * its pair there changes nothing that is sent. Kept as optional bytes, its name is written.
   */
  @Test
  void aSurrogateInTheNameOfANullMemberLeftOutIsNoReasonToPark() {
    String payload = "{\"\\ud83d\":null,\"a\":1}";
    Struct value = inferred(payload);
    assertEquals(1, value.getInt32("a"));
    assertEquals(1, value.schema().fields().size(), value.schema().fields()::toString);

    assertEquals(
        UnpublishableReasons.PAYLOAD_INVALID_JSON,
        assertInstanceOf(
                Unpublishable.class,
                mapper(NullMembers.OPTIONAL_BYTES).map(row().payload(payload).build()))
            .reasonCode());
  }

  /** A pair written as two escapes is one character, kept as it is. */
  @Test
  void anEscapedSurrogatePairIsOneCharacter() {
    Struct value = inferred("{\"m\":\"\\ud83d\\ude00\",\"\\uD83D\\uDE00\":1}");
    assertEquals("\uD83D\uDE00", value.getString("m"));
    assertEquals(1, value.getInt32("\uD83D\uDE00"));
  }

  @Test
  void aSchemaIsInferredForFormatJsonOnly() {
    InferredSchema inferred = new InferredSchema("payload", NullMembers.IGNORE);
    IllegalArgumentException refused =
        org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class,
            () ->
                new MappingSettings(
                        "events",
                        RoutingConvention.OUTBOX_RELAY,
                        PayloadFormat.STRING,
                        1 << 20,
                        null)
                    .withInferredSchema(inferred));
    assertTrue(refused.getMessage().contains("JSON"));
  }

  private static List<String> names(Schema struct) {
    return struct.fields().stream().map(org.apache.kafka.connect.data.Field::name).toList();
  }

  private static RecordMapper mapper(NullMembers nulls) {
    return mapper(new InferredSchema("payload", nulls));
  }

  private static RecordMapper mapper(InferredSchema inferred) {
    return mapper(inferred, MappingSettings.DEFAULT_RECORD_MAX_BYTES);
  }

  private static RecordMapper mapper(InferredSchema inferred, int recordMaxBytes) {
    return new RecordMapper(
        new MappingSettings("events", RoutingConvention.DEBEZIUM, PayloadFormat.JSON, 1 << 20, null)
            .withRecordMaxBytes(recordMaxBytes)
            .withInferredSchema(inferred));
  }

  private static Struct inferred(String payload) {
    return inferred(payload, new InferredSchema("payload", NullMembers.IGNORE));
  }

  private static Struct inferred(String payload, InferredSchema inferred) {
    SourceRecord record =
        assertInstanceOf(Mapped.class, mapper(inferred).map(row().payload(payload).build()))
            .record();
    Struct value = assertInstanceOf(Struct.class, record.value());
    value.validate();
    assertEquals(record.valueSchema(), value.schema());
    return value;
  }

  private static String parkedFor(String payload) {
    return assertInstanceOf(
            Unpublishable.class, mapper(NullMembers.IGNORE).map(row().payload(payload).build()))
        .reasonCode();
  }

  /** The relay's value as JsonConverter with schemas writes it. */
  private static String relay(String payload, NullMembers nulls) {
    SourceRecord record =
        assertInstanceOf(Mapped.class, mapper(nulls).map(row().payload(payload).build())).record();
    return text(withSchemas().fromConnectData("t", record.valueSchema(), record.value()));
  }

  /** The relay's value as JsonConverter without schemas writes it. */
  private static String schemaless(String payload, NullMembers nulls) {
    SourceRecord record =
        assertInstanceOf(Mapped.class, mapper(nulls).map(row().payload(payload).build())).record();
    JsonConverter converter = new JsonConverter();
    converter.configure(Map.of("schemas.enable", "false"), false);
    return text(converter.fromConnectData("t", record.valueSchema(), record.value()));
  }

  /** Debezium's, the same way. */
  private static String debezium(String payload, NullMembers nulls) {
    try (EventRouterReference router =
        new EventRouterReference(
            Map.of(
                "table.expand.json.payload",
                "true",
                "table.json.payload.null.behavior",
                nulls.name().toLowerCase(java.util.Locale.ROOT)),
            new StringConverter(),
            withSchemas())) {
      return router
          .route(
              new DebeziumRow("6b5f7a3c-0000-0000-0000-000000000001", "order", "o-1", "T", payload))
          .value();
    }
  }

  private static JsonConverter withSchemas() {
    JsonConverter converter = new JsonConverter();
    converter.configure(Map.of("schemas.enable", "true"), false);
    return converter;
  }

  private static String text(byte[] bytes) {
    return new String(bytes, StandardCharsets.UTF_8);
  }

  /**
   * Object members sorted by name, and a schema's fields by field name: the router merges the
   * objects of an array in an order that changes from one JVM to the next.
   */
  private static JsonNode normalized(String json) throws IOException {
    return normalized(JSON.readTree(json));
  }

  private static JsonNode normalized(JsonNode node) {
    if (node.isObject()) {
      Map<String, JsonNode> sorted = new TreeMap<>();
      node.properties().forEach(e -> sorted.put(e.getKey(), normalized(e.getValue())));
      ObjectNode copy = JSON.createObjectNode();
      sorted.forEach(copy::set);
      return copy;
    }
    if (node.isArray()) {
      List<JsonNode> elements = new ArrayList<>();
      node.forEach(e -> elements.add(normalized(e)));
      if (elements.stream().allMatch(e -> e.isObject() && e.has("field") && e.has("type"))) {
        elements.sort(Comparator.comparing(e -> e.get("field").asText()));
      }
      ArrayNode copy = JSON.createArrayNode();
      elements.forEach(copy::add);
      return copy;
    }
    return node;
  }
}
