package dev.outboxrelay.connect;

import dev.outboxrelay.config.ConfigValidation;
import dev.outboxrelay.config.OutboxSourceConfig;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.ConnectorTransactionBoundaries;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Relays a PostgreSQL transactional outbox to Kafka. Every task claims rows of the configured
 * instance keys under fenced leases; tasks share the work through the claims themselves, so {@code
 * tasks.max} scales it out without any partitioning of the table. With ordering, each task prefers
 * its own share of the aggregates (a preference, not a partition: see {@code AggregateAffinity}).
 *
 * <p>With {@code delivery.guarantee=exactly-once} the aggregates are split into fixed buckets that
 * tasks own strictly, and at most that many tasks run (docs/design.md, "Exactly-once").
 */
public class OutboxSourceConnector extends SourceConnector {
  private static final Logger log = LoggerFactory.getLogger(OutboxSourceConnector.class);
  private Map<String, String> props;
  private OutboxSourceConfig config;

  @Override
  public String version() {
    return Version.get();
  }

  @Override
  public void start(Map<String, String> props) {
    try {
      config = new OutboxSourceConfig(props);
    } catch (ConfigException e) {
      // Without the value Kafka's message quotes: the connector's status shows it.
      throw new ConnectException(
          "Invalid outbox-relay configuration: "
              + TaskConfig.withoutValue(String.valueOf(e.getMessage())));
    }
    this.props = Map.copyOf(props);
    if (config.producerOrderLeftToTheWorker()) {
      log.warn(
          "producer.override.max.in.flight.requests.per.connection is above 1 with ordering.enabled"
              + "=true and producer.override.enable.idempotence not set: an aggregate's records"
              + " keep their order only if the worker makes the producer idempotent (its"
              + " producer.enable.idempotence=true, or exactly-once source support); set"
              + " producer.override.enable.idempotence=true (reason=ORDER_LEFT_TO_THE_WORKER)");
    }
    List<String> routers = config.topicRenamedAfterTheAllowedCheck();
    if (!routers.isEmpty()) {
      log.warn(
          "topic.allowed.regex judges the topic the relay routes a row to, before Connect's"
              + " transforms, and {} may rename it after: a row can then reach a topic the regex"
              + " would refuse (a writer's topic outbox.connect-configs made connect-configs by a"
              + " router stripping the prefix, say); route with topic.template instead, and keep"
              + " the producer's ACLs as the boundary (reason=TOPIC_RENAMED_AFTER_ALLOWED_CHECK)",
          routers);
    }
    String name = props.getOrDefault("name", "");
    if (LeaseOwners.nameIsAmbiguous(name)) {
      log.warn(
          "The connector's name is {}: its tasks' lease owners cannot tell it from a connector"
              + " whose name {}, which then takes this connector's tasks for its own earlier"
              + " instances (design.md, Exactly-once, Limits); give it a shorter name without"
              + " '/task-' (reason=CONNECTOR_NAME_AMBIGUOUS_IN_LEASES)",
          name.length() > LeaseOwners.NAME_KEPT
              ? "longer than "
                  + LeaseOwners.NAME_KEPT
                  + " characters, and leases keep the first"
                  + " "
                  + LeaseOwners.NAME_KEPT
              : "holding '/task-'",
          name.length() > LeaseOwners.NAME_KEPT
              ? "begins with the same " + LeaseOwners.NAME_KEPT
              : "is this name's part before '/task-'");
    }
    config
        .exactlyOnceIntervalMayOutlastTransaction()
        .ifPresent(
            assumed ->
                log.warn(
                    "transaction.boundary=interval with transaction.boundary.interval.ms {} and"
                        + " producer.override.transaction.timeout.ms {}: unless the worker sets"
                        + " them so (its offset.flush.interval.ms, its producer's"
                        + " transaction.timeout.ms), every transaction may still be open when the"
                        + " broker aborts it, and the task then fails at every restart; set the"
                        + " interval below the timeout in the connector's configuration"
                        + " (reason=INTERVAL_NOT_BELOW_TRANSACTION_TIMEOUT)",
                    said(assumed[0], "transaction.boundary.interval.ms"),
                    said(assumed[1], "producer.override.transaction.timeout.ms")));
    if (config.leaseMayRunOutBehindAStuckWrite()) {
      log.warn(
          "lease.duration.ms ({} ms) is not above lease.renewal.interval.ms ({} ms) plus"
              + " connection.timeout.ms ({} ms) plus statement.timeout.ms ({} ms): an outcome"
              + " write that waits for its connection and runs long (a slow database) can delay a"
              + " renewal until the lease runs out, and another task then sends the row again"
              + " (reason=LEASE_SHORTER_THAN_STUCK_WRITE)",
          config.leaseDuration().toMillis(),
          config.leaseRenewalInterval().toMillis(),
          config.connectionTimeout().toMillis(),
          config.statementTimeout().toMillis());
    }
  }

  /** A value as the warning says it: set in the configuration, or Kafka's default assumed. */
  private String said(long ms, String key) {
    return props.containsKey(key) ? ms + " ms" : "unset (" + ms + " ms by Kafka's default)";
  }

  @Override
  public Class<? extends Task> taskClass() {
    return OutboxSourceTask.class;
  }

  @Override
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    int tasks =
        OutboxSourceConfig.tasksStarted(
            maxTasks, config.exactlyOnce(), config.exactlyOnceBuckets());
    List<Map<String, String>> configs = new ArrayList<>(tasks);
    for (int i = 0; i < tasks; i++) {
      Map<String, String> task = new HashMap<>(props);
      task.put(OutboxSourceTask.TASK_ID, Integer.toString(i));
      task.put(OutboxSourceTask.TASK_COUNT, Integer.toString(tasks));
      task.put(OutboxSourceTask.CONNECTOR_NAME, props.getOrDefault("name", "outbox-relay"));
      configs.add(task);
    }
    return configs;
  }

  @Override
  public void stop() {}

  @Override
  public ConfigDef config() {
    return OutboxSourceConfig.configDef();
  }

  @Override
  public Config validate(Map<String, String> connectorConfigs) {
    return ConfigValidation.validate(connectorConfigs);
  }

  @Override
  public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> connectorConfig) {
    // at-least-once: the outcome write cannot join Kafka's transaction, and nothing reconciles
    // it. exactly-once: the committed source offsets tell a restarted task which claimed rows
    // Kafka committed (docs/design.md, "Exactly-once").
    String guarantee = connectorConfig.get(OutboxSourceConfig.DELIVERY_GUARANTEE_CONFIG);
    return guarantee != null && guarantee.trim().equalsIgnoreCase(OutboxSourceConfig.EXACTLY_ONCE)
        ? ExactlyOnceSupport.SUPPORTED
        : ExactlyOnceSupport.UNSUPPORTED;
  }

  /**
   * KIP-875's offset endpoints, on a stopped connector. A reset is accepted: at least once the task
   * never reads its offsets, and exactly once its next recovery then finds no committed position
   * among those the reset reached, so it releases the rows still leased by earlier instances and
   * they are sent again (duplicates, never a loss). An offset a build before the fixed partition
   * key order wrote is not reached (docs/design.md, Exactly-once, Limits): said, exactly once, at
   * the reset. Any other value is refused: a row's state lives in the table, and a position written
   * by hand could make an exactly-once recovery record PUBLISHED rows Kafka never had.
   */
  @Override
  public boolean alterOffsets(
      Map<String, String> connectorConfig, Map<Map<String, ?>, Map<String, ?>> offsets) {
    if (offsets.values().stream().anyMatch(Objects::nonNull)) {
      throw new ConnectException(
          "outbox-relay refuses to alter source offsets: each row's state is kept in the outbox"
              + " table, and an offset set by hand could make exactly-once recovery record rows"
              + " PUBLISHED that Kafka never had. Only a reset (DELETE /connectors/<name>/offsets)"
              + " is accepted; to send parked rows again use outbox-relay-cli requeue, to skip rows"
              + " park them.");
    }
    if (exactlyOnceSupport(connectorConfig) == ExactlyOnceSupport.SUPPORTED) {
      log.warn(
          "Source offsets of {} partitions being reset: the next start's recovery releases the rows"
              + " earlier instances left in flight, which are sent again; offsets a build before"
              + " the fixed partition key order committed are not reached by a reset: after"
              + " restoring or moving a database such a build relayed, create the connector under"
              + " a new name instead (reason=OFFSETS_RESET)",
          offsets.size());
    }
    return true;
  }

  @Override
  public ConnectorTransactionBoundaries canDefineTransactionBoundaries(
      Map<String, String> connectorConfig) {
    // poll (one claim batch per transaction) and interval keep the order the design relies on.
    return ConnectorTransactionBoundaries.UNSUPPORTED;
  }
}
