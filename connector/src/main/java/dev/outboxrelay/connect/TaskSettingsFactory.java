package dev.outboxrelay.connect;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.mapping.MappingSettings;
import java.time.Duration;

/** Resolves the task's settings from the validated configuration. */
final class TaskSettingsFactory {
  /** How many batches a task may hold unacknowledged: bounds memory on a huge backlog. */
  static final int BATCHES_IN_FLIGHT = 4;

  private TaskSettingsFactory() {}

  static TaskSettings from(OutboxSourceConfig config, String owner) {
    Duration lease = config.leaseDuration();
    return new TaskSettings(
        owner,
        config.instanceKeys(),
        config.batchSize(),
        config.pollInterval(),
        lease,
        config.leaseRenewalInterval(),
        config.maxAttempts(),
        config.backoff(),
        config.orderingEnabled(),
        config.nullMetadataPolicy(),
        config.batchSize() * BATCHES_IN_FLIGHT,
        // Look for abandoned rows a few times per lease: they block their aggregates meanwhile.
        lease.dividedBy(4),
        // Connect closes the producer within 30 s of stop; later acknowledgements cannot come.
        Duration.ofSeconds(30));
  }

  static MappingSettings mapping(OutboxSourceConfig config) {
    return new MappingSettings(
        config.topicTemplate(),
        config.routingConvention(),
        config.payloadFormat(),
        config.payloadMaxBytes(),
        config.deadLetterTopic().orElse(null));
  }
}
