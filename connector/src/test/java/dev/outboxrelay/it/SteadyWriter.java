package dev.outboxrelay.it;

import static org.awaitility.Awaitility.await;

import dev.outboxrelay.store.OutboxMessage;
import dev.outboxrelay.testing.OutboxDb;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * An application that keeps writing: appends {@code total} rows in transactions of {@code chunk},
 * on one connection of its own, holding back while more than {@code maxBacklog} rows await
 * delivery, so that rows keep arriving for as long as the relay keeps publishing them.
 */
final class SteadyWriter implements AutoCloseable {
  static final int AGGREGATES = 16;

  private final OutboxDb db;
  private final String instanceKey;
  private final String idPrefix;
  private final int total;
  private final int chunk;
  private final int maxBacklog;
  private final AtomicInteger written = new AtomicInteger();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final Thread thread;
  private volatile boolean closed;

  SteadyWriter(
      OutboxDb db, String instanceKey, String idPrefix, int total, int chunk, int maxBacklog) {
    this.db = db;
    this.instanceKey = instanceKey;
    this.idPrefix = idPrefix;
    this.total = total;
    this.chunk = chunk;
    this.maxBacklog = maxBacklog;
    this.thread = new Thread(this::run, "steady-writer-" + idPrefix);
    this.thread.setDaemon(true);
  }

  SteadyWriter start() {
    thread.start();
    return this;
  }

  int written() {
    return written.get();
  }

  List<String> ids() {
    return OutboxDb.ids(idPrefix, 0, total);
  }

  /** Waits until every row is written; rethrows what stopped the writer. */
  void awaitDone(Duration atMost) {
    await("the writer appends all " + total + " rows")
        .atMost(atMost)
        .until(() -> !thread.isAlive() || failure.get() != null);
    if (failure.get() != null) {
      throw new AssertionError("the writer failed", failure.get());
    }
  }

  private void run() {
    try {
      while (written.get() < total && !closed) {
        await()
            .pollDelay(Duration.ZERO)
            .atMost(Duration.ofMinutes(3))
            .pollInterval(Duration.ofMillis(50))
            .until(() -> closed || db.active(instanceKey) < maxBacklog);
        int from = written.get();
        int count = Math.min(chunk, total - from);
        List<OutboxMessage> messages = new ArrayList<>(count);
        for (String id : OutboxDb.ids(idPrefix, from, count)) {
          int n = Integer.parseInt(id.substring(id.length() - 5));
          messages.add(OutboxDb.message(id, idPrefix + "-agg-" + (n % AGGREGATES)));
        }
        db.inTransaction(c -> db.enqueue(c, instanceKey, messages));
        written.addAndGet(count);
      }
    } catch (Throwable t) {
      failure.set(t);
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      thread.join(Duration.ofSeconds(10).toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
