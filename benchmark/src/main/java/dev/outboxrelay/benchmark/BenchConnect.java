package dev.outboxrelay.benchmark;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorStateInfo;
import org.apache.kafka.connect.runtime.rest.errors.ConnectRestException;
import org.apache.kafka.connect.util.clusters.EmbeddedConnectCluster;

/**
 * A real Connect cluster (one distributed worker with REST) and a real KRaft broker, in this JVM:
 * Kafka's own embedded test kit, as the integration tests use it.
 */
final class BenchConnect implements AutoCloseable {
  /**
   * The exactly-once worker's metrics sample window (a day; Connect's default is 30 s, two
   * samples): its tasks' windowed averages, {@code transaction-size-avg} among them, then cover a
   * whole run ({@link TransactionCost#transactions}).
   */
  static final long METRICS_WINDOW_MS = 86_400_000L;

  private final EmbeddedConnectCluster cluster;
  private final Admin admin;
  private final boolean exactlyOnce;

  BenchConnect() {
    this(null);
  }

  BenchConnect(Path pluginPath) {
    this(pluginPath, false);
  }

  /**
   * @param pluginPath a folder for the worker's {@code plugin.path} (Debezium's plugin), or null:
   *     the benchmark's own connectors are on the classpath either way
   * @param exactlyOnce a worker with {@code exactly.once.source.support=enabled} (KIP-618): every
   *     source task on it writes each poll's records and offsets in one Kafka transaction. A
   *     cluster of its own, since that worker setting applies to every connector it runs
   */
  BenchConnect(Path pluginPath, boolean exactlyOnce) {
    this.exactlyOnce = exactlyOnce;
    Map<String, String> worker = new HashMap<>(); // the kit writes into it: must be mutable
    worker.put("plugin.discovery", "service_load");
    if (pluginPath != null) {
      worker.put("plugin.path", pluginPath.toAbsolutePath().toString());
    }
    worker.put("offset.flush.interval.ms", "10000");
    // Lets connector configs carry producer.override.* (the tuning runs).
    worker.put("connector.client.config.override.policy", "All");
    Properties broker = new Properties();
    if (exactlyOnce) {
      worker.put("exactly.once.source.support", "enabled");
      worker.put("metrics.sample.window.ms", Long.toString(METRICS_WINDOW_MS));
      // One broker: the transaction state log must fit on it.
      broker.put("transaction.state.log.replication.factor", "1");
      broker.put("transaction.state.log.min.isr", "1");
    }
    cluster =
        new EmbeddedConnectCluster.Builder()
            .name(exactlyOnce ? "outbox-relay-benchmark-eos" : "outbox-relay-benchmark")
            .numWorkers(1)
            .numBrokers(1)
            .brokerProps(broker)
            .workerProps(worker)
            .build();
    cluster.start();
    admin = cluster.kafka().createAdminClient();
  }

  /** True when the worker runs source tasks exactly once (transactions). */
  boolean exactlyOnce() {
    return exactlyOnce;
  }

  String bootstrapServers() {
    return cluster.kafka().bootstrapServers();
  }

  void createTopic(String topic, int partitions) throws Exception {
    admin.createTopics(java.util.List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
  }

  void deleteTopic(String topic) throws Exception {
    admin.deleteTopics(java.util.List.of(topic)).all().get();
  }

  /**
   * Creates the connector; throws (with Connect's message) if Connect refuses its config. Once this
   * returned, the connector exists, whether or not it ever runs: a run deletes it from then on.
   */
  void configureConnector(String name, Map<String, String> config) throws InterruptedException {
    duringRebalance(() -> cluster.configureConnector(name, config));
  }

  /** Waits until the connector and exactly {@code tasks} tasks run. */
  void awaitRunning(String name, int tasks) throws InterruptedException {
    cluster
        .assertions()
        .assertConnectorAndExactlyNumTasksAreRunning(name, tasks, "connector did not start");
  }

  void pause(String name, int tasks) throws InterruptedException {
    cluster.pauseConnector(name); // a target state written, never refused for a rebalance
    cluster
        .assertions()
        .assertConnectorAndExactlyNumTasksArePaused(name, tasks, "connector did not pause");
  }

  /**
   * Stops the connector (KIP-875): unlike a pause, its tasks are shut down, so a connector with
   * background threads of its own (Debezium's WAL reader) does no work until {@link #resume}.
   */
  void stop(String name) throws InterruptedException {
    duringRebalance(() -> cluster.stopConnector(name));
    cluster.assertions().assertConnectorIsStopped(name, "connector did not stop");
  }

  void resume(String name) {
    cluster.resumeConnector(name); // as pause: and no retry may sit inside the timed drain
  }

  /** How long a REST request is tried again while the workers rebalance. */
  private static final Duration REBALANCE_PATIENCE = Duration.ofSeconds(60);

  /**
   * Runs a REST request, again while Connect answers 409 (the workers rebalance after a connector
   * was created or deleted, and the leader is briefly unknown), at most {@link
   * #REBALANCE_PATIENCE}; any other refusal is thrown at once.
   */
  private static void duringRebalance(Runnable request) throws InterruptedException {
    long deadline = System.nanoTime() + REBALANCE_PATIENCE.toNanos();
    while (true) {
      try {
        request.run();
        return;
      } catch (ConnectRestException e) {
        if (e.statusCode() != 409 || System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(200); // a rebalance takes a few hundred milliseconds to seconds
      }
    }
  }

  /** Throws if the connector or a task failed: a run with a failed task has no valid figure. */
  void requireHealthy(String name) {
    ConnectorStateInfo status = cluster.connectorStatus(name);
    if ("FAILED".equals(status.connector().state())) {
      throw new IllegalStateException("connector failed: " + status.connector().trace());
    }
    for (ConnectorStateInfo.TaskState task : status.tasks()) {
      if ("FAILED".equals(task.state())) {
        throw new IllegalStateException("task " + task.id() + " failed: " + task.trace());
      }
    }
  }

  void deleteConnector(String name) throws InterruptedException {
    duringRebalance(() -> cluster.deleteConnector(name));
    cluster
        .assertions()
        .assertConnectorDoesNotExist(name, "connector was not deleted within the kit's timeout");
  }

  static Duration startupTimeout() {
    return Duration.ofMinutes(1);
  }

  @Override
  public void close() {
    admin.close();
    cluster.stop();
  }
}
