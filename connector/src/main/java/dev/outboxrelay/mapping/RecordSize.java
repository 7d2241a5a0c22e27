package dev.outboxrelay.mapping;

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
 * payload bytes: exact for the byte-array and string converters, close for JSON, which writes the
 * payload's JSON back.
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

  private RecordSize() {}

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
