package dev.outboxrelay.mapping;

import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.Lease;
import java.nio.charset.StandardCharsets;
import java.time.Instant;

/** Claimed rows for tests, built through the public constructor; every field can be changed. */
final class TestRows {
  static final Instant CREATED_AT = Instant.parse("2026-03-01T10:15:30.123Z");

  /** The store's clock when the rows were claimed. */
  static final Instant NOW = Instant.parse("2026-03-01T10:16:00Z");

  long seq = 42;
  String messageId = "msg-1";
  String instanceKey = "tenant-a";
  String aggregateType = "order";
  String aggregateId = "order-17";
  String eventType = "OrderPlaced";
  String topic;
  byte[] payload = utf8("{\"id\":17,\"total\":19.99}");
  long payloadLeftOut = -1;
  boolean headersOmitted;
  String headersJson;
  String correlationId;
  Instant createdAt = CREATED_AT;
  Instant deliverBefore;
  boolean deadlineExpired;
  int attempts;
  Lease lease = new Lease("worker-1", 7);

  static TestRows row() {
    return new TestRows();
  }

  static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  TestRows seq(long seq) {
    this.seq = seq;
    return this;
  }

  TestRows messageId(String messageId) {
    this.messageId = messageId;
    return this;
  }

  TestRows instanceKey(String instanceKey) {
    this.instanceKey = instanceKey;
    return this;
  }

  TestRows aggregateType(String aggregateType) {
    this.aggregateType = aggregateType;
    return this;
  }

  TestRows aggregateId(String aggregateId) {
    this.aggregateId = aggregateId;
    return this;
  }

  TestRows eventType(String eventType) {
    this.eventType = eventType;
    return this;
  }

  TestRows topic(String topic) {
    this.topic = topic;
    return this;
  }

  TestRows payload(byte[] payload) {
    this.payload = payload;
    return this;
  }

  TestRows payload(String utf8Payload) {
    return payload(utf8(utf8Payload));
  }

  TestRows createdAt(Instant createdAt) {
    this.createdAt = createdAt;
    return this;
  }

  TestRows headersJson(String headersJson) {
    this.headersJson = headersJson;
    return this;
  }

  TestRows correlationId(String correlationId) {
    this.correlationId = correlationId;
    return this;
  }

  /** Sets the deadline, judged expired or not as a claim at {@link #NOW} would. */
  TestRows deliverBefore(Instant deliverBefore) {
    this.deliverBefore = deliverBefore;
    this.deadlineExpired = deliverBefore != null && !deliverBefore.isAfter(NOW);
    return this;
  }

  /** Overrides the claim's judgement of the deadline. */
  TestRows deadlineExpired(boolean deadlineExpired) {
    this.deadlineExpired = deadlineExpired;
    return this;
  }

  TestRows lease(Lease lease) {
    this.lease = lease;
    return this;
  }

  /** As a claim returns a payload over its read limit: left in the database, its size given. */
  TestRows payloadLeftOut(long storedBytes) {
    this.payload = null;
    this.payloadLeftOut = storedBytes;
    return this;
  }

  /** As a claim returns headers over its read limit: left in the database. */
  TestRows headersLeftOut() {
    this.headersOmitted = true;
    return this;
  }

  ClaimedMessage build() {
    return new ClaimedMessage(
        seq,
        messageId,
        instanceKey,
        aggregateType,
        aggregateId,
        eventType,
        topic,
        payload,
        payloadLeftOut >= 0 ? payloadLeftOut : payload == null ? -1 : payload.length,
        headersOmitted ? null : headersJson,
        headersOmitted,
        correlationId,
        createdAt,
        deliverBefore,
        deadlineExpired,
        attempts,
        lease,
        createdAt.plusSeconds(60),
        aggregateId == null ? 0 : aggregateId.hashCode() & Integer.MAX_VALUE);
  }
}
