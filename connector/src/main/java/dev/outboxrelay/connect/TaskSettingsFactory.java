package dev.outboxrelay.connect;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.mapping.MappingSettings;
import dev.outboxrelay.store.AggregateAffinity;
import dev.outboxrelay.store.BucketShare;
import java.time.Duration;

/** Resolves the task's settings from the validated configuration. */
final class TaskSettingsFactory {
  /** How many batches a task may hold unacknowledged: bounds memory on a huge backlog. */
  static final int BATCHES_IN_FLIGHT = 4;

  private TaskSettingsFactory() {}

  /** For a single task, or where the task's place among its siblings does not matter. */
  static TaskSettings from(OutboxSourceConfig config, String owner) {
    return from(config, owner, 0, 1);
  }

  /**
   * @param taskIndex this task's index among the connector's tasks
   * @param taskCount how many tasks the connector started
   */
  static TaskSettings from(OutboxSourceConfig config, String owner, int taskIndex, int taskCount) {
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
        // Records held stay under half the producer's buffer: sends then never block (a broker
        // that acknowledges nothing would hold the task thread in send(), and renewals with it).
        Math.max(1, config.producerBufferMemory() / 2),
        config.payloadMaxBytes(),
        config.producerRecordLimit(),
        // Look for abandoned rows a few times per lease: they block their aggregates meanwhile.
        lease.dividedBy(4),
        // Connect closes the producer within 30 s of stop; later acknowledgements cannot come.
        // Exactly once, none comes after stop at all: Connect acknowledges a transaction's records
        // on the task thread once it commits, and calls stop() on that thread after the last one;
        // 2 s only to retry writing the outcomes in hand through a passing database error.
        config.exactlyOnce() ? Duration.ofSeconds(2) : Duration.ofSeconds(30),
        // Ordered tasks that prefer disjoint aggregates never wait on each other's in-flight rows;
        // exactly-once tasks own their buckets strictly instead.
        config.orderingEnabled() && !config.exactlyOnce()
            ? AggregateAffinity.ofTask(taskIndex, taskCount)
            : null,
        // As often as abandoned rows are looked for: the same few times per lease.
        lease.dividedBy(4),
        config.exactlyOnce()
            ? new BucketShare(
                config.exactlyOnceBuckets(),
                taskIndex,
                Math.min(taskCount, config.exactlyOnceBuckets()))
            : null,
        // A suspect alone waits for its transaction to commit: at the end of its poll, or with
        // transaction.boundary=interval only at the end of the interval (a minute per suspect).
        config.exactlyOnce() && config.transactionPerPoll());
  }

  static MappingSettings mapping(OutboxSourceConfig config) {
    return new MappingSettings(
        config.topicTemplate(),
        config.routingConvention(),
        config.payloadFormat(),
        config.payloadMaxBytes(),
        config.deadLetterTopic().orElse(null),
        config.producerRecordLimit(),
        config.allowedTopics().orElse(null),
        config.inferredSchema().orElse(null),
        config.valueConverter(),
        config.keyConverter(),
        config.headerConverter(),
        config.recordTimestamp());
  }
}
