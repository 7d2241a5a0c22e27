package dev.outboxrelay.benchmark;

import dev.outboxrelay.benchmark.naive.NaiveRelayConnector;
import dev.outboxrelay.connect.OutboxSourceConnector;
import java.sql.Connection;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * Backlog drain: N rows are inserted while the connector is paused (it was created on the empty
 * table and is running and idle before that); the clock starts when the connector is resumed and
 * stops when every row has been read from Kafka <em>and</em> no row is left PENDING, AMBIGUOUS or
 * IN_FLIGHT in the table.
 */
final class Drain {
  /** One configuration of the drain. */
  record Config(
      String label,
      boolean naive,
      int tasks,
      boolean ordered,
      int batchSize,
      Map<String, String> overrides,
      int rows) {}

  record Result(
      double seconds,
      double rowsPerSecond,
      double kafkaSeconds,
      double firstRowSeconds,
      double firstToLastRowsPerSecond,
      long duplicates,
      long orderViolations,
      Map<String, Long> finalCounts,
      double loadAverage,
      RunCost.Result cost,
      TransactionCost.Result transactions) {
    /** True for a run of the connector in exactly-once mode (it has transaction figures). */
    boolean exactlyOnce() {
      return transactions != null;
    }
  }

  /** The connector settings of exactly-once mode, as a config's overrides. */
  static Map<String, String> exactlyOnceSettings() {
    Map<String, String> o = new LinkedHashMap<>();
    o.put("delivery.guarantee", "exactly-once");
    o.put("exactly.once.support", "required");
    return o;
  }

  /** True when the config runs the connector in exactly-once mode. */
  static boolean exactlyOnce(Config config) {
    return "exactly-once".equals(config.overrides().get("delivery.guarantee"));
  }

  /**
   * Fails a run whose delivery was wrong, so that no figure of it reaches a report (and no target
   * reads MET on it): a row left in any status but PUBLISHED (FAILED, EXHAUSTED: every row of a
   * drain is publishable), a duplicate in exactly-once mode, a record of an aggregate ahead of an
   * earlier one with ordering on (the relay's; the naive relay promises no order). Duplicates at
   * least once are counted, not failed: a drain without faults has none, but the mode allows them.
   */
  static void requireDelivered(
      Config config,
      boolean exactlyOnce,
      Map<String, Long> finalCounts,
      long duplicates,
      long orderViolations) {
    Map<String, Long> notPublished = new java.util.TreeMap<>(finalCounts);
    notPublished.remove("PUBLISHED");
    if (!notPublished.isEmpty()) {
      throw new IllegalStateException(
          config.label() + ": rows not published at the end: " + notPublished);
    }
    if (exactlyOnce && duplicates > 0) {
      throw new IllegalStateException(
          config.label() + ": " + duplicates + " duplicates in exactly-once mode");
    }
    if (config.ordered() && !config.naive() && orderViolations > 0) {
      throw new IllegalStateException(
          config.label() + ": " + orderViolations + " records ahead of an earlier one");
    }
  }

  private static final AtomicInteger RUNS = new AtomicInteger();

  private final BenchPostgres pg;
  private final BenchConnect connect;
  private final Options options;

  Drain(BenchPostgres pg, BenchConnect connect, Options options) {
    this.pg = pg;
    this.connect = connect;
    this.options = options;
  }

  Result run(Config config) throws Exception {
    return run(config, pausedBeforeStart -> {});
  }

  /**
   * @param onResume called with true right before the connector is resumed and with false right
   *     after the drain completed (the memory run samples the heap in between)
   */
  Result run(Config config, Consumer<Boolean> onResume) throws Exception {
    boolean exactlyOnce = exactlyOnce(config);
    if (exactlyOnce != connect.exactlyOnce()) {
      throw new IllegalArgumentException(
          config.label()
              + (exactlyOnce
                  ? " needs a worker with exactly-once source support"
                  : " must not run on an exactly-once worker (its tasks would use transactions)"));
    }
    int id = RUNS.incrementAndGet();
    String name = "drain-" + id;
    String topic = "bench-drain-" + id;
    String url = pg.freshDatabase("drain");
    boolean connectorExists = false;
    Throwable failure = null;
    try (RunCost.Meter meter = RunCost.Meter.ofRelayTable(pg, url, config.rows())) {
      connect.createTopic(topic, options.partitions);
      connect.configureConnector(name, connectorConfig(config, url));
      connectorExists = true; // only now: a config Connect refused leaves nothing to delete
      connect.awaitRunning(name, config.tasks());
      connect.pause(name, config.tasks());
      meter.insertStarted();
      Backlog.insertRows(
          url, 1, config.rows(), options.aggregates, options.payloadBytes, topic, "PENDING");
      meter.insertDone();
      Backlog.vacuum(url, BenchPostgres.TABLE.qualified());
      pg.checkpoint();
      double load = Machine.loadAverage();
      Result result;
      try (Connection c = BenchPostgres.connect(url);
          TopicReader reader =
              new TopicReader(
                  connect.bootstrapServers(),
                  topic,
                  options.partitions,
                  config.rows(),
                  options.aggregates,
                  false,
                  true,
                  exactlyOnce)) {
        onResume.accept(true);
        meter.relayStarted();
        double commitNanosBefore = exactlyOnce ? TransactionCost.commitNanos(name) : 0;
        long start = System.nanoTime();
        connect.resume(name);
        long deadline = start + options.runTimeout.toNanos();
        long nextHealthCheck = start;
        while (reader.distinct() < config.rows()) {
          long now = System.nanoTime();
          if (now > deadline) {
            throw new IllegalStateException(
                config.label() + ": only " + reader.distinct() + " rows arrived in time");
          }
          if (now >= nextHealthCheck) {
            connect.requireHealthy(name);
            nextHealthCheck = now + Duration.ofSeconds(2).toNanos();
          }
          LockSupport.parkNanos(Duration.ofMillis(5).toNanos());
        }
        long kafkaDone = reader.lastArrivalNanos();
        long done = System.nanoTime(); // when the look that found no row active began
        while (Backlog.anyActive(c)) {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException(config.label() + ": rows still active at timeout");
          }
          LockSupport.parkNanos(Duration.ofMillis(5).toNanos());
          done = System.nanoTime();
        }
        meter.relayDone();
        onResume.accept(false);
        reader.readToEnd(options.runTimeout);
        double seconds = (done - start) / 1e9;
        TransactionCost.Result transactions =
            exactlyOnce
                ? TransactionCost.Result.of(
                    TransactionCost.transactions(name),
                    config.rows(),
                    (TransactionCost.commitNanos(name) - commitNanosBefore) / 1e9,
                    seconds,
                    config.tasks())
                : null;
        Map<String, Long> finalCounts = Backlog.statusCounts(c);
        requireDelivered(
            config, exactlyOnce, finalCounts, reader.duplicates(), reader.orderViolations());
        result =
            new Result(
                seconds,
                config.rows() / seconds,
                (kafkaDone - start) / 1e9,
                (reader.firstArrivalNanos() - start) / 1e9,
                reader.firstToLastRowsPerSecond(config.rows()),
                reader.duplicates(),
                reader.orderViolations(),
                finalCounts,
                load,
                null,
                transactions);
        connect.requireHealthy(name);
      }
      // The table's statistics are complete once the connector's sessions have closed.
      connectorExists = false;
      connect.deleteConnector(name);
      RunCost.Result cost = meter.finish();
      return new Result(
          result.seconds(),
          result.rowsPerSecond(),
          result.kafkaSeconds(),
          result.firstRowSeconds(),
          result.firstToLastRowsPerSecond(),
          result.duplicates(),
          result.orderViolations(),
          result.finalCounts(),
          result.loadAverage(),
          cost,
          result.transactions());
    } catch (Throwable e) {
      failure = e;
      throw e;
    } finally {
      // A failure of the clean-up is attached to the run's error, never put in its place.
      Cleanup.after(
          failure,
          connectorExists ? () -> connect.deleteConnector(name) : null,
          () -> connect.deleteTopic(topic),
          () -> pg.dropDatabase(url));
    }
  }

  static Map<String, String> connectorConfig(Config config, String url) {
    Map<String, String> c = new HashMap<>();
    c.put(
        "connector.class",
        config.naive()
            ? NaiveRelayConnector.class.getName()
            : OutboxSourceConnector.class.getName());
    c.put("tasks.max", Integer.toString(config.tasks()));
    c.put("connection.url", url);
    c.put("connection.user", BenchPostgres.USER);
    c.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
    c.put("value.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
    if (!config.naive()) {
      c.put("instance.keys", Backlog.INSTANCE_KEY);
      c.put("ordering.enabled", Boolean.toString(config.ordered()));
      c.put("claim.batch.size", Integer.toString(config.batchSize()));
    } else {
      c.put(NaiveRelayConnector.BATCH_SIZE, Integer.toString(config.batchSize()));
    }
    c.putAll(config.overrides());
    return c;
  }

  /** The producer overrides that raise throughput and keep per-key order. */
  static Map<String, String> throughputOverrides() {
    Map<String, String> o = new LinkedHashMap<>();
    o.put("producer.override.enable.idempotence", "true");
    o.put("producer.override.acks", "all");
    o.put("producer.override.max.in.flight.requests.per.connection", "5");
    o.put("producer.override.linger.ms", "20");
    o.put("producer.override.batch.size", "262144");
    return o;
  }
}
