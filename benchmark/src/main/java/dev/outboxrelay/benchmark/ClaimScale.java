package dev.outboxrelay.benchmark;

import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.Set;

/**
 * Claim time against the same pending batch, with and without a large number of rows ahead of it in
 * the table: retained PUBLISHED rows, or the due backlog of another instance key (a paused
 * connector sharing the table). Each claim is the store's real claim, timed around the call, inside
 * a transaction that is then rolled back, so every claim sees the same rows (the durable commit,
 * about one WAL flush, is the same in both cases and left out). The table is vacuumed, untimed,
 * every 25 claims so that rolled-back versions do not pile up.
 */
final class ClaimScale {
  record Timing(double medianMs, double p10Ms, double p90Ms, int claimed) {}

  /** What the rows ahead of the pending batch are. */
  enum Ahead {
    RETAINED_PUBLISHED("retained PUBLISHED rows"),
    OTHER_KEY_PENDING("PENDING rows of another instance key");

    final String description;

    Ahead(String description) {
      this.description = description;
    }
  }

  /** The instance key of the rows ahead in {@link Ahead#OTHER_KEY_PENDING}. */
  static final String OTHER_KEY = "bench-paused";

  record Result(
      int retained,
      Ahead ahead,
      Timing ordered,
      Timing unordered,
      double backlogMetricsMs,
      long tableBytes,
      double loadAverage) {}

  private static final int VACUUM_EVERY = 25;
  private static final int WARMUP = 10;

  private final BenchPostgres pg;
  private final Options options;

  ClaimScale(BenchPostgres pg, Options options) {
    this.pg = pg;
    this.options = options;
  }

  Result run(int retained, Ahead ahead) throws Exception {
    String url = pg.freshDatabase("scale");
    try {
      if (retained > 0 && ahead == Ahead.RETAINED_PUBLISHED) {
        Backlog.insert(
            url, 1, retained, options.aggregates, options.payloadBytes, "bench-x", "PUBLISHED");
      } else if (retained > 0) {
        Backlog.insert(
            url,
            OTHER_KEY,
            1,
            retained,
            options.aggregates,
            options.payloadBytes,
            "bench-x",
            "PENDING");
      }
      // The same pending rows in both tables: row numbers after the retained ones.
      long first = options.scaleRetained + 1L;
      Backlog.insert(
          url,
          first,
          first + options.scalePending - 1,
          options.aggregates,
          options.payloadBytes,
          "bench-x",
          "PENDING");
      pg.checkpoint();
      double load = Machine.loadAverage();
      try (Connection tx = BenchPostgres.connect(url);
          Connection maintenance = BenchPostgres.connect(url)) {
        PostgresOutboxStore store =
            new PostgresOutboxStore(
                new RollbackDataSource(tx), BenchPostgres.TABLE, RelayClock.database(), null);
        Timing ordered = time(store, maintenance, true);
        Timing unordered = time(store, maintenance, false);
        double metricsMs = timeBacklogMetrics(store);
        return new Result(
            retained, ahead, ordered, unordered, metricsMs, tableBytes(maintenance), load);
      }
    } finally {
      pg.dropDatabase(url);
    }
  }

  private Timing time(PostgresOutboxStore store, Connection maintenance, boolean ordered)
      throws Exception {
    ClaimRequest request =
        new ClaimRequest(
            "scale",
            Set.of(Backlog.INSTANCE_KEY),
            options.batchSize,
            Duration.ofMinutes(1),
            10,
            ordered);
    int expected = Math.min(options.batchSize, options.scalePending);
    long[] nanos = new long[options.scaleClaims];
    int claimed = 0;
    for (int i = -WARMUP; i < options.scaleClaims; i++) {
      if (i % VACUUM_EVERY == 0) {
        Backlog.vacuum(maintenance);
      }
      long start = System.nanoTime();
      claimed = store.claim(request).claimed().size();
      long elapsed = System.nanoTime() - start;
      if (claimed != expected) {
        throw new IllegalStateException("claimed " + claimed + " rows, expected " + expected);
      }
      if (i >= 0) {
        nanos[i] = elapsed;
      }
    }
    Arrays.sort(nanos);
    return new Timing(
        Stats.percentile(nanos, 50) / 1e6,
        Stats.percentile(nanos, 10) / 1e6,
        Stats.percentile(nanos, 90) / 1e6,
        claimed);
  }

  /** The backlog figures task 0 reads every 30 s by default (rows per status, oldest age). */
  private static double timeBacklogMetrics(PostgresOutboxStore store) {
    long[] nanos = new long[5];
    for (int i = 0; i < nanos.length; i++) {
      long start = System.nanoTime();
      store.inspect(Set.of(Backlog.INSTANCE_KEY), false);
      nanos[i] = System.nanoTime() - start;
    }
    Arrays.sort(nanos);
    return Stats.percentile(nanos, 50) / 1e6;
  }

  private static long tableBytes(Connection c) throws Exception {
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT pg_total_relation_size('" + BenchPostgres.TABLE.qualified() + "')")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
