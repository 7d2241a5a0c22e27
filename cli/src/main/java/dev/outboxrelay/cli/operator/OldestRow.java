package dev.outboxrelay.cli.operator;

import java.time.Duration;

/** The oldest row of a status: what an operator looks at first. Age is by the database clock. */
public record OldestRow(String messageId, String reasonCode, Duration age) {}
