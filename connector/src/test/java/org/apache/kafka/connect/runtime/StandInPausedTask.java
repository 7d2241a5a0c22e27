package org.apache.kafka.connect.runtime;

import java.util.concurrent.CountDownLatch;

/**
 * Stands in for Connect's pause of a task, by its class's package and its method's name, which is
 * all a task can see of it: the task thread waits in {@code awaitUnpause} until {@code resumed} is
 * counted down.
 */
public final class StandInPausedTask {
  private StandInPausedTask() {}

  public static boolean awaitUnpause(CountDownLatch resumed) throws InterruptedException {
    resumed.await();
    return true;
  }
}
