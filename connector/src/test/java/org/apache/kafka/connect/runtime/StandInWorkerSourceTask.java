package org.apache.kafka.connect.runtime;

import java.util.concurrent.CountDownLatch;

/**
 * Stands in for Connect's close of a source task, by its class's package and name and its method's
 * name, which is all a task can see of it: {@code stop()}, then the producer's close, which ends
 * when {@code producerClosed} is counted down.
 */
public final class StandInWorkerSourceTask {
  private StandInWorkerSourceTask() {}

  public static void close(Runnable stopTask, CountDownLatch producerClosed)
      throws InterruptedException {
    stopTask.run();
    producerClosed.await();
  }
}
