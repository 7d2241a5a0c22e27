package dev.outboxrelay.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.outboxrelay.connect.OutboxSourceConnector;
import dev.outboxrelay.mapping.OutboxHeaders;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.OutboxDb;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorStateInfo;
import org.apache.kafka.connect.util.clusters.EmbeddedConnectCluster;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One real Connect cluster (a distributed worker with its REST API, and a KRaft broker), started
 * once per test JVM and shared by every test class of this package that extends with it; it is
 * stopped when the whole run ends. Connectors are deployed through the REST API with JSON configs.
 */
final class RelayCluster implements BeforeAllCallback {
  static final String CONNECTOR_CLASS = OutboxSourceConnector.class.getName();
  static final String STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter";
  static final String BYTES_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter";
  static final String JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter";

  /** Generous bounds for a 2-core CI machine; conditions are awaited, never slept on. */
  static final long CONSUME_TIMEOUT_MS = 60_000;

  private static EmbeddedConnectCluster connect;

  /** Closed by JUnit once every test class has run. */
  private record Running(EmbeddedConnectCluster cluster) implements AutoCloseable {
    @Override
    public void close() {
      synchronized (RelayCluster.class) {
        cluster.stop();
        connect = null;
      }
    }
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    context
        .getRoot()
        .getStore(ExtensionContext.Namespace.GLOBAL)
        .getOrComputeIfAbsent(RelayCluster.class, k -> new Running(start()), Running.class);
  }

  private static synchronized EmbeddedConnectCluster start() {
    LogCapture.get();
    Map<String, String> workerProps = new HashMap<>(); // mutable: the kit writes into it
    workerProps.put("plugin.discovery", "service_load");
    workerProps.put("offset.flush.interval.ms", "1000");
    Properties brokerProps = new Properties();
    brokerProps.put("auto.create.topics.enable", "true");
    brokerProps.put("num.partitions", "3");
    EmbeddedConnectCluster cluster =
        new EmbeddedConnectCluster.Builder()
            .name("outbox-relay-it")
            .numWorkers(1)
            .numBrokers(1)
            .workerProps(workerProps)
            .brokerProps(brokerProps)
            .build();
    cluster.start();
    connect = cluster;
    return cluster;
  }

  static synchronized EmbeddedConnectCluster connect() {
    if (connect == null) {
      throw new IllegalStateException(
          "annotate the test class with @ExtendWith(RelayCluster.class)");
    }
    return connect;
  }

  /**
   * The settings every test starts from: this database, these instance keys, explicit converters,
   * short poll and retry times, published rows kept for the assertions. A mutable copy.
   */
  static Map<String, String> connectorConfig(OutboxDb db, String instanceKeys, int tasks) {
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
  static void deploy(String name, Map<String, String> config) throws InterruptedException {
    connect().configureConnector(name, config);
    int tasks = Integer.parseInt(config.getOrDefault("tasks.max", "1"));
    connect()
        .assertions()
        .assertConnectorAndExactlyNumTasksAreRunning(name, tasks, name + " did not start");
  }

  static void delete(String name) throws InterruptedException {
    connect().deleteConnector(name);
    connect().assertions().assertConnectorDoesNotExist(name, name + " was not deleted");
  }

  static ConnectorStateInfo status(String name) {
    return connect().connectorStatus(name);
  }

  /** Asserts the connector and each of its tasks report RUNNING right now. */
  static void assertRunning(String name, int tasks) {
    ConnectorStateInfo status = status(name);
    assertEquals("RUNNING", status.connector().state(), () -> name + ": " + status);
    assertEquals(tasks, status.tasks().size(), () -> name + ": " + status);
    status
        .tasks()
        .forEach(
            t -> assertEquals("RUNNING", t.state(), () -> name + " task " + t.id() + ": " + t));
  }

  /** A record read back from Kafka. */
  record Delivered(
      String topic,
      int partition,
      long offset,
      String key,
      byte[] value,
      Map<String, String> headers) {

    String messageId() {
      return headers.get(OutboxHeaders.MESSAGE_ID);
    }
  }

  /** Everything in these topics up to their current end offsets, in partition then offset order. */
  static List<Delivered> consumeAll(String... topics) {
    List<Delivered> out = new ArrayList<>();
    try {
      for (ConsumerRecord<byte[], byte[]> r :
          connect().kafka().consumeAll(CONSUME_TIMEOUT_MS, topics)) {
        Map<String, String> headers = new LinkedHashMap<>();
        for (Header h : r.headers()) {
          headers.put(
              h.key(), h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8));
        }
        out.add(
            new Delivered(
                r.topic(),
                r.partition(),
                r.offset(),
                r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8),
                r.value(),
                headers));
      }
    } catch (Exception e) {
      throw new AssertionError("could not read back topics " + List.of(topics), e);
    }
    out.sort(
        (a, b) ->
            a.topic().equals(b.topic())
                ? a.partition() != b.partition()
                    ? Integer.compare(a.partition(), b.partition())
                    : Long.compare(a.offset(), b.offset())
                : a.topic().compareTo(b.topic()));
    return out;
  }
}
