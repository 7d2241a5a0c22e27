package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.MessageStatus;
import java.time.Instant;

/**
 * One outbox row as an operator sees it: relay state and routing fields. The payload and headers
 * are null unless they were explicitly asked for.
 */
public record RowView(
    long seq,
    String messageId,
    String instanceKey,
    MessageStatus status,
    String aggregateType,
    String aggregateId,
    String eventType,
    String topic,
    String correlationId,
    Instant createdAt,
    Instant deliverBefore,
    int attempts,
    int abandonedClaims,
    boolean isolated,
    Instant nextAttemptAt,
    String leaseOwner,
    long leaseToken,
    Instant leaseExpiresAt,
    String lastFailureCode,
    Instant publishedAt,
    Instant parkedAt,
    String kafkaTopic,
    Integer kafkaPartition,
    Long kafkaOffset,
    Long leaseEpoch,
    Long claimBatch,
    Integer payloadBytes,
    byte[] payload,
    String headersJson) {}
