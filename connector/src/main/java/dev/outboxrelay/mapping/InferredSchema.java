package dev.outboxrelay.mapping;

import java.util.Objects;

/**
 * A JSON payload sent with a Connect schema inferred from it, as Debezium's outbox event router
 * infers one with {@code table.expand.json.payload=true}, so that schema-based converters (Avro,
 * Protobuf, JSON Schema with a schema registry) can write it. See {@link JsonSchemaInference}.
 *
 * @param rootName the name of the payload's struct schema: the payload column's name, as Debezium
 *     names it ({@code table.field.event.payload}); nested structs are named by their path under it
 * @param nullMembers what becomes of a member whose value is null
 * @param avroNames whether member names must be Avro names (a letter of any script or '_', then
 *     letters, digits or '_', as Avro's Java library checks them): the connector's value converter
 *     is an Avro converter, which refuses any other name and would fail the task at every claim of
 *     the row
 * @param avroConverter whether the connector's value converter is an Avro converter, which keeps
 *     names or not ({@code avroNames} implies it): Avro writes a schema's text twice as deep as
 *     JsonConverter (four levels per optional struct: the union, the record, its fields, the
 *     field), and past Jackson's 1,000 levels it fails the task at every claim of the row
 * @param protobufNames whether member names must be Protobuf identifiers (ASCII letters, digits and
 *     '_', not starting with a digit): the connector's value converter is Confluent's Protobuf
 *     converter without {@code scrub.invalid.names}, which refuses any other name
 * @param protobufConverter whether the connector's value converter is Confluent's Protobuf
 *     converter ({@code protobufNames} implies it), which refuses an array of arrays ("Array cannot
 *     be nested") and a null element of an array (a NullPointerException): either failed the task
 *     at every claim of the row
 * @param jsonSchemaConverter whether the connector's value converter is Confluent's JSON Schema
 *     converter, whose schema text nests deeper still (four levels per optional struct: {@code
 *     oneOf}, its array, the object schema, its {@code properties}; three per optional array), and
 *     which reads it back through Jackson's 1,000 levels: past them it failed the task at every
 *     claim of the row, quoting the schema (the payload's member names)
 */
public record InferredSchema(
    String rootName,
    NullMembers nullMembers,
    boolean avroNames,
    boolean avroConverter,
    boolean protobufNames,
    boolean protobufConverter,
    boolean jsonSchemaConverter) {

  /** Debezium's {@code table.json.payload.null.behavior}. */
  public enum NullMembers {
    /** Left out of the schema (and so of the value): Debezium's default. */
    IGNORE,
    /** An optional bytes member whose value is null. */
    OPTIONAL_BYTES
  }

  public InferredSchema {
    if (rootName == null || rootName.isBlank()) {
      throw new IllegalArgumentException("the payload schema needs a name");
    }
    Objects.requireNonNull(nullMembers, "nullMembers");
    if (avroNames && !avroConverter) {
      throw new IllegalArgumentException("Avro names are an Avro converter's");
    }
    if (protobufNames && !protobufConverter) {
      throw new IllegalArgumentException("Protobuf names are a Protobuf converter's");
    }
    if ((avroConverter ? 1 : 0) + (protobufConverter ? 1 : 0) + (jsonSchemaConverter ? 1 : 0) > 1) {
      throw new IllegalArgumentException("one value converter: Avro, Protobuf or JSON Schema");
    }
  }

  /** For a value converter of none of these kinds, or Avro, or Protobuf. */
  public InferredSchema(
      String rootName,
      NullMembers nullMembers,
      boolean avroNames,
      boolean avroConverter,
      boolean protobufNames,
      boolean protobufConverter) {
    this(rootName, nullMembers, avroNames, avroConverter, protobufNames, protobufConverter, false);
  }

  /** For Confluent's JSON Schema converter. */
  public static InferredSchema forJsonSchema(String rootName, NullMembers nullMembers) {
    return new InferredSchema(rootName, nullMembers, false, false, false, false, true);
  }

  /** For an Avro converter ({@code avroConverter}, keeping names or not), or none of the two. */
  public InferredSchema(
      String rootName, NullMembers nullMembers, boolean avroNames, boolean avroConverter) {
    this(rootName, nullMembers, avroNames, avroConverter, false, false);
  }

  /** For Confluent's Protobuf converter; {@code scrubsNames}: its scrub.invalid.names. */
  public static InferredSchema forProtobuf(
      String rootName, NullMembers nullMembers, boolean scrubsNames) {
    return new InferredSchema(rootName, nullMembers, false, false, !scrubsNames, true);
  }

  /** {@code avroNames}: an Avro converter that keeps names as they are. */
  public InferredSchema(String rootName, NullMembers nullMembers, boolean avroNames) {
    this(rootName, nullMembers, avroNames, avroNames);
  }

  /** For converters that take any member name. */
  public InferredSchema(String rootName, NullMembers nullMembers) {
    this(rootName, nullMembers, false);
  }
}
