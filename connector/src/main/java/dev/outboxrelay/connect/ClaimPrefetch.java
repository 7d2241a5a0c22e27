package dev.outboxrelay.connect;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.kafka.connect.source.SourceRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Exactly-once: claims the next batch while Connect sends and commits the current one. With the
 * default transaction boundary Connect polls an exactly-once task again only after the transaction
 * of its last poll committed, so a claim made inside {@code poll()} would leave the producer idle
 * during the claim and the database idle during the commit. After a batch with rows the next claim
 * starts at once on this class's thread and the next {@code poll()} takes its result; after an
 * empty one nothing is claimed ahead (the next poll claims itself, after its idle wait), so an idle
 * task does not claim before it is notified. Nor after a trickle's short batch ({@link
 * IdleBackoff}): claimed ahead, each such batch was followed by a claim that found nothing.
 *
 * <p>As safe as a claim inside {@code poll()}: a prefetched batch is claimed under the instance's
 * epoch with the next claim number, and the claims and mappings still run one after the other (each
 * starts once the previous batch was handed over, its parks written). A batch that is never handed
 * over, because the task stopped, is covered by no offset and has parked nothing (parks are written
 * at hand-over, {@link RecordHandoff#handOver}): the stop gives its rows back (or, failing that,
 * the next instance's recovery releases them).
 */
final class ClaimPrefetch implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ClaimPrefetch.class);

  /**
   * A claim's positioned records, how many rows it claimed (some may be parked instead) of the
   * {@code fullBatch} it asked for, and whether it made other progress (rows parked over their
   * budget, a lost claim's release with pages left), after which the next claim starts ahead.
   */
  record Batch(
      RecordHandoff.Positioned positioned, int claimed, int fullBatch, boolean progressed) {
    static final Batch EMPTY = new Batch(RecordHandoff.Positioned.EMPTY, 0, 0, false);

    /** Stands for a batch with rows, already handed over: the next claim may start. */
    static final Batch HAD_ROWS = new Batch(RecordHandoff.Positioned.EMPTY, 1, 1, true);

    boolean claimedNothing() {
      return claimed == 0 && !progressed && positioned.isEmpty();
    }

    List<SourceRecord> records() {
      return positioned.records();
    }
  }

  private final Supplier<Batch> claim;
  private final ExecutorService thread;

  /** The claim running or done ahead; whoever takes it (the next poll, or a stop) owns it. */
  private final AtomicReference<CompletableFuture<Batch>> pending = new AtomicReference<>();

  /** The task thread's logging context (connector, task, instance keys), for the claims' logs. */
  private final Map<String, String> mdc;

  ClaimPrefetch(Supplier<Batch> claim, String threadName) {
    this.claim = claim;
    this.mdc = MDC.getCopyOfContextMap();
    this.thread =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(() -> runWithContext(r), threadName);
              t.setDaemon(true);
              return t;
            });
  }

  private void runWithContext(Runnable r) {
    if (mdc != null) {
      MDC.setContextMap(mdc);
    }
    r.run();
  }

  /**
   * The prefetched batch, or one claimed now when none is pending; nothing is claimed ahead until
   * {@link #startNextAfter}. A failure of the claim (a store error) is thrown here.
   */
  Batch take() {
    if (thread.isShutdown()) {
      return Batch.EMPTY; // closed: the task is stopping, and claims nothing more
    }
    CompletableFuture<Batch> prefetched = pending.getAndSet(null);
    return prefetched == null ? claim.get() : await(prefetched);
  }

  /**
   * Starts the next claim ahead if {@code batch} had rows (an empty one: the next poll claims). The
   * caller leaves out a trickle's short batch ({@link IdleBackoff}).
   */
  void startNextAfter(Batch batch) {
    if (batch.claimedNothing()) {
      return;
    }
    try {
      pending.set(CompletableFuture.supplyAsync(claim, thread));
    } catch (RejectedExecutionException e) {
      // closed: the task is stopping, and claims nothing more
    }
  }

  /** Whether a claim ahead is running or done and not yet taken. */
  boolean hasPending() {
    return pending.get() != null;
  }

  private Batch await(CompletableFuture<Batch> prefetched) {
    try {
      return prefetched.get();
    } catch (InterruptedException e) {
      // Hand nothing over now, but keep the claim for the next poll: dropped, its rows would stay
      // leased under a position that the next batch's committed offset covers.
      if (!thread.isShutdown()) {
        pending.compareAndSet(null, prefetched); // after a close, the stop forgets nothing here
      }
      Thread.currentThread().interrupt();
      return Batch.EMPTY;
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException failure) {
        throw failure;
      }
      if (e.getCause() instanceof Error error) {
        throw error;
      }
      throw new IllegalStateException("claim failed", e.getCause());
    }
  }

  /** Late, on this class's thread, where nobody would see an exception: said, by class only. */
  private static void forgetQuietly(Consumer<Batch> untaken, Batch batch) {
    try {
      untaken.accept(batch);
    } catch (RuntimeException e) {
      log.warn(
          "Could not forget at stop a batch claimed ahead (error={}); the next instance's"
              + " recovery releases its rows",
          e.getClass().getName());
    }
  }

  /** As {@link #close(Duration, Consumer)} without waiting, for a batch no one needs told of. */
  @Override
  public void close() {
    close(Duration.ZERO, batch -> {});
  }

  /**
   * Starts no more claims, and waits up to {@code timeout} for one in progress (it is not
   * interrupted). The batch claimed ahead that no poll took goes to {@code untaken}, to be
   * {@linkplain RecordHandoff#forget forgotten}: now if it is done, or on this class's thread when
   * it finishes. A claim that returned but whose rows were still being mapped would otherwise enter
   * the ledger after the stop had forgotten what it held, and stay there: the outcome writer would
   * wait its whole grace for rows never sent, and could not give them back. (Forgotten late, they
   * are given back if the writer has not settled yet; else the next instance's recovery releases
   * them.) Nothing goes there when there is no such batch or its claim failed.
   */
  void close(Duration timeout, Consumer<Batch> untaken) {
    thread.shutdown();
    try {
      thread.awaitTermination(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    CompletableFuture<Batch> batch = pending.getAndSet(null);
    if (batch != null) {
      batch.whenComplete(
          (claimed, failed) -> {
            if (claimed != null) { // a failed claim entered nothing in the ledger
              forgetQuietly(untaken, claimed);
            }
          });
    }
  }
}
