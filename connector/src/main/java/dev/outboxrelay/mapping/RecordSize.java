package dev.outboxrelay.mapping;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * The size the producer will hold a record to, estimated before it is handed to Connect. The
 * producer refuses a record whose upper-bound size exceeds {@code max.request.size} with a
 * RecordTooLargeException, which fails the task and, on restart, the same row fails it again; so a
 * row whose record cannot fit must be parked instead ({@link
 * UnpublishableReasons#RECORD_TOO_LARGE}).
 *
 * <p>The estimate follows the producer's own upper bound (a batch of one record with every varint
 * at its widest, uncompressed), with the key and string headers as UTF-8 and the value as the
 * payload bytes: exact for the byte-array and string converters. A schemaless JSON value is written
 * back by JsonConverter, which can write more than the payload held ({@link #jsonGrowth}); so does
 * JsonConverter with every value ({@link JsonConverterSize}).
 */
final class RecordSize {
  /** Kafka's DefaultRecordBatch.RECORD_BATCH_OVERHEAD (magic v2). */
  static final int BATCH_OVERHEAD = 61;

  /**
   * Kafka's DefaultRecord.MAX_RECORD_OVERHEAD: the record's length, attributes, timestamp and
   * offset deltas. The key's and value's lengths are not in it: the producer adds them.
   */
  static final int RECORD_OVERHEAD = 21;

  private static final int MAX_VARINT = 5;

  /**
   * A bound, with room to spare, on how many times its own length a JSON payload can take when
   * written back: a character outside the Basic Multilingual Plane, 4 bytes of UTF-8, is written as
   * two {@code \\u} escapes, 12 bytes (Jackson's default); a number only as a double carries it
   * exactly ({@link JsonValues}), {@code 1e6} as {@code 1000000.0}. Nothing grows more than 3
   * times.
   */
  static final int MAX_JSON_GROWTH = 8;

  private RecordSize() {}

  /**
   * The bytes that JsonConverter (schemas off) writes for {@code value}, parsed from a payload of
   * {@code payloadLength} bytes, beyond that length; 0 when even {@link #MAX_JSON_GROWTH} times the
   * payload fits in {@code room}, without writing it (every payload but the largest).
   */
  static long jsonGrowth(Object value, int payloadLength, long room) {
    if ((long) payloadLength * (MAX_JSON_GROWTH - 1) <= room) {
      return 0;
    }
    if (room < 0) {
      return 0; // too large as it is: nothing to measure
    }
    CountingStream written = new CountingStream();
    try {
      WrittenJson.MAPPER.writeValue(written, value);
    } catch (IOException e) {
      // Not from this stream; Jackson wrote every value it was given when it read it.
      // Its class alone: Jackson's message and reference path quote the payload's member names.
      throw new IllegalStateException(
          "schemaless JSON value could not be written: " + e.getClass().getName());
    }
    return Math.max(0, written.count - payloadLength);
  }

  /**
   * What a JSON converter adds to an inferred struct's strings and member names, parsed from {@code
   * payload}: it writes a character outside the Basic Multilingual Plane (an emoji) as two {@code
   * \\u} escapes, twelve bytes, where the payload may hold its four UTF-8 bytes (one lead byte
   * {@code 11110xxx} each). 0 when even twice the payload (the most this can add) fits in {@code
   * room}, without reading it (every payload but the largest). Avro and Protobuf write the four
   * bytes: counted for them too, which parks only a record near the limit.
   */
  static long escapeGrowth(byte[] payload, long room) {
    if (2L * payload.length <= room) {
      return 0;
    }
    long supplementary = 0;
    for (byte b : payload) {
      if ((b & 0xF8) == 0xF0) {
        supplementary++;
      }
    }
    return 8 * supplementary;
  }

  /** What JsonConverter writes for {@code length} bytes beyond them: base64, in quotes. */
  static long base64Growth(int length) {
    return 4L * ((length + 2L) / 3) + 2 - length;
  }

  /**
   * Writes schemaless Connect values as JsonConverter does (Jackson, its default features). A
   * holder, so that the mapper (and Jackson's data binding) is loaded only when a payload needs it,
   * not by the first record of a drain.
   */
  private static final class WrittenJson {
    static final ObjectMapper MAPPER = new ObjectMapper();
  }

  private static final class CountingStream extends OutputStream {
    long count;

    @Override
    public void write(int b) {
      count++;
    }

    @Override
    public void write(byte[] b, int off, int len) {
      count += len;
    }
  }

  static long upperBound(SourceRecord record, byte[] payload) {
    // + the key's length, the value's length and the header count, each at its widest
    long size = BATCH_OVERHEAD + RECORD_OVERHEAD + 3 * MAX_VARINT;
    size += utf8Length(record.key());
    size += payload == null ? 0 : payload.length;
    for (Header header : record.headers()) {
      size += MAX_VARINT + utf8Length(header.key()) + MAX_VARINT + utf8Length(header.value());
    }
    return size;
  }

  private static long utf8Length(Object value) {
    return value == null ? 0 : value.toString().getBytes(StandardCharsets.UTF_8).length;
  }
}
