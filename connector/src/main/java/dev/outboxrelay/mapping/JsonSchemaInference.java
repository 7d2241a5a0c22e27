package dev.outboxrelay.mapping;

import com.fasterxml.jackson.databind.JsonNode;
import dev.outboxrelay.mapping.InferredSchema.NullMembers;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
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
 * Debezium's outbox event router ({@code JsonSchemaData}, Debezium 3.6) wherever those rules give a
 * value that holds the payload's data, so that a schema registry sees the same schemas after a
 * switch from Debezium:
 *
 * <ul>
 *   <li>An object is an optional struct, named by its path: the root by {@link
 *       InferredSchema#rootName()}, a member {@code <parent>.<member>}; members in payload order.
 *   <li>Strings, booleans: optional string, boolean. Integers: optional int32 when they fit, else
 *       int64. Other numbers: optional float64.
 *   <li>A null member: left out, or optional bytes ({@link NullMembers}). An empty array is left
 *       out (it has no element type).
 *   <li>An array: an optional array of its elements' schema. Objects in one array share one struct
 *       named by the array's path, with every member any of them has (a member missing from one is
 *       null there); when their schemas differ that struct is not optional (as Debezium builds it).
 *       An array within an array has elements without a name prefix.
 * </ul>
 *
 * <p>Where Debezium fails on a payload, loses part of it or orders members differently from run to
 * run, this class keeps the data: an int32 and an int64 in one place widen to int64; a null
 * placeholder (optional bytes) gives way to a typed member; objects merge member by member at every
 * depth; merged members are in the order first seen. A payload no schema can hold (not an object;
 * elements of different kinds in one array; a member name Connect refuses) is {@link Uninferable},
 * never sent half: its row is parked. Nothing about the payload goes into an exception.
 */
final class JsonSchemaInference {

  /** No Connect schema holds this payload unchanged. */
  static final class Uninferable extends Exception {
    private static final long serialVersionUID = 1L;

    Uninferable() {
      super(null, null, false, false);
    }
  }

  /** The payload's schema and its value in it. */
  record Inferred(Schema schema, Struct value) {}

  private final InferredSchema settings;

  JsonSchemaInference(InferredSchema settings) {
    this.settings = settings;
  }

  /**
   * @throws JsonValues.MalformedJson if the payload is not exactly one JSON value
   * @throws JsonValues.UnrepresentableNumber if a number has no exact int32, int64 or float64
   * @throws Uninferable if the value is not an object, or no schema holds all of it
   */
  Inferred infer(byte[] payload)
      throws JsonValues.MalformedJson, JsonValues.UnrepresentableNumber, Uninferable {
    JsonNode tree = JsonValues.parse(payload);
    if (!tree.isObject()) {
      throw new Uninferable();
    }
    try {
      Schema schema = schemaOf(settings.rootName(), tree);
      return new Inferred(schema, (Struct) valueOf(schema, tree));
    } catch (DataException e) {
      // Connect refused a member name (the empty string) or a value; nothing of it is kept.
      throw new Uninferable();
    }
  }

  /** The schema of one value, or null when it has none and is left out. */
  private Schema schemaOf(String name, JsonNode node)
      throws JsonValues.UnrepresentableNumber, Uninferable {
    switch (node.getNodeType()) {
      case OBJECT:
        SchemaBuilder struct = SchemaBuilder.struct().name(name).optional();
        for (Map.Entry<String, JsonNode> member : node.properties()) {
          Schema memberSchema = schemaOf(path(name, member.getKey()), member.getValue());
          if (memberSchema != null) {
            struct.field(member.getKey(), memberSchema);
          }
        }
        return struct.build();
      case ARRAY:
        Schema elements = elementSchema(name, node);
        return elements == null ? null : SchemaBuilder.array(elements).optional().build();
      case STRING:
        return Schema.OPTIONAL_STRING_SCHEMA;
      case BOOLEAN:
        return Schema.OPTIONAL_BOOLEAN_SCHEMA;
      case NUMBER:
        return numberSchema(node);
      case NULL:
        return settings.nullMembers() == NullMembers.OPTIONAL_BYTES
            ? Schema.OPTIONAL_BYTES_SCHEMA
            : null;
      default:
        // Binary, POJO or missing nodes never come out of parsing text.
        throw new IllegalStateException("unexpected JSON node type " + node.getNodeType());
    }
  }

  private static Schema numberSchema(JsonNode node) throws JsonValues.UnrepresentableNumber {
    if (node.isIntegralNumber()) {
      if (node.canConvertToInt()) {
        return Schema.OPTIONAL_INT32_SCHEMA;
      }
      if (node.canConvertToLong()) {
        return Schema.OPTIONAL_INT64_SCHEMA;
      }
      throw new JsonValues.UnrepresentableNumber();
    }
    JsonValues.exactDouble(node);
    return Schema.OPTIONAL_FLOAT64_SCHEMA;
  }

  /**
   * One schema for every element of an array: objects named by the array's path, arrays without a
   * name. Null when no element has a type (none, or nulls only, which are then left out like an
   * empty array, or optional bytes).
   */
  private Schema elementSchema(String arrayName, JsonNode array)
      throws JsonValues.UnrepresentableNumber, Uninferable {
    Set<Schema> distinct = new LinkedHashSet<>();
    boolean hasNull = false;
    for (JsonNode element : array) {
      if (element.isNull()) {
        hasNull = true;
        continue;
      }
      Schema schema = schemaOf(element.isObject() ? arrayName : null, element);
      if (schema != null) {
        distinct.add(schema);
      }
    }
    if (distinct.isEmpty()) {
      return hasNull && settings.nullMembers() == NullMembers.OPTIONAL_BYTES
          ? Schema.OPTIONAL_BYTES_SCHEMA
          : null;
    }
    Schema merged = null;
    for (Schema schema : distinct) {
      merged = merged == null ? schema : unify(merged, schema);
    }
    if (distinct.size() > 1 && merged.type() == Schema.Type.STRUCT && !hasNull) {
      // Debezium's merge copies the struct's name but not that it is optional (an array with a
      // null element keeps it optional, or the converter would refuse the null).
      return required(merged);
    }
    return merged;
  }

  /** A schema that holds the values of both, or Uninferable. */
  private static Schema unify(Schema a, Schema b) throws Uninferable {
    if (a.equals(b)) {
      return a;
    }
    if (a.type() == Schema.Type.BYTES) {
      return b; // a null placeholder gives way to a type
    }
    if (b.type() == Schema.Type.BYTES) {
      return a;
    }
    if (isInteger(a) && isInteger(b)) {
      return Schema.OPTIONAL_INT64_SCHEMA;
    }
    if (a.type() == Schema.Type.ARRAY && b.type() == Schema.Type.ARRAY) {
      return SchemaBuilder.array(unify(a.valueSchema(), b.valueSchema())).optional().build();
    }
    if (a.type() == Schema.Type.STRUCT && b.type() == Schema.Type.STRUCT) {
      Map<String, Schema> members = new LinkedHashMap<>();
      for (Field field : a.fields()) {
        members.put(field.name(), field.schema());
      }
      for (Field field : b.fields()) {
        Schema known = members.get(field.name());
        members.put(field.name(), known == null ? field.schema() : unify(known, field.schema()));
      }
      SchemaBuilder struct = SchemaBuilder.struct().name(a.name()).optional();
      members.forEach(struct::field);
      return struct.build();
    }
    throw new Uninferable();
  }

  private static boolean isInteger(Schema schema) {
    return schema.type() == Schema.Type.INT32 || schema.type() == Schema.Type.INT64;
  }

  private static Schema required(Schema struct) {
    SchemaBuilder copy = SchemaBuilder.struct().name(struct.name());
    struct.fields().forEach(field -> copy.field(field.name(), field.schema()));
    return copy.build();
  }

  /** Debezium's path: the parent's name and a dot, unless there is no parent name. */
  private static String path(String parent, String member) {
    return parent == null || parent.isBlank() ? member : parent + "." + member;
  }

  /** The value of {@code node} in {@code schema}, which was inferred from it or from more. */
  private static Object valueOf(Schema schema, JsonNode node) {
    if (node == null || node.isNull()) {
      return null;
    }
    switch (schema.type()) {
      case STRUCT:
        Struct struct = new Struct(schema);
        for (Field field : schema.fields()) {
          struct.put(field, valueOf(field.schema(), node.get(field.name())));
        }
        return struct;
      case ARRAY:
        List<Object> elements = new ArrayList<>(node.size());
        for (JsonNode element : node) {
          elements.add(valueOf(schema.valueSchema(), element));
        }
        return elements;
      case STRING:
        return node.textValue();
      case BOOLEAN:
        return node.booleanValue();
      case INT32:
        return node.intValue();
      case INT64:
        return node.longValue();
      case FLOAT64:
        // Checked exact when the schema was inferred.
        return node.decimalValue().doubleValue();
      default:
        // Bytes only ever stand for nulls, handled above.
        throw new IllegalStateException("unexpected schema type " + schema.type());
    }
  }
}
