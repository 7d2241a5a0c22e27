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

  /**
   * Waits up to {@code timeout} for a wake-up; true if woken (or interrupted: the interrupt flag is
   * restored), false if the time passed.
   */
  boolean await(Duration timeout) {
    lock.lock();
    try {
      long nanos = timeout.toNanos();
      while (!signalled && nanos > 0) {
        nanos = woken.awaitNanos(nanos);
      }
      boolean woke = signalled;
      signalled = false;
      return woke;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return true;
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
