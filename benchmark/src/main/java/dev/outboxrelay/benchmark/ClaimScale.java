package dev.outboxrelay.benchmark;

import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * Claim time against the same pending batch, with and without a large number of rows ahead of it in
 * the table: retained PUBLISHED rows, or the due backlog of another instance key (a paused
 * connector sharing the table); and the same pending rows in blocks of several instance keys,
 * claimed together by a connector of all of them (with the WAL each claim writes: its row locks).
 * Each claim is the store's real claim, timed around the call, inside a transaction that is then
 * rolled back, so every claim sees the same rows (the durable commit, about one WAL flush, is the
 * same in both cases and left out). The table is vacuumed, untimed, every 25 claims so that
 * rolled-back versions do not pile up.
 */
final class ClaimScale {
  /** Claim times, and the WAL bytes of the median claim (its row locks and leases). */
  record Timing(double medianMs, double p10Ms, double p90Ms, int claimed, long walBytes) {}

  /** What the rows ahead of the pending batch are. */
  enum Ahead {
    RETAINED_PUBLISHED("retained PUBLISHED rows"),
    OTHER_KEY_PENDING("PENDING rows of another instance key");

    final String description;

    Ahead(String description) {
      this.description = description;
    }
  }

  /** How many instance keys {@link #runOverKeys} spreads the pending rows over. */
  static final int KEYS = 4;

  /** The instance key of the rows ahead in {@link Ahead#OTHER_KEY_PENDING}. */
  static final String OTHER_KEY = "bench-paused";

  /** The instance keys of {@link #runOverKeys}: the connector's own, then {@code own-2}, .... */
  static String key(int index) {
    return index == 0 ? Backlog.INSTANCE_KEY : Backlog.INSTANCE_KEY + "-" + (index + 1);
  }

  /**
   * @param keys how many instance keys hold the pending rows (in consecutive blocks) and are
   *     claimed together; 1 for the other rows
   */
  record Result(
      int retained,
      Ahead ahead,
      int keys,
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
      return measure(url, retained, ahead, Set.of(Backlog.INSTANCE_KEY));
    } finally {
      pg.dropDatabase(url);
    }
  }

  /**
   * The same pending rows as {@link #run} with nothing ahead, in {@code keys} consecutive blocks of
   * as many instance keys (one key's burst after another's), claimed by one request for all keys.
   */
  Result runOverKeys(int keys) throws Exception {
    String url = pg.freshDatabase("scale");
    try {
      long first = options.scaleRetained + 1L;
      long perKey = Math.max(1, options.scalePending / keys);
      Set<String> own = new LinkedHashSet<>();
      for (int k = 0; k < keys; k++) {
        long from = first + k * perKey;
        long to = k == keys - 1 ? first + options.scalePending - 1 : from + perKey - 1;
        Backlog.insert(
            url, key(k), from, to, options.aggregates, options.payloadBytes, "bench-x", "PENDING");
        own.add(key(k));
      }
      return measure(url, 0, Ahead.RETAINED_PUBLISHED, own);
    } finally {
      pg.dropDatabase(url);
    }
  }

  /** Times claims for {@code keys} (ordered, unordered) and the backlog metrics on {@code url}. */
  private Result measure(String url, int retained, Ahead ahead, Set<String> keys) throws Exception {
    pg.checkpoint();
    double load = Machine.loadAverage();
    try (Connection tx = BenchPostgres.connect(url);
        Connection maintenance = BenchPostgres.connect(url)) {
      PostgresOutboxStore store =
          new PostgresOutboxStore(
              new RollbackDataSource(tx), BenchPostgres.TABLE, RelayClock.database(), null);
      Timing ordered = time(store, maintenance, keys, true);
      Timing unordered = time(store, maintenance, keys, false);
      double metricsMs = timeBacklogMetrics(store, keys);
      return new Result(
          retained,
          ahead,
          keys.size(),
          ordered,
          unordered,
          metricsMs,
          tableBytes(maintenance),
          load);
    }
  }

  private Timing time(
      PostgresOutboxStore store, Connection maintenance, Set<String> keys, boolean ordered)
      throws Exception {
    ClaimRequest request =
        new ClaimRequest("scale", keys, options.batchSize, Duration.ofMinutes(1), 10, ordered);
    int expected = Math.min(options.batchSize, options.scalePending);
    long[] nanos = new long[options.scaleClaims];
    long[] wal = new long[options.scaleClaims];
    int claimed = 0;
    for (int i = -WARMUP; i < options.scaleClaims; i++) {
      if (i % VACUUM_EVERY == 0) {
        Backlog.vacuum(maintenance);
      }
      long lsn = walInsertPosition(maintenance);
      long start = System.nanoTime();
      claimed = store.claim(request).claimed().size();
      long elapsed = System.nanoTime() - start;
      long written = walInsertPosition(maintenance) - lsn;
      if (claimed != expected) {
        throw new IllegalStateException("claimed " + claimed + " rows, expected " + expected);
      }
      if (i >= 0) {
        nanos[i] = elapsed;
        wal[i] = written;
      }
    }
    Arrays.sort(nanos);
    Arrays.sort(wal);
    return new Timing(
        Stats.percentile(nanos, 50) / 1e6,
        Stats.percentile(nanos, 10) / 1e6,
        Stats.percentile(nanos, 90) / 1e6,
        claimed,
        Stats.percentile(wal, 50));
  }

  /** The server's WAL insert position in bytes (autovacuum may add a little between two reads). */
  private static long walInsertPosition(Connection c) throws Exception {
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** The backlog figures task 0 reads every 30 s by default (rows per status, oldest age). */
  private static double timeBacklogMetrics(PostgresOutboxStore store, Set<String> keys) {
    long[] nanos = new long[5];
    for (int i = 0; i < nanos.length; i++) {
      long start = System.nanoTime();
      store.inspect(keys, false);
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
