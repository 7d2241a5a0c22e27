package dev.outboxrelay.benchmark;

import dev.outboxrelay.benchmark.Options.DebeziumPayload;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/**
 * The peer row (issue 11): Debezium's PostgreSQL connector with its outbox {@code EventRouter},
 * deployed as Debezium ships it (its plugin archive on the worker's {@code plugin.path}) into the
 * same Connect worker, draining the same rows from a Debezium-shaped outbox table ({@code id uuid,
 * aggregatetype, aggregateid, type, payload jsonb}, the shape of Debezium's documentation) through
 * {@code pgoutput}.
 *
 * <p>As for outbox-relay, the backlog is inserted while the connector does nothing: the connector
 * is created on the empty table ({@code snapshot.mode=no_data}: it reads only the WAL), relays one
 * warm-up row (row number 0, which the consumer does not count) so that it has streamed and
 * committed a source offset, and is <em>stopped</em> (KIP-875), not paused: a paused Debezium task
 * keeps reading the WAL into its queue on its own thread, so the backlog would be half read before
 * the clock starts. Once its WAL sender has left, the N rows are inserted; the clock starts at
 * resume, which starts the task again (it reconnects, loads its type registry and opens its
 * replication stream at its offset: the time to the first row is reported apart), and stops when
 * the consumer has every row. Debezium writes nothing to the table: its rows stay (deleting them,
 * in the inserting transaction or later, is the application's business and is not part of this
 * run).
 */
final class DebeziumDrain {
  static final String TABLE = "outboxevent";
  private static final Duration SLOT_RELEASE = Duration.ofSeconds(30);
  private static final AtomicInteger RUNS = new AtomicInteger();

  record Result(
      double seconds,
      double rowsPerSecond,
      double readySeconds,
      double firstRowSeconds,
      double firstToLastRowsPerSecond,
      long duplicates,
      long orderViolations,
      double loadAverage,
      RunCost.Result cost) {}

  private final BenchPostgres pg;
  private final BenchConnect connect;
  private final Options options;
  private final String version;

  DebeziumDrain(BenchPostgres pg, BenchConnect connect, Options options) {
    this.pg = pg;
    this.connect = connect;
    this.options = options;
    this.version = version(options.debeziumPluginPath());
  }

  /** Fails early, with what to do, if the plugin folder the build makes is missing. */
  static void requirePlugin(Path pluginPath) {
    if (version(pluginPath).equals("unknown")) {
      throw new IllegalArgumentException(
          "no Debezium plugin under "
              + pluginPath.toAbsolutePath()
              + ": build the benchmark (mvn -pl benchmark -am package) or pass"
              + " --debezium-plugin-path");
    }
  }

  String label(DebeziumPayload payload) {
    return "Debezium %s, PostgreSQL connector + outbox EventRouter, %s payload"
        .formatted(version, payload == DebeziumPayload.STRING ? "string" : "expanded JSON");
  }

  Result run(DebeziumPayload payload, int rows) throws Exception {
    int id = RUNS.incrementAndGet();
    String name = "debezium-" + id;
    String topic = "bench-debezium-" + id;
    String slot = "bench_debezium_" + id;
    String url = pg.freshDatabase("debezium", false);
    boolean connectorExists = false;
    Throwable failure = null;
    try (RunCost.Meter meter = new RunCost.Meter(pg, url, TABLE, rows)) {
      try (Connection c = BenchPostgres.connect(url);
          Statement s = c.createStatement()) {
        s.execute(
            "CREATE TABLE "
                + TABLE
                + " (id uuid PRIMARY KEY, aggregatetype varchar(255) NOT NULL,"
                + " aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL,"
                + " payload jsonb)");
      }
      connect.createTopic(topic, options.partitions);
      try (TopicReader reader =
          new TopicReader(
              connect.bootstrapServers(),
              topic,
              options.partitions,
              rows,
              options.aggregates,
              false,
              true)) {
        connect.configureConnector(name, connectorConfig(payload, url, topic, slot, id));
        connectorExists = true; // only now: a config Connect refused leaves nothing to delete
        connect.awaitRunning(name, 1);
        // Running and idle, with a committed offset: it has streamed one row.
        insert(url, 0, 0);
        long readyStart = System.nanoTime();
        long readyDeadline = readyStart + BenchConnect.startupTimeout().toNanos();
        long nextCheck = readyStart;
        while (reader.foreign() < 1) {
          long now = System.nanoTime();
          if (now > readyDeadline) {
            throw new IllegalStateException(name + ": the warm-up row never arrived");
          }
          if (now >= nextCheck) {
            connect.requireHealthy(name);
            nextCheck = now + Duration.ofSeconds(1).toNanos();
          }
          LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
        }
        double readySeconds = (System.nanoTime() - readyStart) / 1e9;
        connect.stop(name);
        awaitSlotReleased(slot);
        meter.insertStarted();
        insert(url, 1, rows);
        meter.insertDone();
        Backlog.vacuum(url, TABLE);
        pg.checkpoint();
        double load = Machine.loadAverage();
        meter.relayStarted();
        long start = System.nanoTime();
        connect.resume(name);
        long deadline = start + options.runTimeout.toNanos();
        long nextHealthCheck = start;
        while (reader.distinct() < rows) {
          long now = System.nanoTime();
          if (now > deadline) {
            throw new IllegalStateException(
                label(payload) + ": only " + reader.distinct() + " rows arrived in time");
          }
          if (now >= nextHealthCheck) {
            connect.requireHealthy(name);
            nextHealthCheck = now + Duration.ofSeconds(2).toNanos();
          }
          LockSupport.parkNanos(Duration.ofMillis(5).toNanos());
        }
        long done = System.nanoTime();
        meter.relayDone();
        reader.readToEnd(options.runTimeout);
        connect.requireHealthy(name);
        double seconds = (done - start) / 1e9;
        double firstRowSeconds = (reader.firstArrivalNanos() - start) / 1e9;
        long duplicates = reader.duplicates();
        long violations = reader.orderViolations();
        connectorExists = false;
        connect.deleteConnector(name);
        dropSlot(slot);
        return new Result(
            seconds,
            rows / seconds,
            readySeconds,
            firstRowSeconds,
            reader.firstToLastRowsPerSecond(rows),
            duplicates,
            violations,
            load,
            meter.finish());
      }
    } catch (Throwable e) {
      failure = e;
      throw e;
    } finally {
      // A failure of the clean-up is attached to the run's error, never put in its place.
      Cleanup.after(
          failure,
          connectorExists ? () -> connect.deleteConnector(name) : null,
          () -> dropSlot(slot),
          () -> connect.deleteTopic(topic),
          () -> pg.dropDatabase(url));
    }
  }

  /** Rows {@code from..to} of the benchmark, in Debezium's outbox shape. */
  private void insert(String url, long from, long to) throws SQLException {
    Backlog.insertSeries(
        url,
        "INSERT INTO "
            + TABLE
            + " (id, aggregatetype, aggregateid, type, payload) SELECT gen_random_uuid(), '"
            + Backlog.AGGREGATE_TYPE
            + "', "
            + Backlog.aggregateIdSql(options.aggregates)
            + ", '"
            + Backlog.EVENT_TYPE
            + "', ("
            + Backlog.payloadSql(options.aggregates, options.payloadBytes)
            + ")::jsonb FROM generate_series(?::bigint, ?::bigint) g",
        from,
        to);
  }

  Map<String, String> connectorConfig(
      DebeziumPayload payload, String url, String topic, String slot, int id) {
    Map<String, String> c = new HashMap<>();
    c.put("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
    c.put("tasks.max", "1");
    c.put("plugin.name", "pgoutput");
    c.put("database.hostname", "localhost");
    c.put("database.port", Integer.toString(pg.port()));
    c.put("database.user", BenchPostgres.USER);
    c.put("database.dbname", url.substring(url.lastIndexOf('/') + 1));
    c.put("topic.prefix", "bench-debezium-" + id);
    c.put("table.include.list", "public." + TABLE);
    c.put("slot.name", slot);
    c.put("publication.autocreate.mode", "filtered");
    c.put("snapshot.mode", "no_data");
    // On start, Debezium opens the slot twice (once to find its resume position); when the first
    // WAL sender has not let go of the slot yet, it retries after slot.retry.delay.ms, 10 s by
    // default: a restart race, not throughput, so retry soon. Everything else is Debezium's
    // default.
    c.put("slot.retry.delay.ms", "100");
    c.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
    if (payload == DebeziumPayload.STRING) {
      c.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
    } else {
      c.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
      c.put("value.converter.schemas.enable", "false");
    }
    c.put("transforms", "outbox");
    c.put("transforms.outbox.type", "io.debezium.transforms.outbox.EventRouter");
    c.put("transforms.outbox.route.topic.replacement", topic);
    c.put(
        "transforms.outbox.table.expand.json.payload",
        Boolean.toString(payload == DebeziumPayload.EXPANDED));
    return c;
  }

  /** Waits until no WAL sender uses the slot; false if the slot does not exist. */
  private boolean awaitSlotReleased(String slot) throws SQLException {
    long deadline = System.nanoTime() + SLOT_RELEASE.toNanos();
    try (Connection c = pg.admin();
        PreparedStatement active =
            c.prepareStatement("SELECT active FROM pg_replication_slots WHERE slot_name = ?")) {
      active.setString(1, slot);
      while (true) {
        try (ResultSet rs = active.executeQuery()) {
          if (!rs.next()) {
            return false;
          }
          if (!rs.getBoolean(1)) {
            return true;
          }
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("replication slot " + slot + " still in use");
        }
        LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
      }
    }
  }

  /** A logical slot outlives its connector and would keep WAL and block DROP DATABASE. */
  private void dropSlot(String slot) throws SQLException {
    if (!awaitSlotReleased(slot)) {
      return;
    }
    try (Connection c = pg.admin();
        PreparedStatement drop = c.prepareStatement("SELECT pg_drop_replication_slot(?)")) {
      drop.setString(1, slot);
      drop.execute();
    }
  }

  /** Debezium's version, from the connector jar's name in the plugin folder. */
  private static String version(Path pluginPath) {
    String prefix = "debezium-connector-postgres-";
    try (Stream<Path> files = Files.walk(pluginPath, 2)) {
      return files
          .map(p -> p.getFileName().toString())
          .filter(n -> n.startsWith(prefix) && n.endsWith(".jar"))
          .map(n -> n.substring(prefix.length(), n.length() - ".jar".length()))
          .findFirst()
          .orElse("unknown");
    } catch (IOException e) {
      return "unknown";
    }
  }
}
