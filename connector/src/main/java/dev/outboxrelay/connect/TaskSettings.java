package dev.outboxrelay.connect;

import dev.outboxrelay.config.NullMetadataPolicy;
import dev.outboxrelay.retry.BackoffPolicy;
import dev.outboxrelay.store.AggregateAffinity;
import dev.outboxrelay.store.BucketShare;
import dev.outboxrelay.store.ClaimRequest;
import java.time.Duration;
import java.util.Set;

/**
 * What the task's loops need, resolved from the connector configuration once.
 *
 * @param maxInFlight how many records handed to Connect and unresolved stop the next claim (a few
 *     batches; a claim started below it may take a whole batch more)
 * @param maxInFlightBytes how many bytes of such records (estimated) stop the next claim; a claim
 *     takes fewer rows than a batch where they would pass it (half the producer's buffer, so that a
 *     broker that acknowledges nothing never blocks the task thread in a send)
 * @param payloadMaxBytes the largest payload a row may have, what a task assumes of its first rows
 * @param recordMaxBytes the largest record the producer sends: headers larger, never sent, are not
 *     read
 * @param affinity the share of aggregates this task claims first when ordered; {@code null} for a
 *     single task or unordered claims
 * @param shareFallbackDelay how long the task's share must stay dry before it claims other shares
 * @param buckets exactly-once: the buckets this task owns, strictly; {@code null} in at-least-once
 *     mode
 * @param isolatesSuspects exactly-once: whether suspects are claimed alone (docs/design.md,
 *     "Suspects"): with Connect's default transaction boundary, one transaction per poll
 */
record TaskSettings(
    String owner,
    Set<String> instanceKeys,
    int batchSize,
    Duration pollInterval,
    Duration leaseDuration,
    Duration leaseRenewalInterval,
    int maxAttempts,
    BackoffPolicy backoff,
    boolean ordered,
    NullMetadataPolicy nullMetadataPolicy,
    int maxInFlight,
    long maxInFlightBytes,
    int payloadMaxBytes,
    int recordMaxBytes,
    Duration abandonedProbeInterval,
    Duration lateAckGrace,
    AggregateAffinity affinity,
    Duration shareFallbackDelay,
    BucketShare buckets,
    boolean isolatesSuspects) {

  boolean exactlyOnce() {
    return buckets != null;
  }

  /**
   * A batch; payloads over payload.max.bytes and headers over the producer's record limit, never
   * published, stay in the database.
   */
  ClaimRequest claimRequest() {
    return new ClaimRequest(
            owner, instanceKeys, batchSize, leaseDuration, maxAttempts, ordered, affinity)
        .withPayloadReadLimit(payloadMaxBytes)
        .withHeadersReadLimit(recordMaxBytes);
  }
}
