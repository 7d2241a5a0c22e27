package dev.outboxrelay.benchmark;

import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Commit-to-consumer latency at a steady insert rate. Application threads insert one row per
 * transaction through {@link PostgresOutboxWriter}, on a fixed schedule (row {@code n} is due at
 * {@code start + n / rate}); each takes a timestamp right after its commit returns. A row cannot
 * carry its own post-commit time, so the payload carries the row number and the timestamps stay in
 * this JVM, where the consumer's arrival times are taken with the same clock ({@link
 * System#nanoTime}). The connector runs with its defaults (LISTEN/NOTIFY wake-up on); on a worker
 * with exactly-once support, in exactly-once mode, read committed (a record arrives when its
 * transaction committed).
 */
final class Latency {
  record Result(
      int rate,
      boolean insertNotification,
      int rows,
      double achievedRate,
      long p50Micros,
      long p99Micros,
      long p999Micros,
      long maxMicros,
      long insertP50Micros,
      long insertP99Micros,
      long maxScheduleLagMillis,
      long duplicates,
      double loadAverage,
      double pgCpuMicrosPerRow,
      double claimsPerRow) {}

  private static final AtomicInteger RUNS = new AtomicInteger();

  private final BenchPostgres pg;
  private final BenchConnect connect;
  private final Options options;

  Latency(BenchPostgres pg, BenchConnect connect, Options options) {
    this.pg = pg;
    this.connect = connect;
    this.options = options;
  }

  /**
   * @param notify false to switch the insert trigger's notification off for the database (schema
   *     version 5), as operators do where inserts must share WAL flushes; the connector then relies
   *     on its polling
   */
  Result run(int rate, boolean notify) throws Exception {
    int id = RUNS.incrementAndGet();
    String name = "latency-" + id;
    String topic = "bench-latency-" + id;
    String url = pg.freshDatabase("latency");
    int warmRows = (int) (rate * options.latencyWarmup.toSeconds());
    int total = warmRows + (int) (rate * options.latencyDuration.toSeconds());
    // Enough application threads that durable commits of 10-40 ms (a loaded machine) still
    // keep the schedule: each thread commits one row at a time.
    int threads = Math.max(8, Math.min(64, rate / 25));
    boolean connectorExists = false;
    Throwable failure = null;
    try {
      connect.createTopic(topic, options.partitions);
      Drain.Config config =
          new Drain.Config(
              "latency",
              false,
              options.latencyTasks,
              true,
              options.batchSize,
              connect.exactlyOnce() ? Drain.exactlyOnceSettings() : java.util.Map.of(),
              0);
      if (!notify) {
        try (Connection c = BenchPostgres.connect(url);
            Statement s = c.createStatement()) {
          s.execute(
              "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET outbox_relay.notify = ''off''',"
                  + " current_database()); END $$");
        }
      }
      connect.configureConnector(name, Drain.connectorConfig(config, url));
      connectorExists = true; // only now: a config Connect refused leaves nothing to delete
      connect.awaitRunning(name, options.latencyTasks);
      pg.checkpoint();
      resetStatements(url);
      double pgCpuStart = pg.cpuSeconds();
      double load = Machine.loadAverage();
      long[] committedAt = new long[total + 1];
      long[] insertMicros = new long[total + 1];
      long[] beganAt = new long[total + 1];
      AtomicLong maxLag = new AtomicLong();
      try (TopicReader reader =
          new TopicReader(
              connect.bootstrapServers(),
              topic,
              options.partitions,
              total,
              options.aggregates,
              true,
              false,
              connect.exactlyOnce())) {
        AtomicInteger tickets = new AtomicInteger();
        PostgresOutboxWriter writer =
            new PostgresOutboxWriter(BenchPostgres.TABLE.tableName(), Backlog.INSTANCE_KEY);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        long start = System.nanoTime() + Duration.ofMillis(200).toNanos();
        double intervalNanos = 1e9 / rate;
        // The schedule ends on time: where commits cannot keep up with the rate, the run inserts
        // what it can in the scheduled minute and reports the rate it achieved.
        long end = start + (long) (total * intervalNanos);
        List<Future<?>> inserters = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          inserters.add(
              pool.submit(
                  () -> {
                    try (Connection c = BenchPostgres.connect(url)) {
                      c.setAutoCommit(false);
                      while (System.nanoTime() < end) {
                        int n = tickets.incrementAndGet();
                        if (n > total) {
                          return null;
                        }
                        long due = start + (long) ((n - 1) * intervalNanos);
                        long wait;
                        while ((wait = due - System.nanoTime()) > 0) {
                          LockSupport.parkNanos(wait);
                        }
                        long begin = System.nanoTime();
                        beganAt[n] = begin;
                        maxLag.accumulateAndGet(begin - due, Math::max);
                        writer.enqueue(
                            c,
                            OutboxMessage.builder()
                                .aggregateType(Backlog.AGGREGATE_TYPE)
                                .aggregateId(Backlog.aggregateId(n, options.aggregates))
                                .eventType(Backlog.EVENT_TYPE)
                                .topic(topic)
                                .payload(
                                    Backlog.payload(n, options.aggregates, options.payloadBytes))
                                .build());
                        c.commit();
                        long committed = System.nanoTime();
                        committedAt[n] = committed;
                        insertMicros[n] = (committed - begin) / 1000;
                      }
                      return null;
                    }
                  }));
        }
        for (Future<?> f : inserters) {
          f.get();
        }
        long insertsDone = System.nanoTime();
        pool.shutdown();
        // Every ticket taken up to total was inserted, so rows 1..inserted all exist. Measured:
        // the rows whose insert began after the warm-up, by the clock (behind schedule, the
        // warm-up's rows by number would not even be inserted).
        int inserted = Math.min(tickets.get(), total);
        long measuredStart = start + options.latencyWarmup.toNanos();
        int firstMeasured = 1;
        while (firstMeasured <= inserted && beganAt[firstMeasured] < measuredStart) {
          firstMeasured++;
        }
        int measuredRows = inserted - firstMeasured + 1;
        if (measuredRows <= 0) {
          throw new IllegalStateException("latency run: no row inserted after the warm-up");
        }
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (reader.distinct() < inserted) {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException(
                "latency run: only " + reader.distinct() + " of " + inserted + " rows arrived");
          }
          connect.requireHealthy(name);
          LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
        }
        double pgCpuSeconds = pg.cpuSeconds() - pgCpuStart;
        long claims = claimCalls(url);
        reader.readToEnd(Duration.ofMinutes(2)); // duplicates counted to the topic's end
        reader.close();
        long[] latencies = new long[measuredRows];
        long[] inserts = new long[measuredRows];
        for (int i = 0; i < measuredRows; i++) {
          int n = firstMeasured + i;
          latencies[i] = Math.max(0, (reader.arrivalNanos(n) - committedAt[n]) / 1000);
          inserts[i] = insertMicros[n];
        }
        Arrays.sort(latencies);
        Arrays.sort(inserts);
        double achieved = measuredRows / ((insertsDone - measuredStart) / 1e9);
        return new Result(
            rate,
            notify,
            measuredRows,
            achieved,
            Stats.percentile(latencies, 50),
            Stats.percentile(latencies, 99),
            Stats.percentile(latencies, 99.9),
            latencies[latencies.length - 1],
            Stats.percentile(inserts, 50),
            Stats.percentile(inserts, 99),
            maxLag.get() / 1_000_000,
            reader.duplicates(),
            load,
            pgCpuSeconds * 1e6 / inserted,
            (double) claims / inserted);
      }
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

  private static void resetStatements(String url) throws SQLException {
    try (Connection c = BenchPostgres.connect(url);
        Statement s = c.createStatement()) {
      s.execute("SELECT pg_stat_statements_reset()");
    }
  }

  /**
   * The claims of due rows the relay ran in this database since {@link #resetStatements}: both
   * claim statements (ordered or not) select a {@code candidate}.
   */
  private static long claimCalls(String url) throws SQLException {
    try (Connection c = BenchPostgres.connect(url);
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements"
                    + " WHERE dbid = (SELECT oid FROM pg_database"
                    + " WHERE datname = current_database())"
                    + " AND query LIKE '%candidate AS (%'")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
