package dev.outboxrelay.store;

import java.time.Instant;
import java.util.Objects;

/**
 * A row as returned by a claim: its routing fields, payload and the lease that now holds it.
 *
 * @param seq insertion sequence, the per-aggregate order
 * @param topic explicit topic, or null to route by the connector's template
 * @param payload the bytes exactly as the application wrote them; null for a null payload (a
 *     tombstone), and for one over the claim's read limit ({@link #payloadOmitted})
 * @param payloadBytes the stored payload's size in bytes (a mapped text column's in UTF-8), read or
 *     not; -1 for a null payload
 * @param headersJson the row's own headers as a JSON object text, or null (none, or {@link
 *     #headersOmitted})
 * @param headersOmitted the headers were left in the database: their text over the claim's read
 *     limit (a record that could never be sent)
 * @param deliverBefore the row is only worth sending before this instant, or null
 * @param deadlineExpired {@code deliverBefore} had passed when the row was claimed, judged by the
 *     store's clock (the database's in production) like every other time, never a worker's
 * @param attempts charged attempts so far (before this claim's own outcome)
 * @param aggregateHash the aggregate's non-negative hash, as the store computes it: it places the
 *     aggregate in an exactly-once bucket ({@link BucketShare#bucketOf})
 */
public record ClaimedMessage(
    long seq,
    String messageId,
    String instanceKey,
    String aggregateType,
    String aggregateId,
    String eventType,
    String topic,
    byte[] payload,
    long payloadBytes,
    String headersJson,
    boolean headersOmitted,
    String correlationId,
    Instant createdAt,
    Instant deliverBefore,
    boolean deadlineExpired,
    int attempts,
    Lease lease,
    Instant leaseExpiresAt,
    int aggregateHash) {

  public ClaimedMessage {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(instanceKey, "instanceKey");
    Objects.requireNonNull(lease, "lease");
  }

  /** The payload was left in the database: over the claim's read limit. */
  public boolean payloadOmitted() {
    return payload == null && payloadBytes >= 0;
  }

  public HeldLease heldLease() {
    return new HeldLease(messageId, seq, lease);
  }

  @Override
  public String toString() {
    // Never render the payload or headers: they may carry personal data or secrets.
    return "ClaimedMessage[messageId="
        + messageId
        + ", instanceKey="
        + instanceKey
        + ", seq="
        + seq
        + ", attempts="
        + attempts
        + "]";
  }
}
