package dev.outboxrelay.benchmark;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;

/**
 * The database's own limit for this workload: a plain loop that claims a batch with the connector's
 * own claim statement and marks it published with the connector's own batched statement, each in
 * autocommit (two durable commits per batch), with no Kafka at all. Rows per second.
 */
final class DatabaseLimit {
  record Result(
      double seconds,
      double rowsPerSecond,
      Map<String, Long> finalCounts,
      double load,
      RunCost.Result cost) {}

  private final BenchPostgres pg;
  private final Options options;

  DatabaseLimit(BenchPostgres pg, Options options) {
    this.pg = pg;
    this.options = options;
  }

  Result run(int rows, int batchSize, boolean ordered, int threads) throws Exception {
    String url = pg.freshDatabase("dblimit");
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(url);
    hc.setUsername(BenchPostgres.USER);
    hc.setMaximumPoolSize(threads + 1);
    hc.setPoolName("benchmark-dblimit");
    try (RunCost.Meter meter = RunCost.Meter.ofRelayTable(pg, url, rows)) {
      meter.insertStarted();
      Backlog.insertRows(
          url, 1, rows, options.aggregates, options.payloadBytes, "bench-x", "PENDING");
      meter.insertDone();
      Backlog.vacuum(url, BenchPostgres.TABLE.qualified());
      pg.checkpoint();
      double load = Machine.loadAverage();
      double seconds;
      Map<String, Long> counts;
      try (HikariDataSource pool = new HikariDataSource(hc)) {
        PostgresOutboxStore store =
            new PostgresOutboxStore(pool, BenchPostgres.TABLE, RelayClock.database(), null);
        ExecutorService executor = Executors.newFixedThreadPool(threads);
        meter.relayStarted();
        long start = System.nanoTime();
        List<Future<Ended>> loops = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          ClaimRequest request =
              new ClaimRequest(
                  "dblimit-" + t,
                  Set.of(Backlog.INSTANCE_KEY),
                  batchSize,
                  Duration.ofMinutes(1),
                  10,
                  ordered);
          loops.add(executor.submit(() -> loop(store, request, pool)));
        }
        long relayed = 0;
        long done = start;
        for (Future<Ended> f : loops) {
          Ended ended = f.get();
          relayed += ended.relayed();
          done = Math.max(done, ended.atNanos());
        }
        meter.relayDone();
        executor.shutdown();
        if (relayed != rows) {
          throw new IllegalStateException("database loop relayed " + relayed + " of " + rows);
        }
        seconds = (done - start) / 1e9;
        try (Connection c = pool.getConnection()) {
          counts = Backlog.statusCounts(c);
        }
      }
      return new Result(seconds, rows / seconds, counts, load, meter.finish());
    } finally {
      pg.dropDatabase(url);
    }
  }

  /**
   * What a loop relayed, and when the look that found no row active began: the time a drain's clock
   * stops at too ({@link Drain}), the look itself, which meets every row deleted, left out of both.
   */
  private record Ended(long relayed, long atNanos) {}

  private static Ended loop(PostgresOutboxStore store, ClaimRequest request, DataSource pool)
      throws SQLException {
    long relayed = 0;
    while (true) {
      ClaimResult claim = store.claim(request);
      if (claim.claimed().isEmpty()) {
        // With several loops an empty claim may only mean "the rest is locked by the others".
        try (Connection c = pool.getConnection()) {
          long looked = System.nanoTime();
          if (!Backlog.anyActive(c)) {
            return new Ended(relayed, looked);
          }
        }
        continue;
      }
      List<PublishedAck> acks = new ArrayList<>(claim.claimed().size());
      for (var m : claim.claimed()) {
        acks.add(
            new PublishedAck(
                m.messageId(), m.seq(), m.lease(), new KafkaCoordinates("bench-x", 0, m.seq())));
      }
      store.markPublished(acks);
      relayed += acks.size();
    }
  }
}
