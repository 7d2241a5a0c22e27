package dev.outboxrelay.testing;

import static org.awaitility.Awaitility.await;

import dev.outboxrelay.writer.OutboxMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import java.util.stream.IntStream;
import org.awaitility.core.ConditionFactory;

/**
 * An application that keeps writing: commits {@code total} outbox rows of one instance key on its
 * own thread, {@code batch} per transaction, holding back while {@code maxBacklog} or more of them
 * await delivery (waiting on that condition, not on a clock), so that rows keep arriving for as
 * long as the relay keeps publishing them, before, during and after a fault.
 *
 * <p>{@link #messages} appends through {@code PostgresOutboxWriter}, as applications do; a failed
 * transaction stops the writer. {@link #load} writes with plain SQL, rows of a second instance key
 * and extra rows in the same transactions, and retries a failed transaction until it commits (the
 * database may be away); its message ids are fixed and conflicts ignored, so a retry never
 * duplicates a row.
 */
public final class LoadWriter implements AutoCloseable {
  /** Aggregates of {@link #messages}: {@code <prefix>-agg-0} to {@code -15}. */
  public static final int AGGREGATES = 16;

  /** What one transaction writes besides rows {@code first} to {@code first + count - 1}. */
  @FunctionalInterface
  public interface Batch {
    void write(Connection transaction, int first, int count) throws SQLException;
  }

  /**
   * A {@link #load}: {@code total} rows {@code m-<n>} of {@code mainKey} over {@code aggregates}
   * aggregates ({@code agg-<n % aggregates>}), {@code batch} per transaction, with one row {@code
   * o-<n>} of {@code otherKey} for every {@code otherEvery} (none if 0), payloads padded by {@code
   * payloadBytes}; the backlog of {@code mainKey} is kept under {@code maxBacklog}.
   */
  public record Spec(
      String mainKey,
      String otherKey,
      int total,
      int batch,
      int aggregates,
      int otherEvery,
      int maxBacklog,
      int payloadBytes) {

    public int otherTotal() {
      return otherEvery <= 0 ? 0 : (total + otherEvery - 1) / otherEvery;
    }
  }

  /**
   * A batch retried after its commit's reply was lost (the database going away) writes none of its
   * rows again: not those still in the outbox (ON CONFLICT), nor those the relay published
   * meanwhile, which are in the published log only (as the writer library checks). Written again,
   * they were relayed twice, duplicates no lease explained, failing the verdict.
   */
  private static final String INSERT_SERIES =
      "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
          + " payload, headers)"
          + " SELECT ? || g, ?, 'order', ? || (g % ?), 'OrderChanged',"
          + " convert_to('{\"n\":' || g || ',\"pad\":\"' || repeat('x', ?) || '\"}', 'UTF8'),"
          + " jsonb_build_object('trace', 't-' || g)"
          + " FROM generate_series(?, ?) g WHERE g % ? = 0"
          + " AND NOT EXISTS (SELECT 1 FROM outbox_published p WHERE p.message_id = ? || g)"
          + " ON CONFLICT (message_id) DO NOTHING";

  private final OutboxDb db;
  private final String instanceKey;
  private final int total;
  private final int batchSize;
  private final int maxBacklog;
  private final IntFunction<String> id;
  private final Batch batch;
  private final boolean retry;
  private final AtomicInteger written = new AtomicInteger();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final Thread thread;
  private volatile boolean closed;

  private LoadWriter(
      OutboxDb db,
      String instanceKey,
      int total,
      int batchSize,
      int maxBacklog,
      IntFunction<String> id,
      Batch batch,
      boolean retry) {
    this.db = db;
    this.instanceKey = instanceKey;
    this.total = total;
    this.batchSize = batchSize;
    this.maxBacklog = maxBacklog;
    this.id = id;
    this.batch = batch;
    this.retry = retry;
    this.thread = new Thread(this::run, "load-writer-" + instanceKey);
    this.thread.setDaemon(true);
  }

  /**
   * Messages {@code <idPrefix>-00000} and on, over {@link #AGGREGATES} aggregates, appended through
   * {@code PostgresOutboxWriter}.
   */
  public static LoadWriter messages(
      OutboxDb db, String instanceKey, String idPrefix, int total, int batch, int maxBacklog) {
    IntFunction<String> id = n -> OutboxDb.ids(idPrefix, n, 1).get(0);
    return new LoadWriter(
        db,
        instanceKey,
        total,
        batch,
        maxBacklog,
        id,
        (c, first, count) -> {
          List<OutboxMessage> messages = new ArrayList<>(count);
          for (int n = first; n < first + count; n++) {
            messages.add(OutboxDb.message(id.apply(n), idPrefix + "-agg-" + (n % AGGREGATES)));
          }
          db.enqueue(c, instanceKey, messages);
        },
        false);
  }

  /** The rows of {@code spec} with plain SQL, and {@code extras} (if not null) with each batch. */
  public static LoadWriter load(OutboxDb db, Spec spec, Batch extras) {
    return new LoadWriter(
        db,
        spec.mainKey(),
        spec.total(),
        spec.batch(),
        spec.maxBacklog(),
        n -> "m-" + n,
        (c, first, count) -> {
          int last = first + count - 1;
          insertSeries(c, spec, "m-", spec.mainKey(), "agg-", first, last, 1);
          if (spec.otherEvery() > 0) {
            insertSeries(
                c, spec, "o-", spec.otherKey(), "other-agg-", first, last, spec.otherEvery());
          }
          if (extras != null) {
            extras.write(c, first, count);
          }
        },
        true);
  }

  private static void insertSeries(
      Connection c,
      Spec spec,
      String prefix,
      String key,
      String aggregate,
      int from,
      int to,
      int every)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(INSERT_SERIES)) {
      ps.setString(1, prefix);
      ps.setString(2, key);
      ps.setString(3, aggregate);
      ps.setInt(4, spec.aggregates());
      ps.setInt(5, spec.payloadBytes());
      ps.setInt(6, from);
      ps.setInt(7, to);
      ps.setInt(8, every);
      ps.setString(9, prefix);
      ps.executeUpdate();
    }
  }

  public LoadWriter start() {
    thread.start();
    return this;
  }

  /** Rows of the instance key committed so far. */
  public int written() {
    return written.get();
  }

  public boolean done() {
    return written.get() >= total;
  }

  /** The message ids of every row of the instance key it writes, in order. */
  public List<String> ids() {
    return IntStream.range(0, total).mapToObj(id).toList();
  }

  /** Throws what stopped the writer, if anything did. */
  public void check() {
    Throwable t = failure.get();
    if (t != null) {
      throw new AssertionError("the writer failed", t);
    }
  }

  /** Waits until every row is written; rethrows what stopped the writer. */
  public void awaitDone(Duration atMost) {
    await("the writer appends all " + total + " rows")
        .atMost(atMost)
        .until(() -> !thread.isAlive() || failure.get() != null);
    check();
  }

  private void run() {
    try {
      for (int first = 0; first < total && !closed; first += batchSize) {
        int count = Math.min(batchSize, total - first);
        waitFor(
            "backlog below " + maxBacklog,
            Duration.ofMillis(25),
            () -> closed || db.active(instanceKey) < maxBacklog);
        int from = first;
        if (retry) {
          waitFor(
              "batch at " + first + " committed",
              Duration.ofMillis(100),
              () -> {
                db.inTransaction(c -> batch.write(c, from, count));
                return true;
              });
        } else {
          db.inTransaction(c -> batch.write(c, from, count));
        }
        written.set(first + count);
      }
    } catch (Throwable t) {
      if (!closed) {
        failure.set(t);
      }
    }
  }

  /** Polls {@code condition}; with retries, an exception (the database away) is a false. */
  private void waitFor(String what, Duration poll, Callable<Boolean> condition) {
    ConditionFactory wait = await(what).atMost(Duration.ofMinutes(4)).pollInterval(poll);
    (retry ? wait.ignoreExceptions() : wait).until(condition);
  }

  /** Stops writing and waits (a while) for the thread to end. */
  @Override
  public void close() {
    closed = true;
    thread.interrupt();
    try {
      thread.join(Duration.ofSeconds(10).toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
