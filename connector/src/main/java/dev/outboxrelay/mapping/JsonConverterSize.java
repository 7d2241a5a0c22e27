package dev.outboxrelay.mapping;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * What Kafka's JsonConverter writes for a record's value beyond the payload's own bytes, where the
 * connector's value converter is known to be it: a bytes value as base64 in quotes, a string with
 * its escapes in quotes, a null as {@code null}, and with schemas enabled each inside {@code
 * {"schema":...,"payload":...}}. Exact for the optional bytes and string schemas the mapper gives.
 * A schemaless JSON value's own growth is {@link RecordSize#jsonGrowth}'s; an inferred schema's
 * value's is the inference's, and its schema's text in the envelope {@link #schemaText}'s.
 */
final class JsonConverterSize {
  /** {@code {"schema":null,"payload":}} around a schemaless value. */
  static final int SCHEMALESS_ENVELOPE = 26;

  /** {@code {"schema":{"type":"","optional":true},"payload":}}, the type's name not counted. */
  private static final int ENVELOPE = 49;

  private static final int NULL = 4;

  /** {@code {"schema":}, {@code ,"payload":} and {@code }} around a schema's text and a value. */
  private static final int SCHEMA_ENVELOPE = 22;

  /** {@code {"type":"","optional":}}, the type's name and the boolean not counted. */
  private static final int SCHEMA_OBJECT = 23;

  /** {@code ,"name":""}, {@code ,"field":""}, {@code ,"fields":[]}, {@code ,"items":}. */
  private static final int NAME = 10;

  private static final int FIELD = 11;
  private static final int FIELDS = 12;
  private static final int ITEMS = 9;

  /** A byte JsonConverter writes as a {@code \\u00XX} escape at most: five bytes more. */
  private static final int MAX_ESCAPE_GROWTH = 5;

  private JsonConverterSize() {}

  /**
   * The bytes {@code converter} writes for {@code record}'s value beyond {@code payload}, the bytes
   * behind it. A string's escapes are counted only when even the most they could add does not fit
   * in {@code room} (what the record may still grow by); else 0 for them, without reading the
   * payload.
   */
  static long growth(ConverterKind converter, SourceRecord record, byte[] payload, long room) {
    if (converter == ConverterKind.OTHER) {
      return 0;
    }
    boolean enveloped = converter == ConverterKind.JSON_WITH_SCHEMAS;
    Schema schema = record.valueSchema();
    if (schema == null) {
      // Schemaless JSON; a null value is written as no value at all, a tombstone.
      return enveloped && record.value() != null ? SCHEMALESS_ENVELOPE : 0;
    }
    if (schema.type() != Schema.Type.BYTES && schema.type() != Schema.Type.STRING) {
      // An inferred schema: with schemas, its text goes into every record, a path name per struct
      // (a deep or wide payload's schema can outgrow the payload many times over).
      return enveloped ? SCHEMA_ENVELOPE + schemaText(schema) : 0;
    }
    long envelope = enveloped ? ENVELOPE + schema.type().getName().length() : 0;
    if (payload == null) {
      return envelope + NULL;
    }
    if (schema.type() == Schema.Type.BYTES) {
      return envelope + RecordSize.base64Growth(payload.length);
    }
    return envelope + 2 + escapes(payload, room - envelope - 2);
  }

  /**
   * The bytes {@code converter} writes for {@code record}'s key beyond its text, which {@link
   * RecordSize#upperBound} counts: the key is the aggregate id as a required string, in quotes with
   * its escapes, in the envelope with schemas (a required schema's {@code "optional":false} one
   * byte longer than {@code true}); a row without one has no key and no key schema, nothing.
   */
  static long keyGrowth(ConverterKind converter, SourceRecord record) {
    if (converter == ConverterKind.OTHER) {
      return 0;
    }
    if (record.keySchema() == null && record.key() == null) {
      return 0; // no key at all: JsonConverter writes none
    }
    return textGrowth(converter, record.keySchema(), record.key());
  }

  /**
   * The bytes {@code converter} writes for {@code record}'s headers beyond their values' text,
   * which {@link RecordSize#upperBound} counts: each a string (or null) as {@link #keyGrowth}
   * writes a key, the envelope with schemas some fifty bytes a header (a record of many headers
   * near the limit failed the task, too large for the producer, instead of being parked).
   */
  static long headersGrowth(ConverterKind converter, SourceRecord record) {
    if (converter == ConverterKind.OTHER) {
      return 0;
    }
    long growth = 0;
    for (Header header : record.headers()) {
      growth += textGrowth(converter, header.schema(), header.value());
    }
    return growth;
  }

  /** A string (or null) of this schema as JsonConverter writes it, beyond its UTF-8 text. */
  private static long textGrowth(ConverterKind converter, Schema schema, Object value) {
    boolean enveloped = converter == ConverterKind.JSON_WITH_SCHEMAS;
    String type = schema == null ? "" : schema.type().getName();
    long envelope =
        enveloped ? ENVELOPE + type.length() + (schema != null && !schema.isOptional() ? 1 : 0) : 0;
    if (value == null) {
      return envelope + NULL; // written as null, not left out
    }
    byte[] text = value.toString().getBytes(StandardCharsets.UTF_8);
    return envelope + 2 + escapes(text, -1);
  }

  /**
   * The length of {@code schema} as JsonConverter writes it in the envelope (its asJsonSchema, as
   * text), for the schemas inference builds: structs with names, arrays, and the primitive types,
   * without versions, docs, parameters or defaults.
   */
  static long schemaText(Schema schema) {
    long size = SCHEMA_OBJECT + typeName(schema.type()).length() + (schema.isOptional() ? 4 : 5);
    if (schema.name() != null) {
      size += NAME + text(schema.name());
    }
    if (schema.type() == Schema.Type.STRUCT) {
      size += FIELDS + Math.max(0, schema.fields().size() - 1); // the commas between fields
      for (Field field : schema.fields()) {
        size += schemaText(field.schema()) + FIELD + text(field.name());
      }
    } else if (schema.type() == Schema.Type.ARRAY) {
      size += ITEMS + schemaText(schema.valueSchema());
    } else if (schema.type() == Schema.Type.MAP) {
      // Never inferred; counted for completeness: ,"keys": and ,"values":
      size += 18 + schemaText(schema.keySchema()) + schemaText(schema.valueSchema());
    }
    return size;
  }

  /** JsonConverter's name of a type: as Connect's, but a float is "float" and a double "double". */
  private static String typeName(Schema.Type type) {
    return switch (type) {
      case FLOAT32 -> "float";
      case FLOAT64 -> "double";
      default -> type.getName();
    };
  }

  /** A name in quotes is counted apart: its UTF-8 bytes and its escapes. */
  static long text(String name) {
    byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
    return utf8.length + escapes(utf8, -1);
  }

  /**
   * What JsonConverter's escapes add to UTF-8 text (Jackson's defaults): {@code "} and {@code \}
   * and the controls with a short escape one byte each, other controls five ({@code \\u0001}), a
   * character outside the Basic Multilingual Plane eight (two {@code \\u} escapes for its four
   * bytes).
   */
  private static long escapes(byte[] text, long room) {
    if ((long) MAX_ESCAPE_GROWTH * text.length <= room) {
      return 0;
    }
    long added = 0;
    for (byte b : text) {
      if (b == '"' || b == '\\' || b == '\b' || b == '\t' || b == '\n' || b == '\f' || b == '\r') {
        added += 1;
      } else if (b >= 0 && b < 0x20) {
        added += MAX_ESCAPE_GROWTH;
      } else if ((b & 0xF8) == 0xF0) {
        added += 8;
      }
    }
    return added;
  }
}
