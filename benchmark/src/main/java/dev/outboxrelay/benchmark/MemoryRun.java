package dev.outboxrelay.benchmark;

import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Heap while draining a large backlog: live heap (used right after a full collection) of this whole
 * JVM, which also hosts the broker, the Connect worker and the consumer, sampled before the drain
 * (the baseline, everything idle) and every few seconds during it.
 */
final class MemoryRun {
  record Result(
      int rows,
      long baselineBytes,
      long peakBytes,
      int samples,
      Drain.Result drain,
      double loadAverage) {}

  private final Drain drain;
  private final Options options;

  MemoryRun(Drain drain, Options options) {
    this.drain = drain;
    this.options = options;
  }

  Result run() throws Exception {
    AtomicLong baseline = new AtomicLong();
    AtomicLong peak = new AtomicLong();
    AtomicLong samples = new AtomicLong();
    Thread[] sampler = new Thread[1];
    double load = Machine.loadAverage();
    Drain.Config config =
        new Drain.Config("memory", false, 2, true, options.batchSize, Map.of(), options.memoryRows);
    Drain.Result result =
        drain.run(
            config,
            resuming -> {
              if (resuming) {
                baseline.set(Math.min(Machine.liveHeapBytes(), Machine.liveHeapBytes()));
                sampler[0] = new Thread(() -> sample(peak, samples), "benchmark-heap-sampler");
                sampler[0].setDaemon(true);
                sampler[0].start();
              } else {
                sampler[0].interrupt();
                try {
                  sampler[0].join();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
            });
    return new Result(
        options.memoryRows, baseline.get(), peak.get(), (int) samples.get(), result, load);
  }

  private void sample(AtomicLong peak, AtomicLong samples) {
    long interval = options.memorySampleInterval.toNanos();
    while (!Thread.currentThread().isInterrupted()) {
      LockSupport.parkNanos(interval);
      if (Thread.currentThread().isInterrupted()) {
        return;
      }
      long live = Machine.liveHeapBytes();
      peak.accumulateAndGet(live, Math::max);
      samples.incrementAndGet();
    }
  }
}
