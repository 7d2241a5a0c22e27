package dev.outboxrelay.connect;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Supplier;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * Exactly-once: claims the next batch while Connect sends and commits the current one. With the
 * default transaction boundary Connect polls an exactly-once task again only after the transaction
 * of its last poll committed, so a claim made inside {@code poll()} would leave the producer idle
 * during the claim and the database idle during the commit. After a batch with rows the next claim
 * starts at once on this class's thread and the next {@code poll()} takes its result; after an
 * empty one nothing is claimed ahead (the next poll claims itself, after its idle wait), so an idle
 * task does not claim before it is notified.
 *
 * <p>As safe as a claim inside {@code poll()}: a prefetched batch is claimed under the instance's
 * epoch with the next claim number, and the claims and mappings still run one after the other (each
 * starts when the previous result was taken). A batch that is never handed over, because the task
 * stopped, is covered by no offset: the next instance's recovery releases its rows.
 */
final class ClaimPrefetch implements AutoCloseable {

  /** A claim's records, and how many rows it claimed (some may have been parked instead). */
  record Batch(List<SourceRecord> records, int claimed) {
    static final Batch EMPTY = new Batch(List.of(), 0);

    boolean claimedNothing() {
      return claimed == 0 && records.isEmpty();
    }
  }

  private final Supplier<Batch> claim;
  private final ExecutorService thread;
  private Future<Batch> pending;

  ClaimPrefetch(Supplier<Batch> claim, String threadName) {
    this.claim = claim;
    this.thread =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, threadName);
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * The prefetched batch, or one claimed now when none is pending; then starts the next claim if
   * this one had rows. A failure of the claim (a store error) is thrown here, on the task thread.
   */
  Batch next() {
    Future<Batch> prefetched = pending;
    pending = null;
    Batch batch = prefetched == null ? claim.get() : await(prefetched);
    if (!batch.claimedNothing()) {
      pending = thread.submit(claim::get);
    }
    return batch;
  }

  private Batch await(Future<Batch> prefetched) {
    try {
      return prefetched.get();
    } catch (InterruptedException e) {
      // Hand nothing over now, but keep the claim for the next poll: dropped, its rows would stay
      // leased under a position that the next batch's committed offset covers.
      pending = prefetched;
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

  /** Stops the thread; a claim in progress may still finish (its rows are recovered later). */
  @Override
  public void close() {
    thread.shutdownNow();
  }
}
