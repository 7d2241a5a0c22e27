package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.mapping.ConverterKind;
import dev.outboxrelay.mapping.RecordTimestamp;
import dev.outboxrelay.testing.LogCapture;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.ConnectorTransactionBoundaries;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.junit.jupiter.api.Test;

/** What the connector tells Connect: exactly-once support, transaction boundaries, task configs. */
class OutboxSourceConnectorTest {

  private static Map<String, String> config(String guarantee) {
    Map<String, String> props = new HashMap<>();
    props.put("name", "orders-outbox");
    props.put("connection.url", "jdbc:postgresql://db.example:5432/app");
    props.put("instance.keys", "orders");
    if (guarantee != null) {
      props.put("delivery.guarantee", guarantee);
      props.put("exactly.once.support", "required");
    }
    return props;
  }

  /**
   * Renewals wait behind a stuck outcome write for up to the connection and statement timeouts: a
   * lease no longer than the three together is warned about, once, naming the settings; the
   * defaults (60 s against 20 s plus 5 s plus 30 s) are not.
   */
  @Test
  void aLeaseNoLongerThanARenewalBehindAStuckWriteIsWarnedAbout() {
    long mark = LogCapture.get().mark();
    new OutboxSourceConnector().start(config(null));
    Map<String, String> shortLease = config(null);
    shortLease.put("lease.duration.ms", "50000");
    new OutboxSourceConnector().start(shortLease);
    Map<String, String> slowStatements = config(null);
    slowStatements.put("statement.timeout.ms", "40000");
    new OutboxSourceConnector().start(slowStatements);
    Map<String, String> shortButCovered = config(null);
    shortButCovered.put("lease.duration.ms", "10000");
    shortButCovered.put("lease.renewal.interval.ms", "3000");
    shortButCovered.put("statement.timeout.ms", "5000");
    shortButCovered.put("connection.timeout.ms", "1000");
    new OutboxSourceConnector().start(shortButCovered);
    Map<String, String> slowConnections = config(null); // 20 s + 10 s + 30 s: the whole lease
    slowConnections.put("connection.timeout.ms", "10000");
    new OutboxSourceConnector().start(slowConnections);

    List<LogCapture.Event> warnings =
        LogCapture.get()
            .matching(mark, e -> e.message().contains("LEASE_SHORTER_THAN_STUCK_WRITE"));
    assertEquals(3, warnings.size(), "the three leases a stuck write can outlast, and no other");
    assertTrue(warnings.get(0).message().contains("lease.duration.ms (50000 ms)"));
    assertTrue(warnings.get(1).message().contains("statement.timeout.ms (40000 ms)"));
    assertTrue(warnings.get(2).message().contains("connection.timeout.ms (10000 ms)"));
  }

  /**
   * Exactly once with transaction.boundary=interval where the worker decides the interval or the
   * transaction timeout: Kafka's defaults (60 s each) make every transaction outlast the timeout,
   * and the task fail at every restart. Warned about (the worker may set them); refused by
   * validation only where the connector's configuration gives both.
   */
  @Test
  void anIntervalLeftToTheWorkerNotBelowTheTransactionTimeoutIsWarnedAbout() {
    long mark = LogCapture.get().mark();
    Map<String, String> defaults = config("exactly-once");
    defaults.put("transaction.boundary", "interval");
    new OutboxSourceConnector().start(defaults);
    Map<String, String> longInterval = config("exactly-once");
    longInterval.put("transaction.boundary", "interval");
    longInterval.put("transaction.boundary.interval.ms", "90000");
    new OutboxSourceConnector().start(longInterval);
    Map<String, String> shortInterval = config("exactly-once");
    shortInterval.put("transaction.boundary", "interval");
    shortInterval.put("transaction.boundary.interval.ms", "10000");
    new OutboxSourceConnector().start(shortInterval);
    Map<String, String> shortTimeout = config("exactly-once");
    shortTimeout.put("transaction.boundary", "interval");
    shortTimeout.put("producer.override.transaction.timeout.ms", "30000");
    new OutboxSourceConnector().start(shortTimeout);
    Map<String, String> perPoll = config("exactly-once");
    new OutboxSourceConnector().start(perPoll);

    List<LogCapture.Event> warnings =
        LogCapture.get()
            .matching(mark, e -> e.message().contains("INTERVAL_NOT_BELOW_TRANSACTION_TIMEOUT"));
    assertEquals(3, warnings.size(), "defaults, a long interval, a short timeout; no other");
    assertTrue(
        warnings.get(0).message().contains("interval.ms unset (60000 ms by Kafka's default)"),
        warnings.get(0).message());
    assertTrue(warnings.get(1).message().contains("interval.ms 90000 ms"));
    assertTrue(warnings.get(2).message().contains("timeout.ms 30000 ms"));
  }

  /**
   * A name that lease owners cut (over 100 characters) or that holds '/task-' cannot be told from
   * another connector's in the leases: warned about at start.
   */
  @Test
  void aNameTheLeasesCannotTellApartIsWarnedAbout() {
    long mark = LogCapture.get().mark();
    Map<String, String> fine = config(null);
    fine.put("name", "n".repeat(100));
    new OutboxSourceConnector().start(fine);
    Map<String, String> longName = config(null);
    longName.put("name", "n".repeat(101));
    new OutboxSourceConnector().start(longName);
    Map<String, String> taskInName = config(null);
    taskInName.put("name", "orders/task-x");
    new OutboxSourceConnector().start(taskInName);

    List<LogCapture.Event> warnings =
        LogCapture.get()
            .matching(mark, e -> e.message().contains("CONNECTOR_NAME_AMBIGUOUS_IN_LEASES"));
    assertEquals(2, warnings.size(), "the long name and the one with /task-; not 100 characters");
    assertTrue(warnings.get(0).message().contains("longer than 100 characters"));
    assertTrue(warnings.get(1).message().contains("holding '/task-'"));
  }

  @Test
  void exactlyOnceIsSupportedOnlyInExactlyOnceMode() {
    OutboxSourceConnector connector = new OutboxSourceConnector();
    assertEquals(
        ExactlyOnceSupport.SUPPORTED, connector.exactlyOnceSupport(config("exactly-once")));
    assertEquals(
        ExactlyOnceSupport.SUPPORTED, connector.exactlyOnceSupport(config(" Exactly-Once ")));
    assertEquals(ExactlyOnceSupport.UNSUPPORTED, connector.exactlyOnceSupport(config(null)));
    assertEquals(
        ExactlyOnceSupport.UNSUPPORTED, connector.exactlyOnceSupport(config("at-least-once")));
    assertEquals(
        ConnectorTransactionBoundaries.UNSUPPORTED,
        connector.canDefineTransactionBoundaries(config("exactly-once")));
  }

  @Test
  void exactlyOnceStartsAtMostOneTaskPerBucket() {
    Map<String, String> props = config("exactly-once");
    props.put("exactly.once.buckets", "3");
    OutboxSourceConnector connector = new OutboxSourceConnector();
    connector.start(props);
    List<Map<String, String>> tasks = connector.taskConfigs(5);
    assertEquals(3, tasks.size());
    for (int i = 0; i < 3; i++) {
      assertEquals(Integer.toString(i), tasks.get(i).get(OutboxSourceTask.TASK_ID));
      assertEquals("3", tasks.get(i).get(OutboxSourceTask.TASK_COUNT));
    }
  }

  /**
   * KIP-875: a reset of the source offsets is accepted (at worst rows are sent again); a position
   * set by hand is refused in either mode, since exactly-once recovery would trust it.
   */
  @Test
  void offsetsMayBeResetButNotSetByHand() {
    OutboxSourceConnector connector = new OutboxSourceConnector();
    Map<String, ?> partition = Map.of("instance_key", "orders", "bucket", 0, "buckets", 8);
    Map<Map<String, ?>, Map<String, ?>> reset = new HashMap<>();
    reset.put(partition, null);
    Map<Map<String, ?>, Map<String, ?>> set =
        Map.of(partition, Map.of("epoch", 1L, "batch", 1L, "seq", 42L));

    for (String guarantee : new String[] {null, "exactly-once"}) {
      long mark = LogCapture.get().mark();
      assertTrue(connector.alterOffsets(config(guarantee), reset), "a reset is accepted");
      assertEquals(
          guarantee == null ? 0 : 1,
          LogCapture.get().matching(mark, e -> e.message().contains("reason=OFFSETS_RESET")).size(),
          "exactly once, the reset says what it reaches and what it does not");
      ConnectException refused =
          assertThrows(
              ConnectException.class, () -> connector.alterOffsets(config(guarantee), set));
      assertTrue(refused.getMessage().contains("Only a reset"), refused.getMessage());
    }
  }

  /** In-flight requests above 1 with idempotence left to the worker: said at start, not refused. */
  @Test
  void anOrderLeftToTheWorkersProducerSettingsIsWarnedAbout() {
    Map<String, String> props = config(null);
    props.put("producer.override.max.in.flight.requests.per.connection", "5");
    long mark = LogCapture.get().mark();
    new OutboxSourceConnector().start(props);
    props.put("producer.override.enable.idempotence", "true");
    new OutboxSourceConnector().start(props);
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("(reason=ORDER_LEFT_TO_THE_WORKER)"))
            .size());
  }

  /**
   * topic.allowed.regex judges the topic before Connect's transforms: a router among them can send
   * a row where the regex would not (a writer's topic outbox.connect-configs stripped to Connect's
   * own). Said at start, naming the router's setting; not without the regex, nor with another
   * transform.
   */
  @Test
  void aTopicRouterAfterTheAllowedTopicsCheckIsWarnedAbout() {
    Map<String, String> props = config(null);
    props.put("transforms", "insert, strip");
    props.put("transforms.insert.type", "org.apache.kafka.connect.transforms.InsertHeader");
    props.put("transforms.strip.type", "RegexRouter");
    long mark = LogCapture.get().mark();
    new OutboxSourceConnector().start(props); // no regex: nothing to say
    props.put("topic.allowed.regex", "outbox\\..*");
    new OutboxSourceConnector().start(props);
    props.put("transforms", "insert");
    new OutboxSourceConnector().start(props); // no router listed
    List<LogCapture.Event> warnings =
        LogCapture.get()
            .matching(
                mark, e -> e.message().contains("(reason=TOPIC_RENAMED_AFTER_ALLOWED_CHECK)"));
    assertEquals(1, warnings.size());
    assertTrue(warnings.get(0).message().contains("[transforms.strip.type]"), warnings::toString);
  }

  /** The connector's status names a refused setting, never its value (as a task's does). */
  @Test
  void aRefusedSettingIsNamedWithoutItsValue() {
    Map<String, String> props = config(null);
    props.put("poll.interval.ms", "SENTINEL-7");
    ConnectException refused =
        assertThrows(ConnectException.class, () -> new OutboxSourceConnector().start(props));
    String message = refused.getMessage();
    assertTrue(message.contains("invalid value for poll.interval.ms"), message);
    assertFalse(message.contains("SENTINEL-7"), message);
    // Connect's status prints the cause chain too, and Kafka's ConfigException quotes the value.
    assertNull(refused.getCause(), message);
  }

  @Test
  void atLeastOnceStartsEveryTaskAsked() {
    OutboxSourceConnector connector = new OutboxSourceConnector();
    connector.start(config(null));
    assertEquals(5, connector.taskConfigs(5).size());
  }

  /** A task's mapper sizes records by the connector's own value converter. */
  @Test
  void aTaskKnowsTheConnectorsValueConverter() {
    Map<String, String> json = config(null);
    json.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
    json.put("value.converter.schemas.enable", "false");
    OutboxSourceConnector connector = new OutboxSourceConnector();
    connector.start(json);
    assertEquals(
        ConverterKind.JSON,
        TaskConfig.parse(connector.taskConfigs(1).get(0)).mapping().valueConverter());

    connector.start(config(null));
    assertEquals(
        ConverterKind.OTHER,
        TaskConfig.parse(connector.taskConfigs(1).get(0)).mapping().valueConverter());
  }

  /** A task stamps records as record.timestamp says: the rows' creation times unless told. */
  @Test
  void aTaskStampsRecordsAsConfigured() {
    OutboxSourceConnector connector = new OutboxSourceConnector();
    connector.start(config(null));
    assertEquals(
        RecordTimestamp.CREATED_AT,
        TaskConfig.parse(connector.taskConfigs(1).get(0)).mapping().recordTimestamp());

    Map<String, String> sendTime = config(null);
    sendTime.put("record.timestamp", "send_time");
    connector.start(sendTime);
    assertEquals(
        RecordTimestamp.SEND_TIME,
        TaskConfig.parse(connector.taskConfigs(1).get(0)).mapping().recordTimestamp());
  }

  /** And by its key converter: JsonConverter with schemas by default. */
  @Test
  void aTaskKnowsTheConnectorsKeyConverter() {
    Map<String, String> json = config(null);
    json.put("key.converter", "JsonConverter");
    OutboxSourceConnector connector = new OutboxSourceConnector();
    connector.start(json);
    var mapping = TaskConfig.parse(connector.taskConfigs(1).get(0)).mapping();
    assertEquals(ConverterKind.JSON_WITH_SCHEMAS, mapping.keyConverter());
    assertEquals(ConverterKind.OTHER, mapping.valueConverter());
    assertEquals(ConverterKind.OTHER, mapping.headerConverter());
  }

  /** And by its header converter, read from header.converter and its schemas.enable. */
  @Test
  void aTaskKnowsTheConnectorsHeaderConverter() {
    Map<String, String> json = config(null);
    json.put("header.converter", "org.apache.kafka.connect.json.JsonConverter");
    json.put("header.converter.schemas.enable", "false");
    OutboxSourceConnector connector = new OutboxSourceConnector();
    connector.start(json);
    var mapping = TaskConfig.parse(connector.taskConfigs(1).get(0)).mapping();
    assertEquals(ConverterKind.JSON, mapping.headerConverter());
    assertEquals(ConverterKind.OTHER, mapping.keyConverter());
  }
}
