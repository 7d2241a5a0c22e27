package dev.outboxrelay.mapping;

import dev.outboxrelay.store.ClaimedMessage;
import java.util.Map;
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

  private SourceOffsets() {}

  /** {@code {"instance_key": ...}}: one source partition per instance key. */
  public static Map<String, String> partition(ClaimedMessage row) {
    return Map.of(INSTANCE_KEY, row.instanceKey());
  }

  /** {@code {"message_id": String, "lease_token": Long, "seq": Long}}. */
  public static Map<String, Object> offset(ClaimedMessage row) {
    return Map.of(MESSAGE_ID, row.messageId(), LEASE_TOKEN, row.lease().token(), SEQ, row.seq());
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
    // Written as a Long; an Integer is accepted too, as a deserialized offset may be narrowed.
    Object token = offsetOf(record).get(LEASE_TOKEN);
    if (token instanceof Long || token instanceof Integer) {
      return ((Number) token).longValue();
    }
    throw new IllegalArgumentException("record has no lease token in its source offset");
  }

  private static Map<String, ?> offsetOf(SourceRecord record) {
    Map<String, ?> offset = record.sourceOffset();
    return offset == null ? Map.of() : offset;
  }
}
