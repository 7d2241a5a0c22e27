package dev.outboxrelay.connect;

import java.time.Duration;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A wait without spinning that ends promptly when something happens: for {@code poll()}, new rows
 * (a notification), capacity freed by resolved outcomes, or stop; for the outcome thread, an
 * outcome submitted, or stop.
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
   * Waits up to {@code timeout} for a wake-up; true if woken, false if the time passed. An
   * interrupt does not end the wait (the flag is restored on return): nothing stops a task by
   * interrupting it (its stop wakes this), and a wait that an interrupt ended would end at once
   * every time after it, a caller in a loop spinning.
   */
  boolean await(Duration timeout) {
    boolean interrupted = false;
    lock.lock();
    try {
      long deadline = System.nanoTime() + timeout.toNanos();
      long nanos = timeout.toNanos();
      while (!signalled && nanos > 0) {
        try {
          nanos = woken.awaitNanos(nanos);
        } catch (InterruptedException e) {
          interrupted = true; // the flag is clear now: the next wait waits
          nanos = deadline - System.nanoTime();
        }
      }
      boolean woke = signalled;
      signalled = false;
      return woke;
    } finally {
      lock.unlock();
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
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
