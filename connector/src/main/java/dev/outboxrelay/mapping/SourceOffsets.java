package dev.outboxrelay.mapping;

import dev.outboxrelay.store.BucketShare;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.CommittedPosition;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * The source partition and offset of a row's record. Everything needed to record an acknowledgement
 * travels in the record itself (message id and lease token), so the task finds the row an
 * acknowledgement belongs to without any in-memory map. Transforms keep the source partition and
 * offset, so the helpers also work on the record {@code commitRecord} receives.
 */
public final class SourceOffsets {
  public static final String INSTANCE_KEY = "instance_key";
  public static final String MESSAGE_ID = "message_id";
  public static final String LEASE_TOKEN = "lease_token";
  public static final String SEQ = "seq";
  public static final String BUCKET = "bucket";
  public static final String BUCKETS = "buckets";
  public static final String EPOCH = "epoch";
  public static final String BATCH = "batch";
  public static final String PARKED = "parked";
  public static final String DEAD_LETTER_REASON = "dead_letter_reason";

  private SourceOffsets() {}

  /** {@code {"instance_key": ...}}: one source partition per instance key. */
  public static Map<String, String> partition(ClaimedMessage row) {
    return Map.of(INSTANCE_KEY, row.instanceKey());
  }

  /**
   * {@code {"message_id": String, "lease_token": Long, "seq": Long}}. An offset is a value, never
   * looked up by its bytes, so its key order does not matter (unlike a partition's).
   */
  public static Map<String, Object> offset(ClaimedMessage row) {
    return Map.of(MESSAGE_ID, row.messageId(), LEASE_TOKEN, row.lease().token(), SEQ, row.seq());
  }

  /**
   * A dead-letter copy's offset: the row's ({@link #offset}) and the reason code it was sent for,
   * which its acknowledgement records. Carried here, where nothing after the connector can change
   * it: a transform may edit the record's headers in place, and Connect acknowledges the record it
   * was given, whose headers object the transform shares.
   */
  public static Map<String, Object> deadLetterOffset(ClaimedMessage row, String reasonCode) {
    return Map.of(
        MESSAGE_ID,
        row.messageId(),
        LEASE_TOKEN,
        row.lease().token(),
        SEQ,
        row.seq(),
        DEAD_LETTER_REASON,
        reasonCode);
  }

  /** The reason code a dead-letter copy was sent for ({@link #deadLetterOffset}), if any. */
  public static Optional<String> deadLetterReason(SourceRecord record) {
    return offsetOf(record).get(DEAD_LETTER_REASON) instanceof String code
        ? Optional.of(code)
        : Optional.empty();
  }

  /**
   * Exactly-once: {@code {"bucket": b, "buckets": n, "instance_key": ...}}, one source partition
   * per bucket, whose committed offset names the last record of the bucket Kafka committed.
   *
   * <p>Its keys iterate in this fixed order, in every JVM. Connect finds a committed offset by the
   * bytes of its serialized source partition, and serializes a map's entries in their iteration
   * order; {@link Map#of}'s order is seeded anew in each JVM, so a task that moved to another
   * worker looked its offsets up under other bytes, found none, and sent again what its predecessor
   * had committed but not yet recorded. The order is the one a partition read back from the offsets
   * topic has (Connect's JSON converter reads an object into a HashMap): Connect's offsets REST
   * endpoints (KIP-875) list the stored partitions and look each up, or reset it, under its bytes
   * serialized again. In another order (instance_key first, until this release) every bucket's
   * offset was listed as null and a reset wrote its tombstones under other bytes than the offsets'.
   */
  public static Map<String, Object> bucketPartition(String instanceKey, int bucket, int buckets) {
    return ordered(BUCKET, bucket, BUCKETS, buckets, INSTANCE_KEY, instanceKey);
  }

  /**
   * {@link #bucketPartition} in each of the six orders of its keys, the fixed one first: the
   * partitions under which builds before the fixed order (whose order was the JVM's) may have
   * committed this bucket's offsets.
   */
  public static List<Map<String, Object>> bucketPartitionInEveryOrder(
      String instanceKey, int bucket, int buckets) {
    String[] k = {BUCKET, BUCKETS, INSTANCE_KEY};
    Object[] v = {bucket, buckets, instanceKey};
    int[][] orders = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    List<Map<String, Object>> partitions = new ArrayList<>(orders.length);
    for (int[] o : orders) {
      partitions.add(ordered(k[o[0]], v[o[0]], k[o[1]], v[o[1]], k[o[2]], v[o[2]]));
    }
    return partitions;
  }

  /** An unmodifiable map of three entries that iterates in the order given. */
  private static Map<String, Object> ordered(
      String k1, Object v1, String k2, Object v2, String k3, Object v3) {
    Map<String, Object> map = new LinkedHashMap<>(4);
    map.put(k1, v1);
    map.put(k2, v2);
    map.put(k3, v3);
    return Collections.unmodifiableMap(map);
  }

  /**
   * Exactly-once: the record moved to its bucket's partition, its offset carrying the row's
   * position ({@code epoch}, {@code batch}, {@code seq}) besides the message id and lease token;
   * {@code parked} marks a dead-letter record whose row was parked before it was sent.
   */
  public static SourceRecord atPosition(
      SourceRecord record,
      ClaimedMessage row,
      BucketShare share,
      long epoch,
      long batch,
      boolean parked) {
    Map<String, Object> offset = new LinkedHashMap<>(offset(row));
    offset.put(EPOCH, epoch);
    offset.put(BATCH, batch);
    if (parked) {
      offset.put(PARKED, true);
    }
    return new SourceRecord(
        bucketPartition(row.instanceKey(), share.bucketOf(row.aggregateHash()), share.buckets()),
        Collections.unmodifiableMap(offset),
        record.topic(),
        record.kafkaPartition(),
        record.keySchema(),
        record.key(),
        record.valueSchema(),
        record.value(),
        record.timestamp(),
        record.headers());
  }

  /** Exactly-once: a dead-letter record whose row was parked before it was sent. */
  public static boolean isParked(SourceRecord record) {
    return Boolean.TRUE.equals(offsetOf(record).get(PARKED));
  }

  /**
   * Exactly-once: the committed position a bucket's stored offset names; empty when it names none
   * (no offset, or one this connector's exactly-once mode did not write).
   */
  public static Optional<CommittedPosition> committedPosition(
      String instanceKey, int bucket, Map<String, ?> offset) {
    if (offset == null
        || !(offset.get(EPOCH) instanceof Number epoch)
        || !(offset.get(BATCH) instanceof Number batch)
        || !(offset.get(SEQ) instanceof Number seq)) {
      return Optional.empty();
    }
    return Optional.of(
        new CommittedPosition(
            instanceKey, bucket, epoch.longValue(), batch.longValue(), seq.longValue()));
  }

  /**
   * @throws IllegalArgumentException if the record was not made by this connector's mapping
   */
  public static String messageId(SourceRecord record) {
    if (offsetOf(record).get(MESSAGE_ID) instanceof String messageId) {
      return messageId;
    }
    throw new IllegalArgumentException("record has no outbox message id in its source offset");
  }

  /**
   * @throws IllegalArgumentException if the record was not made by this connector's mapping
   */
  public static long leaseToken(SourceRecord record) {
    return whole(record, LEASE_TOKEN, "lease token");
  }

  /**
   * @throws IllegalArgumentException if the record was not made by this connector's mapping
   */
  public static long seq(SourceRecord record) {
    return whole(record, SEQ, "seq");
  }

  /**
   * The exactly-once epoch of a record's position.
   *
   * @throws IllegalArgumentException if the record has no exactly-once position
   */
  public static long epoch(SourceRecord record) {
    return whole(record, EPOCH, "epoch");
  }

  /**
   * The exactly-once claim batch of a record's position.
   *
   * @throws IllegalArgumentException if the record has no exactly-once position
   */
  public static long batch(SourceRecord record) {
    return whole(record, BATCH, "claim batch");
  }

  /** A whole number of the offset: written as a Long, or an Integer once narrowed in transit. */
  private static long whole(SourceRecord record, String key, String what) {
    Object value = offsetOf(record).get(key);
    if (value instanceof Long || value instanceof Integer) {
      return ((Number) value).longValue();
    }
    throw new IllegalArgumentException("record has no " + what + " in its source offset");
  }

  private static Map<String, ?> offsetOf(SourceRecord record) {
    Map<String, ?> offset = record.sourceOffset();
    return offset == null ? Map.of() : offset;
  }
}
