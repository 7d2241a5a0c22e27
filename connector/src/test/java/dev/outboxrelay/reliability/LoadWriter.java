package dev.outboxrelay.reliability;

import static org.awaitility.Awaitility.await;

import dev.outboxrelay.testing.OutboxDb;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The application: commits outbox rows on its own thread, {@code batch} main rows per transaction
 * (plus one row of the other instance key for every {@code otherEvery} main rows), spread over
 * {@code aggregates} aggregates, for as long as the scenario runs. It keeps the backlog (rows not
 * yet delivered) under {@code maxBacklog}, waiting on that condition rather than on a clock, so
 * rows keep flowing before, during and after a fault. A failed transaction (the database went away)
 * is retried until it commits; message ids are fixed ({@code m-<n>}, {@code o-<n>}), so a retry
 * never duplicates a row.
 */
final class LoadWriter implements AutoCloseable {
  /** Extra rows written in the same transaction as a batch (bad rows, sentinel rows). */
  @FunctionalInterface
  interface Extras {
    void write(Connection transaction, int firstIndex, int count) throws SQLException;
  }

  record Spec(
      String mainKey,
      String otherKey,
      int total,
      int batch,
      int aggregates,
      int otherEvery,
      int maxBacklog,
      int payloadBytes) {

    int otherTotal() {
      return otherEvery <= 0 ? 0 : (total + otherEvery - 1) / otherEvery;
    }
  }

  private static final String INSERT =
      "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
          + " payload, headers)"
          + " SELECT ? || g, ?, 'order', ? || (g % ?), 'OrderChanged',"
          + " convert_to('{\"n\":' || g || ',\"pad\":\"' || repeat('x', ?) || '\"}', 'UTF8'),"
          + " jsonb_build_object('trace', 't-' || g)"
          + " FROM generate_series(?, ?) g WHERE g % ? = 0"
          + " ON CONFLICT (message_id) DO NOTHING";

  private final OutboxDb db;
  private final Spec spec;
  private final Extras extras;
  private final AtomicInteger committed = new AtomicInteger();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final Thread thread;

  LoadWriter(OutboxDb db, Spec spec, Extras extras) {
    this.db = db;
    this.spec = spec;
    this.extras = extras;
    this.thread = new Thread(this::run, "reliability-load-writer");
    this.thread.setDaemon(true);
  }

  LoadWriter(OutboxDb db, Spec spec) {
    this(db, spec, null);
  }

  LoadWriter start() {
    thread.start();
    return this;
  }

  Spec spec() {
    return spec;
  }

  /** Main rows committed so far. */
  int committed() {
    return committed.get();
  }

  boolean done() {
    return committed.get() >= spec.total();
  }

  /** Throws what stopped the writer, if anything did. */
  void check() {
    Throwable t = failure.get();
    if (t != null) {
      throw new AssertionError("the load writer failed", t);
    }
  }

  private void run() {
    try {
      for (int first = 0; first < spec.total(); first += spec.batch()) {
        int count = Math.min(spec.batch(), spec.total() - first);
        await("backlog below " + spec.maxBacklog())
            .atMost(Duration.ofMinutes(4))
            .pollInterval(Duration.ofMillis(25))
            .ignoreExceptions() // the database may be away: wait for it
            .until(() -> db.active(spec.mainKey()) < spec.maxBacklog());
        int from = first;
        await("batch at " + first + " committed")
            .atMost(Duration.ofMinutes(4))
            .pollInterval(Duration.ofMillis(100))
            .ignoreExceptions()
            .until(() -> insert(from, count));
        committed.set(first + count);
      }
    } catch (Throwable t) {
      if (!Thread.currentThread().isInterrupted()) {
        failure.set(t);
      }
    }
  }

  private boolean insert(int first, int count) throws SQLException {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try {
        insertSeries(c, "m-", spec.mainKey(), "agg-", first, first + count - 1, 1);
        if (spec.otherEvery() > 0) {
          insertSeries(
              c, "o-", spec.otherKey(), "other-agg-", first, first + count - 1, spec.otherEvery());
        }
        if (extras != null) {
          extras.write(c, first, count);
        }
        c.commit();
        return true;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    }
  }

  private void insertSeries(
      Connection c, String prefix, String key, String aggregate, int from, int to, int every)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(INSERT)) {
      ps.setString(1, prefix);
      ps.setString(2, key);
      ps.setString(3, aggregate);
      ps.setInt(4, spec.aggregates());
      ps.setInt(5, spec.payloadBytes());
      ps.setInt(6, from);
      ps.setInt(7, to);
      ps.setInt(8, every);
      ps.executeUpdate();
    }
  }

  @Override
  public void close() {
    thread.interrupt();
  }
}
