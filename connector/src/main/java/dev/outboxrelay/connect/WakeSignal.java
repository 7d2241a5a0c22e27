package dev.outboxrelay.connect;

import java.time.Duration;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Lets {@code poll()} wait without spinning and return promptly when something happens: new rows (a
 * notification), capacity freed by resolved outcomes, or stop.
 */
final class WakeSignal {
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition woken = lock.newCondition();
  private boolean signalled;

  void wake() {
    lock.lock();
    try {
      signalled = true;
      woken.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** Waits up to {@code timeout} for a wake-up; restores the interrupt flag if interrupted. */
  void await(Duration timeout) {
    lock.lock();
    try {
      long nanos = timeout.toNanos();
      while (!signalled && nanos > 0) {
        nanos = woken.awaitNanos(nanos);
      }
      signalled = false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      lock.unlock();
    }
  }

  /** For tests: true when a wake-up is pending. */
  boolean isSignalled() {
    lock.lock();
    try {
      return signalled;
    } finally {
      lock.unlock();
    }
  }
}
