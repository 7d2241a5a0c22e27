package dev.outboxrelay.cli.operator;

import java.time.Duration;

/**
 * The oldest row of a status: what an operator looks at first. Age is by the database clock; null
 * for a row whose {@code created_at} is an infinite time.
 */
public record OldestRow(String messageId, String reasonCode, Duration age) {}
