package dev.outboxrelay.store;

/** Relay state of an outbox row. The database CHECK constraint lists exactly these values. */
public enum MessageStatus {
  /** Written by the application, never claimed or released back. */
  PENDING,
  /** Claimed under a lease; the owner has handed (or is about to hand) it to Kafka. */
  IN_FLIGHT,
  /** Kafka acknowledged it; the row carries the topic, partition and offset. */
  PUBLISHED,
  /** An attempt ended without a confirmed delivery; retried once {@code next_attempt_at} is due. */
  AMBIGUOUS,
  /** Can never be published (poison row, dead-lettered); kept with a reason code. */
  FAILED,
  /** The attempt budget is spent; kept with a reason code until an operator requeues it. */
  EXHAUSTED;

  /** Rows in these states still await delivery and take part in per-aggregate ordering. */
  public boolean isActive() {
    return this == PENDING || this == IN_FLIGHT || this == AMBIGUOUS;
  }
}
