package dev.outboxrelay.reliability;

import static org.awaitility.Awaitility.await;

import dev.outboxrelay.connect.OutboxSourceConnector;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.OutboxDb;
import jakarta.ws.rs.core.Response;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorStateInfo;
import org.apache.kafka.connect.util.clusters.EmbeddedConnectCluster;

/**
 * A real distributed Connect cluster in the test JVM (Kafka's own test kit): a KRaft broker and
 * {@code workers} workers sharing one group, each with its REST API. Connectors are deployed
 * through REST with JSON configs. One per test class.
 */
final class ConnectKit implements AutoCloseable {
  static final String STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter";
  static final String BYTES_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter";

  /** Generous bounds for a loaded 2-core machine; every wait is on a condition. */
  static final Duration STARTUP = Duration.ofSeconds(90);

  private final EmbeddedConnectCluster connect;
  private final Map<String, String> workerProps;

  private ConnectKit(EmbeddedConnectCluster connect, Map<String, String> workerProps) {
    this.connect = connect;
    this.workerProps = workerProps;
  }

  /**
   * Workers notice a dead member within 6 s (session timeout) and hand its work to the others once
   * it stayed away for this long. Note that a worker that cannot reach the group coordinator for
   * {@code heartbeat.interval.ms} (1 s here) revokes all its own tasks: Connect's rule, not ours.
   */
  static final Duration REBALANCE_DELAY = Duration.ofSeconds(10);

  static ConnectKit start(String name, int workers) {
    LogCapture.get();
    Map<String, String> workerProps = new HashMap<>(); // mutable: the kit writes into it
    workerProps.put("plugin.discovery", "service_load");
    workerProps.put("offset.flush.interval.ms", "1000");
    workerProps.put("session.timeout.ms", "6000");
    workerProps.put("heartbeat.interval.ms", "1000");
    workerProps.put("scheduled.rebalance.max.delay.ms", Long.toString(REBALANCE_DELAY.toMillis()));
    Properties brokerProps = new Properties();
    brokerProps.put("auto.create.topics.enable", "true");
    brokerProps.put("num.partitions", "3");
    EmbeddedConnectCluster cluster =
        new EmbeddedConnectCluster.Builder()
            .name(name)
            .numWorkers(workers)
            .numBrokers(1)
            .workerProps(workerProps)
            .brokerProps(brokerProps)
            .build();
    cluster.start();
    return new ConnectKit(cluster, workerProps);
  }

  EmbeddedConnectCluster connect() {
    return connect;
  }

  /** The workers' effective settings, as the kit completed them (group, topics, bootstrap). */
  Map<String, String> workerProps() {
    return Map.copyOf(workerProps);
  }

  /** A connector config relaying {@code instanceKeys} of {@code db} to {@code topic}. */
  static Map<String, String> relayConfig(
      OutboxDb db, String instanceKeys, int tasks, String topic) {
    Map<String, String> config = new LinkedHashMap<>();
    config.put("connector.class", OutboxSourceConnector.class.getName());
    config.put("tasks.max", Integer.toString(tasks));
    config.put("key.converter", STRING_CONVERTER);
    config.put("value.converter", BYTES_CONVERTER);
    config.put("connection.url", db.url());
    config.put("connection.user", db.user());
    config.put("connection.pool.size", "3");
    config.put("connection.timeout.ms", "1000");
    config.put("instance.keys", instanceKeys);
    config.put("topic.template", topic);
    config.put("claim.batch.size", "100");
    config.put("poll.interval.ms", "500");
    config.put("lease.duration.ms", Long.toString(Scenario.LEASE.toMillis()));
    config.put("lease.renewal.interval.ms", Long.toString(Scenario.LEASE.toMillis() / 4));
    config.put("retry.backoff.initial.ms", "200");
    config.put("retry.backoff.max.ms", "1000");
    config.put("retention.published.ms", "-1");
    config.put("metrics.backlog.interval.ms", "1000");
    return config;
  }

  /** PUT /connectors/{name}/config with the config as JSON; waits for every task to run. */
  void deploy(String name, Map<String, String> config) throws InterruptedException {
    connect.configureConnector(name, config);
    awaitRunning(name, Integer.parseInt(config.get("tasks.max")));
  }

  void awaitRunning(String name, int tasks) throws InterruptedException {
    connect
        .assertions()
        .assertConnectorAndExactlyNumTasksAreRunning(name, tasks, name + " did not start");
  }

  void delete(String name) {
    try {
      connect.deleteConnector(name);
      connect.assertions().assertConnectorDoesNotExist(name, name + " was not deleted");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      // Best effort in clean-up: the next test uses its own connector names and database.
    }
  }

  ConnectorStateInfo status(String name) {
    return connect.connectorStatus(name);
  }

  /** The raw JSON of GET /connectors/{name}/status, traces of failed tasks included. */
  String rawStatus(String name) {
    return body(connect.requestGet(connect.endpointForResource("connectors/" + name + "/status")));
  }

  /** Raw JSON of GET /connectors?expand=status: every connector, and each of its tasks. */
  String rawAllStatuses() {
    return body(connect.requestGet(connect.endpointForResource("connectors?expand=status")));
  }

  /** The kit's client answers with the body already read, as a String entity. */
  private static String body(Response response) {
    return String.valueOf(response.getEntity());
  }

  /** True when the connector and each of its tasks report RUNNING right now. */
  boolean allRunning(String name) {
    try {
      ConnectorStateInfo s = status(name);
      return "RUNNING".equals(s.connector().state())
          && !s.tasks().isEmpty()
          && s.tasks().stream().allMatch(t -> "RUNNING".equals(t.state()));
    } catch (RuntimeException e) {
      return false;
    }
  }

  List<String> taskStates(String name) {
    return status(name).tasks().stream().map(t -> t.id() + "=" + t.state()).toList();
  }

  void createTopic(String topic, int partitions) {
    connect.kafka().createTopic(topic, partitions);
  }

  /** Waits for {@code condition}, polling, within {@code atMost}. */
  static void awaitTrue(String what, Duration atMost, Callable<Boolean> condition) {
    awaitTrue(what, atMost, Duration.ofMillis(100), condition);
  }

  static void awaitTrue(String what, Duration atMost, Duration poll, Callable<Boolean> condition) {
    await(what).atMost(atMost).pollInterval(poll).until(condition);
  }

  /** POST /connectors/{name}/restart?includeTasks=true&onlyFailed=true. */
  void restartFailedTasks(String name) {
    connect.requestPost(
        connect.endpointForResource(
            "connectors/" + name + "/restart?includeTasks=true&onlyFailed=true"),
        "",
        Map.of());
  }

  @Override
  public void close() {
    connect.stop();
  }
}
