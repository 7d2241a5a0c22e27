package dev.outboxrelay.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.outboxrelay.connect.OutboxSourceConnector;
import dev.outboxrelay.store.postgres.DataSourceFactory;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import jakarta.ws.rs.core.Response;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorStateInfo;
import org.apache.kafka.connect.runtime.rest.errors.ConnectRestException;
import org.apache.kafka.connect.util.clusters.EmbeddedConnectCluster;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real distributed Connect cluster in the test JVM (Kafka's own test kit): a KRaft broker and one
 * or more workers sharing one group, each with its REST API. Connectors are deployed through REST
 * with JSON configs. Test classes share one cluster per {@link Options} for the whole run (see
 * {@link #shared}); each test uses its own connectors, topics and database.
 */
public final class ConnectCluster implements BeforeAllCallback {
  public static final String CONNECTOR_CLASS = OutboxSourceConnector.class.getName();
  public static final String STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter";
  public static final String BYTES_CONVERTER =
      "org.apache.kafka.connect.converters.ByteArrayConverter";
  public static final String JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter";

  /**
   * What a cluster is made of: its name, its workers and their settings beyond the common ones, and
   * its broker's settings beyond the common ones.
   */
  public record Options(
      String name, int workers, Map<String, String> workerProps, Map<String, String> brokerProps) {
    public Options(String name, int workers, Map<String, String> workerProps) {
      this(name, workers, workerProps, Map.of());
    }

    public static Options named(String name) {
      return new Options(name, 1, Map.of());
    }

    public Options workers(int count) {
      return new Options(name, count, workerProps, brokerProps);
    }

    public Options workerProp(String key, String value) {
      Map<String, String> props = new LinkedHashMap<>(workerProps);
      props.put(key, value);
      return new Options(name, workers, Map.copyOf(props), brokerProps);
    }

    public Options brokerProp(String key, String value) {
      Map<String, String> props = new LinkedHashMap<>(brokerProps);
      props.put(key, value);
      return new Options(name, workers, workerProps, Map.copyOf(props));
    }
  }

  /** The integration tests': one worker. */
  public static final Options ONE_WORKER = Options.named("outbox-relay-it");

  /**
   * The reliability suite's: two workers, which notice a dead member within 6 s (session timeout)
   * and hand its work to the others once it stayed away for 10 s more. Note that a worker that
   * cannot reach the group coordinator for {@code heartbeat.interval.ms} (1 s here) revokes all its
   * own tasks: Connect's rule, not ours.
   */
  public static final Options TWO_WORKERS =
      Options.named("outbox-relay-reliability")
          .workers(2)
          .workerProp("session.timeout.ms", "6000")
          .workerProp("heartbeat.interval.ms", "1000")
          .workerProp("scheduled.rebalance.max.delay.ms", "10000");

  private final Options options;
  private volatile Running running;

  private ConnectCluster(Options options) {
    this.options = options;
  }

  /**
   * The cluster of these options, as a JUnit extension to register with {@code @RegisterExtension}
   * on a static field: the first test class of the run that registers it starts the cluster, every
   * later one gets the same, and JUnit stops it when the whole run ends.
   */
  public static ConnectCluster shared(Options options) {
    return new ConnectCluster(options);
  }

  /** A started cluster; closed by JUnit once every test class has run. */
  private record Running(EmbeddedConnectCluster connect, Map<String, String> workerProps)
      implements AutoCloseable {
    @Override
    public void close() {
      connect.stop();
    }
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    running =
        context
            .getRoot()
            .getStore(ExtensionContext.Namespace.GLOBAL)
            .getOrComputeIfAbsent(options, o -> start(options), Running.class);
  }

  /** Starts a cluster of these options; the log capture is installed first. */
  private static Running start(Options options) {
    LogCapture.get();
    Map<String, String> workerProps = new HashMap<>(); // mutable: the kit writes into it
    workerProps.put("plugin.discovery", "service_load");
    workerProps.put("offset.flush.interval.ms", "1000");
    workerProps.putAll(options.workerProps());
    Properties brokerProps = new Properties();
    brokerProps.put("auto.create.topics.enable", "true");
    brokerProps.put("num.partitions", "3");
    // One broker: transactions (exactly-once workers) need their state log to fit on it.
    brokerProps.put("transaction.state.log.replication.factor", "1");
    brokerProps.put("transaction.state.log.min.isr", "1");
    brokerProps.putAll(options.brokerProps());
    EmbeddedConnectCluster cluster =
        new EmbeddedConnectCluster.Builder()
            .name(options.name())
            .numWorkers(options.workers())
            .numBrokers(1)
            .workerProps(workerProps)
            .brokerProps(brokerProps)
            .build();
    cluster.start();
    return new Running(cluster, workerProps);
  }

  private Running running() {
    Running r = running;
    if (r == null) {
      throw new IllegalStateException(
          "register ConnectCluster.shared(...) with @RegisterExtension on a static field");
    }
    return r;
  }

  /** The test kit's cluster itself: its REST client, its assertions, its broker. */
  public EmbeddedConnectCluster connect() {
    return running().connect();
  }

  /** The workers' effective settings, as the kit completed them (group, topics, bootstrap). */
  public Map<String, String> workerProps() {
    return Map.copyOf(running().workerProps());
  }

  /**
   * The settings every test starts from: this database, these instance keys, explicit converters,
   * short poll and retry times, published rows kept for the assertions. A mutable copy.
   */
  public static Map<String, String> relayConfig(OutboxDb db, String instanceKeys, int tasks) {
    Map<String, String> config = new LinkedHashMap<>();
    config.put("connector.class", CONNECTOR_CLASS);
    config.put("tasks.max", Integer.toString(tasks));
    config.put("key.converter", STRING_CONVERTER);
    config.put("value.converter", BYTES_CONVERTER);
    config.put("connection.url", db.url());
    config.put("connection.user", db.user());
    config.put("connection.pool.size", "2");
    config.put("connection.timeout.ms", "1000");
    config.put("instance.keys", instanceKeys);
    config.put("poll.interval.ms", "200");
    config.put("claim.batch.size", "25");
    config.put("retry.backoff.initial.ms", "200");
    config.put("retry.backoff.max.ms", "1000");
    config.put("retention.published.ms", "-1");
    return config;
  }

  /** PUT /connectors/{name}/config with the config as JSON, then waits for every task to run. */
  public void deploy(String name, Map<String, String> config) throws InterruptedException {
    configure(name, config);
    awaitRunning(name, Integer.parseInt(config.getOrDefault("tasks.max", "1")));
  }

  /**
   * PUT /connectors/{name}/config with the config as JSON, again while Connect answers 409 (the
   * workers rebalance after the previous change); does not wait for the tasks.
   */
  public void configure(String name, Map<String, String> config) {
    duringRebalance(name + " configured", () -> connect().configureConnector(name, config));
  }

  /**
   * Restarts one task through REST, again while Connect answers 409: right after a reconfiguration
   * the workers rebalance, and the leader is briefly unknown.
   */
  public void restartTask(String name, int task) {
    duringRebalance(
        "task " + task + " of " + name + " restarted", () -> connect().restartTask(name, task));
  }

  /** Restarts the connector and its tasks through REST, again while Connect answers 409. */
  public void restartConnectorAndTasks(String name) {
    duringRebalance(
        name + " restarted", () -> connect().restartConnectorAndTasks(name, false, true, false));
  }

  private static void duringRebalance(String what, Runnable request) {
    Awaitility.await(what)
        .atMost(Duration.ofSeconds(60))
        .ignoreExceptionsMatching(e -> e instanceof ConnectRestException c && c.statusCode() == 409)
        .until(
            () -> {
              request.run();
              return true;
            });
  }

  public void awaitRunning(String name, int tasks) throws InterruptedException {
    connect()
        .assertions()
        .assertConnectorAndExactlyNumTasksAreRunning(name, tasks, name + " did not start");
  }

  /** Deletes the connector and waits until it is gone; fails if it is not. */
  public void delete(String name) throws InterruptedException {
    duringRebalance(name + " deleted", () -> connect().deleteConnector(name));
    connect().assertions().assertConnectorDoesNotExist(name, name + " was not deleted");
  }

  /**
   * {@link #delete}, then waits until the relay holds no connection to {@code db} (pools and
   * listener): its tasks have stopped. The REST call returns before they do, and a task still
   * stopping could claim the rows of a next test that uses the same database and instance key.
   */
  public void deleteAndAwaitStopped(String name, OutboxDb db) throws InterruptedException {
    delete(name);
    Awaitility.await(name + "'s tasks stopped")
        .atMost(Duration.ofSeconds(90))
        .until(
            () ->
                db.backends(DataSourceFactory.APPLICATION_NAME) == 0
                    && db.backends(DataSourceFactory.APPLICATION_NAME + "-listener") == 0);
  }

  /** {@link #delete}, best effort, for clean-up: a test that follows uses other names. */
  public void deleteQuietly(String name) {
    try {
      delete(name);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      // Best effort in clean-up: the next test uses its own connector names and database.
    }
  }

  public ConnectorStateInfo status(String name) {
    return connect().connectorStatus(name);
  }

  /** Asserts the connector and each of its tasks report RUNNING right now. */
  public void assertRunning(String name, int tasks) {
    ConnectorStateInfo status = status(name);
    assertEquals("RUNNING", status.connector().state(), () -> name + ": " + status);
    assertEquals(tasks, status.tasks().size(), () -> name + ": " + status);
    status
        .tasks()
        .forEach(
            t -> assertEquals("RUNNING", t.state(), () -> name + " task " + t.id() + ": " + t));
  }

  /** True when the connector and each of its tasks report RUNNING right now. */
  public boolean allRunning(String name) {
    try {
      ConnectorStateInfo s = status(name);
      return "RUNNING".equals(s.connector().state())
          && !s.tasks().isEmpty()
          && s.tasks().stream().allMatch(t -> "RUNNING".equals(t.state()));
    } catch (RuntimeException e) {
      return false;
    }
  }

  public List<String> taskStates(String name) {
    ConnectorStateInfo status;
    try {
      status = status(name);
    } catch (ConnectRestException e) {
      if (e.statusCode() == 404) {
        return List.of(); // a new connector has no status until a worker reports one
      }
      throw e;
    }
    return status.tasks().stream().map(t -> t.id() + "=" + t.state()).toList();
  }

  /** The raw JSON of GET /connectors/{name}/status, traces of failed tasks included. */
  public String rawStatus(String name) {
    return body(
        connect().requestGet(connect().endpointForResource("connectors/" + name + "/status")));
  }

  /** Raw JSON of GET /connectors?expand=status: every connector, and each of its tasks. */
  public String rawAllStatuses() {
    return body(connect().requestGet(connect().endpointForResource("connectors?expand=status")));
  }

  /** The kit's client answers with the body already read, as a String entity. */
  private static String body(Response response) {
    return String.valueOf(response.getEntity());
  }

  /**
   * POST /connectors/{name}/restart?includeTasks=true&onlyFailed=true, again while Connect answers
   * 409 (a rebalance under way); any other status but 2xx fails the test.
   */
  /**
   * Exactly once: restarts the connector's failed tasks when every one of them failed on the
   * broker's {@code InvalidTxnStateException}, as an operator or Strimzi's auto-restart would: a
   * new instance's first commit right after an earlier instance's end can be refused while the
   * transaction coordinator still completes that instance's transaction (docs/reliability.md, E1),
   * and Connect leaves such a task failed. A task failed for any other reason stays failed, for the
   * test to see. Quiet while the connector's status cannot be read (a rebalance).
   */
  public void restartTasksTheBrokerFailed(String name) {
    List<ConnectorStateInfo.TaskState> failed;
    try {
      failed = status(name).tasks().stream().filter(t -> "FAILED".equals(t.state())).toList();
    } catch (RuntimeException e) {
      return;
    }
    if (!failed.isEmpty()
        && failed.stream()
            .allMatch(t -> t.trace() != null && t.trace().contains("InvalidTxnStateException"))) {
      restartFailedTasks(name);
    }
  }

  public void restartFailedTasks(String name) {
    Awaitility.await(name + "'s failed tasks restarted")
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> {
              Response response =
                  connect()
                      .requestPost(
                          connect()
                              .endpointForResource(
                                  "connectors/"
                                      + name
                                      + "/restart?includeTasks=true&onlyFailed=true"),
                          "",
                          Map.of());
              int status = response.getStatus();
              if (status == 409) {
                return false;
              }
              assertEquals(
                  2, status / 100, () -> "restart answered " + status + ": " + body(response));
              return true;
            });
  }

  public void createTopic(String topic, int partitions) {
    connect().kafka().createTopic(topic, partitions);
  }

  /** A topic with these topic configs (e.g. retention.ms), replicated once. */
  public void createTopic(String topic, int partitions, Map<String, String> topicConfig) {
    connect().kafka().createTopic(topic, partitions, 1, topicConfig);
  }

  /** Everything in these topics up to their current end offsets, in partition then offset order. */
  public List<Delivered> readAll(String... topics) {
    return KafkaRecords.readAll(connect().kafka(), topics);
  }

  /** What a read_committed consumer sees of these topics (exactly-once). */
  public List<Delivered> readCommitted(String... topics) {
    return KafkaRecords.readAll(connect().kafka(), "read_committed", topics);
  }
}
