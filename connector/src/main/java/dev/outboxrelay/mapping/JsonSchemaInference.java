package dev.outboxrelay.mapping;

import com.fasterxml.jackson.databind.JsonNode;
import dev.outboxrelay.mapping.InferredSchema.NullMembers;
import dev.outboxrelay.writer.StorableText;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;

/**
 * A JSON object payload as a Connect struct with a schema inferred from it, by the rules of
 * Debezium's outbox event router ({@code JsonSchemaData}, Debezium 3.6) wherever those rules give
 * the whole payload the same way on every run, so that a schema registry sees the same schemas
 * after a switch from Debezium:
 *
 * <ul>
 *   <li>An object is an optional struct, named by its path: the root by {@link
 *       InferredSchema#rootName()}, a member {@code <parent>.<member>}; members in payload order.
 *   <li>Strings, booleans: optional string, boolean. Integers: optional int32 when they fit, else
 *       int64. Other numbers: optional float64.
 *   <li>A null member: left out, or optional bytes ({@link NullMembers}). An empty array is left
 *       out (it has no element type); under optional bytes, one beside a null (as an array of
 *       nulls) is an array of optional bytes.
 *   <li>An array: an optional array of its elements' schema. Objects in one array share one struct
 *       named by the array's path, with every member any of them has (a member missing from one is
 *       null there); when their schemas differ that struct is required (Debezium's merge does not
 *       copy "optional"). An array within an array has elements without a name prefix.
 * </ul>
 *
 * <p>Where Debezium fails on a payload, loses part of it or varies from run to run, this class
 * keeps the data: integers and floats in one place widen (int32 to int64, to float64 when every one
 * is exact as a double); a null gives way to a type; objects merge member by member at every depth,
 * in the order members are first seen; a merged struct stays optional where a null stands in its
 * place. A payload no schema holds (not an object, values of different kinds in one place, a member
 * name Connect refuses, nesting deeper than {@link #MAX_SCHEMA_DEPTH}) is {@link Uninferable}; one
 * whose value would grow past the record limit (objects of one array with many different members
 * each: every struct has all of them) is {@link TooLarge}. Either way its row is parked, never sent
 * half. Nothing about the payload goes into an exception.
 */
final class JsonSchemaInference {

  /**
   * How deep a schema may nest, counted as JsonConverter writes it with schemas: two levels per
   * struct ({@code fields}, the field), one per array ({@code items}). Jackson writes at most 1,000
   * levels, and the envelope adds one; a converter that fails would fail the task. An Avro
   * converter's schema text nests twice as deep (an optional struct is a union, a record, its
   * fields and the field; an array a union and the array): half of it then. Measured with Avro
   * 1.12.2: a schema of 250 nested optional records is written, one of 300 is not. Confluent's JSON
   * Schema converter's nests deeper still (an optional struct four levels, an optional array three)
   * and is read back by Jackson: a third of it.
   */
  static final int MAX_SCHEMA_DEPTH = 900;

  /** What a converter writes for a member an object lacks: {@code "name":null,} and quotes. */
  private static final int FILLED_MEMBER_OVERHEAD = 8;

  /** No Connect schema holds this payload unchanged. */
  static final class Uninferable extends Exception {
    private static final long serialVersionUID = 1L;

    Uninferable() {
      super(null, null, false, false);
    }
  }

  /** The value would be larger than a record may be: every merged struct has every member. */
  static final class TooLarge extends Exception {
    private static final long serialVersionUID = 1L;

    TooLarge() {
      super(null, null, false, false);
    }
  }

  /**
   * The payload's schema and its value in it; {@code filledBytes} estimates what a converter writes
   * beyond the payload's own bytes, at most: the members that objects lack (null there), a byte per
   * value (Avro's union index of an optional field), seven more per float64 (Avro's eight-byte
   * double where the payload may have written one digit; JsonConverter adds {@code .0} to an
   * integer widened to one).
   */
  record Inferred(Schema schema, Struct value, long filledBytes) {}

  private final InferredSchema settings;
  private final long recordMaxBytes;

  /** {@link #MAX_SCHEMA_DEPTH} as the value converter nests a schema's text. */
  private final int maxDepth;

  JsonSchemaInference(InferredSchema settings, long recordMaxBytes) {
    this.settings = settings;
    this.recordMaxBytes = recordMaxBytes;
    this.maxDepth =
        settings.jsonSchemaConverter()
            ? MAX_SCHEMA_DEPTH / 3
            : settings.avroConverter() ? MAX_SCHEMA_DEPTH / 2 : MAX_SCHEMA_DEPTH;
  }

  /**
   * The payload's schema and value; null for the JSON literal {@code null}, a tombstone as in
   * schemaless JSON.
   *
   * @throws JsonValues.MalformedJson if the payload is not exactly one JSON value, or a string or
   *     member name holds a surrogate without its pair
   * @throws JsonValues.UnrepresentableNumber if a number has no exact int32, int64 or float64
   * @throws Uninferable if the value is not an object, or no schema holds all of it
   * @throws TooLarge if the filled-in value would exceed the record limit
   */
  Inferred infer(byte[] payload)
      throws JsonValues.MalformedJson, JsonValues.UnrepresentableNumber, Uninferable, TooLarge {
    JsonNode tree = JsonValues.parse(payload);
    if (tree.isNull()) {
      return null;
    }
    if (!tree.isObject()) {
      throw new Uninferable();
    }
    try {
      Growth growth = new Growth();
      Schema schema = schemaOf(shapeOf(settings.rootName(), tree, 0, growth), false);
      if (settings.avroConverter()) { // scrubbing names or not
        requireOneStructPerName(schema, new HashMap<>(), scrubsNames());
      }
      if (settings.protobufConverter()) {
        requireProtobufTypesApart(schema, protobufName(lastNamePart(schema.name())));
      }
      Struct value = new Struct(schema);
      fillStruct(value, tree, growth);
      return new Inferred(schema, value, growth.filledBytes);
    } catch (DataException e) {
      // Connect refused a member name (the empty string), or an Avro converter would; nothing of
      // it is kept.
      throw new Uninferable();
    }
  }

  // Shapes: what the payload's values are, before nulls and empty arrays are resolved.

  private sealed interface Shape permits Leaf, NullValue, ArrayShape, StructShape {}

  /** A string, boolean or number, and whether a double holds it exactly (for widening). */
  private record Leaf(Schema schema, boolean exactAsDouble) implements Shape {}

  /** A JSON null: gives way to any type. */
  private enum NullValue implements Shape {
    INSTANCE
  }

  /**
   * A shape whose schema is kept once built (the schema of an array's elements is compared at every
   * level of an array of objects); a merge that changes the shape drops it.
   */
  private abstract static class Composite {
    private Schema schema;
    private Schema optionalSchema;

    Schema cached(boolean optional) {
      return optional ? optionalSchema : schema;
    }

    void cache(boolean optional, Schema built) {
      if (optional) {
        optionalSchema = built;
      } else {
        schema = built;
      }
    }

    void changed() {
      schema = null;
      optionalSchema = null;
    }
  }

  /**
   * An array; {@code element} null while no element had a type (empty, or nulls only). {@code
   * besideNull}: a null stood in its place in a merge (a member null in another of an array's
   * objects).
   */
  private static final class ArrayShape extends Composite implements Shape {
    Shape element;
    boolean hasNullElement;
    boolean besideNull;
  }

  /** An object; merging adds members. Required only as the merge of different array elements. */
  private static final class StructShape extends Composite implements Shape {
    final String name;
    final Map<String, Shape> members = new LinkedHashMap<>();
    boolean required;

    StructShape(String name) {
      this.name = name;
    }
  }

  /** {@code depth}: the schema's nesting so far, as JsonConverter writes it. */
  private Shape shapeOf(String name, JsonNode node, int depth, Growth growth)
      throws JsonValues.MalformedJson, JsonValues.UnrepresentableNumber, Uninferable, TooLarge {
    if (depth > maxDepth) {
      throw new Uninferable();
    }
    switch (node.getNodeType()) {
      case OBJECT:
        StructShape struct = new StructShape(name);
        for (Map.Entry<String, JsonNode> member : node.properties()) {
          JsonNode value = member.getValue();
          if (!value.isNull() || nullsAsBytes()) { // a null member left out writes no name
            requireEncodable(member.getKey());
          }
          // Only structs carry their names into the schema (an array passes its own on).
          String memberPath =
              value.isContainerNode() ? growth.named(path(name, member.getKey())) : null;
          struct.members.put(member.getKey(), shapeOf(memberPath, value, depth + 2, growth));
        }
        return struct;
      case ARRAY:
        return arrayShape(name, node, depth + 1, growth);
      case STRING:
        requireEncodable(node.textValue());
        return new Leaf(Schema.OPTIONAL_STRING_SCHEMA, false);
      case BOOLEAN:
        return new Leaf(Schema.OPTIONAL_BOOLEAN_SCHEMA, false);
      case NUMBER:
        return numberShape(node);
      case NULL:
        return NullValue.INSTANCE;
      default:
        // Binary, POJO or missing nodes never come out of parsing text.
        throw new IllegalStateException("unexpected JSON node type " + node.getNodeType());
    }
  }

  /**
   * Avro's and Protobuf's UTF-8 encoders write '?' for a surrogate without its pair: the row would
   * be published with other text. Parked as invalid JSON, as an encoded surrogate in the payload's
   * UTF-8 is. (A schemaless value keeps it: JsonConverter writes it back as the same escape.)
   */
  private static void requireEncodable(String text) throws JsonValues.MalformedJson {
    if (StorableText.hasUnpairedSurrogate(text)) {
      throw new JsonValues.MalformedJson();
    }
  }

  /**
   * With an Avro value converter, a member's name must be an Avro name as Avro's Java library
   * validates one (a letter of any script or '_', then letters, digits or '_'; the specification's
   * {@code [A-Za-z_][A-Za-z0-9_]*} for ASCII): the converter refuses any other ({@code order-id},
   * {@code 1st}, {@code x.y}), which failed the task at every claim of the row, its message quoting
   * the name in the task's status. Judged where a member becomes a field: one left out (an empty
   * array, a null under {@link NullMembers#IGNORE}) names nothing the converter sees. A struct's
   * name is its path of member names, so checking the fields checks the structs' names too (each
   * part of a namespace); two different structs may still share one ({@link
   * #requireOneStructPerName}).
   */
  private void requireAvroName(String member) {
    if (settings.avroNames() && !isAvroName(member)) {
      throw new DataException("not an Avro name"); // taken as uninferable, as Connect's refusals
    }
    if (settings.protobufNames() && !isProtobufName(member)) {
      throw new DataException("not a Protobuf name"); // as the Avro one
    }
  }

  /**
   * A name Protobuf's descriptors take without scrubbing: ASCII letters, digits and '_', not
   * starting with a digit ({@code order-id}, {@code 1st}, {@code größe} and {@code a.b} are
   * refused, "is not a valid identifier").
   */
  private static boolean isProtobufName(String name) {
    if (name.isEmpty() || isAsciiDigit(name.charAt(0))) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isAsciiDigit(c) || c == '_')) {
        return false;
      }
    }
    return true;
  }

  private static boolean isAsciiDigit(char c) {
    return c >= '0' && c <= '9';
  }

  /**
   * With an Avro value converter, no two different structs of one name: Avro defines a name once
   * ("Can't redefine"), and the registration failed the task at every claim of the row. An array's
   * objects take the array's path as their name, but those of an array in an array have none, and
   * their members' structs are named by the member alone: {@code {"a":[[{"item":{"id":1}}]],
   * "b":[[{"item":{"sku":"x"}}]]}} has two structs "item", and {@code {"a":[[{"payload":{}}]]}} one
   * named as the root. Structs of one name with the same fields are one definition to Avro. Nor a
   * struct named as an Avro primitive type without a namespace ({@link #AVRO_PRIMITIVES}).
   */
  private static void requireOneStructPerName(
      Schema schema, Map<String, List<Field>> named, boolean scrubbed) throws Uninferable {
    switch (schema.type()) {
      case STRUCT -> {
        if (schema.name() != null) {
          // Scrubbed, a name is one of every name that scrubs to the same ("a-b" and "a_b").
          String name = scrubbed ? ScrubbedNames.fullName(schema.name()) : schema.name();
          if (AVRO_PRIMITIVES.contains(name)) {
            throw new Uninferable();
          }
          List<Field> defined = named.putIfAbsent(name, schema.fields());
          if (defined != null && !defined.equals(schema.fields())) {
            throw new Uninferable();
          }
        }
        for (Field field : schema.fields()) {
          requireOneStructPerName(field.schema(), named, scrubbed);
        }
      }
      case ARRAY -> requireOneStructPerName(schema.valueSchema(), named, scrubbed);
      default -> {
        // a leaf names nothing
      }
    }
  }

  /**
   * Names Avro refuses for a struct without a namespace ("Schemas may not be named after
   * primitives"): those of an array's objects in an array, named by their member alone ({@code
   * {"a":[[{"int":{}}]]}}); with a namespace ({@code payload.int}) Avro takes them.
   */
  private static final Set<String> AVRO_PRIMITIVES =
      Set.of("null", "boolean", "int", "long", "float", "double", "bytes", "string");

  private static boolean isAvroName(String name) {
    if (name.isEmpty() || !(Character.isLetter(name.charAt(0)) || name.charAt(0) == '_')) {
      return false;
    }
    for (int i = 1; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!(Character.isLetterOrDigit(c) || c == '_')) {
        return false;
      }
    }
    return true;
  }

  private static final long LARGEST_EXACT_DOUBLE_INTEGER = 1L << 53;

  private static Leaf numberShape(JsonNode node) throws JsonValues.UnrepresentableNumber {
    if (node.isIntegralNumber()) {
      if (node.canConvertToInt()) {
        return new Leaf(Schema.OPTIONAL_INT32_SCHEMA, true);
      }
      if (node.canConvertToLong()) {
        long value = node.longValue();
        boolean exact =
            value >= -LARGEST_EXACT_DOUBLE_INTEGER && value <= LARGEST_EXACT_DOUBLE_INTEGER;
        return new Leaf(Schema.OPTIONAL_INT64_SCHEMA, exact);
      }
      throw new JsonValues.UnrepresentableNumber();
    }
    JsonValues.exactDouble(node);
    return new Leaf(Schema.OPTIONAL_FLOAT64_SCHEMA, true);
  }

  /** Objects are named by the array's path, arrays by none (as Debezium names them). */
  private ArrayShape arrayShape(String arrayName, JsonNode array, int depth, Growth growth)
      throws JsonValues.MalformedJson, JsonValues.UnrepresentableNumber, Uninferable, TooLarge {
    ArrayShape shape = new ArrayShape();
    List<Shape> typed = new ArrayList<>();
    if (settings.protobufConverter()) {
      for (JsonNode element : array) {
        // A repeated field holds no null and no repeated field: Confluent's converter throws on
        // either (a NullPointerException, "Array cannot be nested") at every claim of the row.
        if (element.isNull() || element.isArray()) {
          throw new Uninferable();
        }
      }
    }
    for (JsonNode element : array) {
      if (element.isNull()) {
        shape.hasNullElement = true;
      } else {
        typed.add(shapeOf(element.isObject() ? arrayName : null, element, depth, growth));
      }
    }
    if (typed.isEmpty()) {
      return shape;
    }
    // Debezium: a merge of objects whose schemas differ is a required struct. Judged before the
    // merge, which changes the first element's shape in place (merging in place keeps a wide
    // array linear).
    boolean differ = typed.get(0) instanceof StructShape && schemasDiffer(typed);
    Shape merged = typed.get(0);
    for (int i = 1; i < typed.size(); i++) {
      merged = merge(merged, typed.get(i));
    }
    if (differ && merged instanceof StructShape struct) {
      struct.required = true;
      struct.changed();
    }
    shape.element = merged;
    return shape;
  }

  private boolean schemasDiffer(List<Shape> elements) {
    Schema first = schemaOf(elements.get(0), false);
    for (int i = 1; i < elements.size(); i++) {
      if (!first.equals(schemaOf(elements.get(i), false))) {
        return true;
      }
    }
    return false;
  }

  /** A shape that holds the values of both (built into {@code into} where it can), or throws. */
  private static Shape merge(Shape into, Shape from) throws Uninferable {
    if (from == NullValue.INSTANCE || into == NullValue.INSTANCE) {
      Shape typed = from == NullValue.INSTANCE ? into : from;
      if (typed instanceof ArrayShape array && !array.besideNull) {
        array.besideNull = true; // an array of optional bytes when it has no type of its own
        array.changed();
      }
      return typed;
    }
    if (into instanceof Leaf a && from instanceof Leaf b) {
      return mergeLeaves(a, b);
    }
    if (into instanceof ArrayShape a && from instanceof ArrayShape b) {
      a.element =
          a.element == null
              ? b.element
              : b.element == null ? a.element : merge(a.element, b.element);
      a.hasNullElement |= b.hasNullElement;
      a.besideNull |= b.besideNull;
      a.changed();
      return a;
    }
    if (into instanceof StructShape a && from instanceof StructShape b) {
      for (Map.Entry<String, Shape> member : b.members.entrySet()) {
        Shape known = a.members.get(member.getKey());
        a.members.put(
            member.getKey(), known == null ? member.getValue() : merge(known, member.getValue()));
      }
      // Required or not as the first: Debezium types an array of arrays by its first.
      if (!b.members.isEmpty()) {
        a.changed();
      }
      return a;
    }
    throw new Uninferable();
  }

  private static Leaf mergeLeaves(Leaf a, Leaf b) throws Uninferable {
    Schema.Type x = a.schema().type();
    Schema.Type y = b.schema().type();
    boolean exact = a.exactAsDouble() && b.exactAsDouble();
    if (x == y) {
      return new Leaf(a.schema(), exact);
    }
    if (isInteger(x) && isInteger(y)) {
      return new Leaf(Schema.OPTIONAL_INT64_SCHEMA, exact);
    }
    if (isNumber(x) && isNumber(y) && exact) {
      return new Leaf(Schema.OPTIONAL_FLOAT64_SCHEMA, true);
    }
    throw new Uninferable();
  }

  private static boolean isInteger(Schema.Type type) {
    return type == Schema.Type.INT32 || type == Schema.Type.INT64;
  }

  private static boolean isNumber(Schema.Type type) {
    return isInteger(type) || type == Schema.Type.FLOAT64;
  }

  /**
   * The shape's schema, or null when it has no type and is left out (a null member under {@link
   * NullMembers#IGNORE}, an empty array). {@code elementOfNullableArray}: a struct that an array's
   * null element stands beside stays optional, or the converter would refuse the null; an array
   * without a type of its own there is one of optional bytes, as an array of nulls is (see {@link
   * #arraySchema}).
   */
  private Schema schemaOf(Shape shape, boolean elementOfNullableArray) {
    if (shape instanceof Leaf leaf) {
      return leaf.schema();
    }
    if (shape == NullValue.INSTANCE) {
      return nullsAsBytes() ? Schema.OPTIONAL_BYTES_SCHEMA : null;
    }
    Composite composite = (Composite) shape;
    Schema cached = composite.cached(elementOfNullableArray);
    if (cached == null) {
      cached =
          shape instanceof ArrayShape array
              ? arraySchema(array, elementOfNullableArray)
              : structSchema((StructShape) shape, elementOfNullableArray);
      composite.cache(elementOfNullableArray, cached);
    }
    return cached == NO_SCHEMA ? null : cached;
  }

  /** Cached for a shape left out (a schema no value has). */
  private static final Schema NO_SCHEMA = SchemaBuilder.struct().name("left out").build();

  /**
   * {@code besideNulls}: this array is an element of one beside nulls. A struct element is optional
   * only beside a null element of its own array; an array element without a type of its own is one
   * of optional bytes beside any null around it, at any depth.
   */
  private Schema arraySchema(ArrayShape array, boolean besideNulls) {
    boolean nullsBeside = array.hasNullElement || array.besideNull || besideNulls;
    Schema element =
        array.element == null
            ? null
            : schemaOf(
                array.element,
                array.element instanceof ArrayShape ? nullsBeside : array.hasNullElement);
    if (element == null) {
      // No type of its own: beside nulls, an array of optional bytes (as Debezium types an array
      // of nulls); else left out, as an empty array.
      element = nullsBeside && nullsAsBytes() ? Schema.OPTIONAL_BYTES_SCHEMA : null;
    }
    return element == null ? NO_SCHEMA : SchemaBuilder.array(element).optional().build();
  }

  private Schema structSchema(StructShape struct, boolean elementOfNullableArray) {
    SchemaBuilder builder = SchemaBuilder.struct().name(struct.name);
    if (!struct.required || elementOfNullableArray) {
      builder.optional();
    }
    Set<String> scrubbed = scrubsNames() ? new HashSet<>() : null;
    for (Map.Entry<String, Shape> member : struct.members.entrySet()) {
      Schema memberSchema = schemaOf(member.getValue(), false);
      if (memberSchema != null) {
        requireAvroName(member.getKey());
        if (scrubbed != null && !scrubbed.add(ScrubbedNames.name(member.getKey()))) {
          // Two fields of one name once scrubbed: the converter refuses the schema ("Duplicate
          // field"), quoting the names, at every claim of the row.
          throw new DataException("members whose names scrub to one");
        }
        builder.field(member.getKey(), memberSchema);
      }
    }
    return builder.build();
  }

  /**
   * Confluent's Protobuf converter defines the message type of each struct member (or array of
   * structs) inside its parent's message, named as the struct's last name part, with "Message"
   * added where that is the member's own name (ProtobufData.dataTypeFromConnectSchema, read in
   * schema-registry's source). A type named as another member of that message ({@code
   * {"error":{"code":1},"errorMessage":"x"}}: the descriptor refused, "already defined"), as
   * another such type there ({@code {"a.item":{},"b.item":{}}}, names scrubbed: refused, or in
   * later versions one definition for both, and a value of the other shape fails, "Cannot find
   * field"), or as the message itself ({@code {"data":{"data":{"id":1}}}}: taken for a reference to
   * it in later versions, the same failure) fails the task at every claim of the row. Refused here
   * in every such case, the safe side where a version would have written it. {@code messageName}:
   * the message {@code struct} becomes.
   */
  private void requireProtobufTypesApart(Schema struct, String messageName) {
    Set<String> names = new HashSet<>();
    for (Field field : struct.fields()) {
      names.add(protobufName(field.name()));
    }
    Set<String> types = new HashSet<>();
    for (Field field : struct.fields()) {
      Schema schema =
          field.schema().type() == Schema.Type.ARRAY
              ? field.schema().valueSchema()
              : field.schema();
      if (schema == null || schema.type() != Schema.Type.STRUCT || schema.name() == null) {
        continue;
      }
      String type = protobufName(lastNamePart(schema.name()));
      if (type.equals(protobufName(field.name()))) {
        type += "Message";
      }
      if (type.equals(messageName) || names.contains(type) || !types.add(type)) {
        throw new DataException("a message type named as a field, another type or its message");
      }
      requireProtobufTypesApart(schema, type);
    }
  }

  private static String lastNamePart(String name) {
    return name == null ? "" : name.substring(name.lastIndexOf('.') + 1);
  }

  /** A name as the Protobuf converter writes it: scrubbed where it scrubs (coarser here). */
  private String protobufName(String name) {
    return scrubsNames() ? ScrubbedNames.name(name) : name;
  }

  /**
   * Whether the value converter scrubs names it cannot take (Confluent's Avro or Protobuf converter
   * with {@code scrub.invalid.names}) rather than refuse them.
   */
  private boolean scrubsNames() {
    return (settings.avroConverter() && !settings.avroNames())
        || (settings.protobufConverter() && !settings.protobufNames());
  }

  private boolean nullsAsBytes() {
    return settings.nullMembers() == NullMembers.OPTIONAL_BYTES;
  }

  /** Debezium's path: the parent's name and a dot, unless there is no parent name. */
  private static String path(String parent, String member) {
    return parent == null || parent.trim().isEmpty() ? member : parent + "." + member;
  }

  /**
   * What one payload's schema and value grow to beyond its own bytes, bounded by the record limit
   * before it fills the heap: the structs' names (a path each, so a deep payload's names grow with
   * its depth squared) and the value's growth ({@link Inferred#filledBytes()}).
   */
  private final class Growth {
    long filledBytes;
    long nameBytes;

    String named(String path) throws TooLarge {
      nameBytes += path.length();
      check(nameBytes);
      return path;
    }

    void member(String name) throws TooLarge {
      // As JsonConverter writes it, escapes included: the payload holds the name only once, so
      // the payload's own escapes (RecordSize) cannot cover a name filled into many objects.
      filledBytes += JsonConverterSize.text(name) + FILLED_MEMBER_OVERHEAD;
      check(filledBytes);
    }

    void leaf(Schema.Type type) throws TooLarge {
      // The payload has at least one character for it: a double is eight bytes and a union
      // index more in Avro; any other value at most a union index more than its text.
      filledBytes += type == Schema.Type.FLOAT64 ? 8 : 1;
      check(filledBytes);
    }

    void array() throws TooLarge {
      // "[" and "]" in the payload; in Avro an optional array's union index, its block's count
      // and the end marker: a byte more (its commas, with two or more elements, more than pay
      // for longer counts).
      filledBytes += 1;
      check(filledBytes);
    }

    private void check(long bytes) throws TooLarge {
      if (bytes > recordMaxBytes) {
        throw new TooLarge();
      }
    }
  }

  /**
   * Fills {@code struct} (already in its parent) with the members of {@code node}, whose schema was
   * inferred from it or from more. Each container goes into its parent empty and is filled after:
   * Connect validates what is put into a struct, and a filled one all the way down, which at every
   * level of a deep payload would take time by its depth times its size. A node of another kind
   * than the schema's cannot come from a merge; it is refused all the same rather than read as a
   * default.
   */
  private static void fillStruct(Struct struct, JsonNode node, Growth growth)
      throws Uninferable, TooLarge {
    require(node.isObject());
    for (Field field : struct.schema().fields()) {
      JsonNode member = node.get(field.name());
      if (member == null) {
        growth.member(field.name());
      } else if (!member.isNull()) {
        Object value = emptyOrLeaf(field.schema(), member, growth);
        struct.put(field, value);
        fill(value, field.schema(), member, growth);
      }
    }
  }

  private static void fillList(List<Object> list, Schema element, JsonNode array, Growth growth)
      throws Uninferable, TooLarge {
    require(array.isArray());
    for (JsonNode node : array) {
      if (node.isNull()) {
        list.add(null);
      } else {
        Object value = emptyOrLeaf(element, node, growth);
        list.add(value);
        fill(value, element, node, growth);
      }
    }
  }

  private static void fill(Object container, Schema schema, JsonNode node, Growth growth)
      throws Uninferable, TooLarge {
    if (container instanceof Struct struct) {
      fillStruct(struct, node, growth);
    } else if (container instanceof List<?>) {
      @SuppressWarnings("unchecked")
      List<Object> list = (List<Object>) container;
      fillList(list, schema.valueSchema(), node, growth);
    }
  }

  /** An empty struct or list to fill, or the value of a leaf (its growth counted). */
  private static Object emptyOrLeaf(Schema schema, JsonNode node, Growth growth)
      throws Uninferable, TooLarge {
    switch (schema.type()) {
      case STRUCT:
        return new Struct(schema);
      case ARRAY:
        growth.array();
        return new ArrayList<>(node.size());
      default:
        growth.leaf(schema.type());
        return leaf(schema, node);
    }
  }

  private static Object leaf(Schema schema, JsonNode node) throws Uninferable {
    switch (schema.type()) {
      case STRING:
        require(node.isTextual());
        return node.textValue();
      case BOOLEAN:
        require(node.isBoolean());
        return node.booleanValue();
      case INT32:
        require(node.isIntegralNumber() && node.canConvertToInt());
        return node.intValue();
      case INT64:
        require(node.isIntegralNumber() && node.canConvertToLong());
        return node.longValue();
      case FLOAT64:
        require(node.isNumber());
        // Exact: checked when the shape was taken (an integer widened only when exact). A double
        // node is a negative zero, which a BigDecimal would make 0.0 (JsonValues).
        return node.isDouble() ? node.doubleValue() : node.decimalValue().doubleValue();
      default:
        // Bytes only ever stand for nulls, which are never filled.
        throw new Uninferable();
    }
  }

  private static void require(boolean sameKind) throws Uninferable {
    if (!sameKind) {
      throw new Uninferable();
    }
  }
}
