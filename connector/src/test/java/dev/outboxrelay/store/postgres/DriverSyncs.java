package dev.outboxrelay.store.postgres;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Counts the Sync messages the PostgreSQL driver sends from the current thread, read from its
 * protocol trace: each Sync ends a round trip (the driver then waits for the server's answer).
 */
final class DriverSyncs implements AutoCloseable {
  private static final Logger DRIVER = Logger.getLogger("org.postgresql.core.v3.QueryExecutorImpl");

  private final Thread thread = Thread.currentThread();
  private final AtomicInteger count = new AtomicInteger();
  private final Level previous = DRIVER.getLevel();
  private final Handler handler =
      new Handler() {
        @Override
        public void publish(LogRecord record) {
          if (Thread.currentThread() == thread && " FE=> Sync".equals(record.getMessage())) {
            count.incrementAndGet();
          }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
      };

  DriverSyncs() {
    handler.setLevel(Level.FINEST);
    DRIVER.setLevel(Level.FINEST);
    DRIVER.addHandler(handler);
  }

  /** The Syncs {@code action} sent. */
  int during(Runnable action) {
    int before = count.get();
    action.run();
    return count.get() - before;
  }

  @Override
  public void close() {
    DRIVER.removeHandler(handler);
    DRIVER.setLevel(previous);
  }
}
