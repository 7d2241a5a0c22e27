package dev.outboxrelay.connect;

import dev.outboxrelay.store.OutboxStoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Wakes the task as soon as a transaction commits new rows of its instance keys (PostgreSQL
 * LISTEN/NOTIFY), so that latency does not depend on the poll interval. Purely an accelerator: if
 * the connection fails, the task keeps polling and this thread reconnects with backoff.
 */
final class NotificationListener {
  private static final Logger log = LoggerFactory.getLogger(NotificationListener.class);
  private static final Duration RECONNECT_MIN = Duration.ofMillis(500);
  private static final Duration RECONNECT_MAX = Duration.ofSeconds(30);

  private final Supplier<Connection> connections;
  private final String channel;
  private final Set<String> instanceKeys;
  private final WakeSignal wake;
  private final Thread thread;
  private final Map<String, String> mdc;
  private volatile boolean running = true;
  private volatile Connection current;
  private final AtomicLong received = new AtomicLong();

  /** An outage of the notification connection was logged at INFO (once, until it is back). */
  private boolean unavailableReported;

  NotificationListener(
      Supplier<Connection> connections,
      String channel,
      Set<String> instanceKeys,
      WakeSignal wake,
      String threadName) {
    this.connections = connections;
    this.channel = channel;
    this.instanceKeys = instanceKeys;
    this.wake = wake;
    this.mdc = MDC.getCopyOfContextMap();
    this.thread = new Thread(this::run, threadName);
    this.thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  void stop() {
    running = false;
    thread.interrupt();
    closeQuietly(current);
  }

  private void run() {
    if (mdc != null) {
      MDC.setContextMap(mdc);
    }
    long backoffMs = RECONNECT_MIN.toMillis();
    while (running) {
      try (Connection connection = connections.get()) {
        current = connection;
        try (Statement s = connection.createStatement()) {
          // The channel is derived from the validated table name: a plain identifier.
          s.execute("LISTEN \"" + channel + "\"");
        }
        backoffMs = RECONNECT_MIN.toMillis();
        if (unavailableReported) {
          unavailableReported = false;
          log.info("Listening for insert notifications again (channel {})", channel);
        }
        PGConnection pg = connection.unwrap(PGConnection.class);
        while (running) {
          PGNotification[] notifications = pg.getNotifications(1000);
          if (notifications != null) {
            if (isForUs(notifications)) {
              wake.wake();
            }
            received.addAndGet(notifications.length);
          }
        }
      } catch (SQLException | RuntimeException e) {
        if (!running) {
          return;
        }
        // The connection supplier throws its own classified failure (a refused login, say).
        String sqlState =
            e instanceof SQLException sql
                ? sql.getSQLState()
                : e instanceof OutboxStoreException store ? store.sqlState() : null;
        if (unavailableReported) {
          log.debug(
              "Notification connection still unavailable (reason=NOTIFY_UNAVAILABLE, sqlState={})",
              sqlState);
        } else {
          // Once per outage, so that a LISTEN that never works is not silent; then quietly.
          unavailableReported = true;
          log.info(
              "Not listening for insert notifications (reason=NOTIFY_UNAVAILABLE, sqlState={});"
                  + " new rows are found by polling (poll.interval.ms) until the connection is"
                  + " back",
              sqlState);
        }
      }
      try {
        Thread.sleep(backoffMs); // reconnect backoff of a background thread, not a test wait
      } catch (InterruptedException e) {
        return;
      }
      backoffMs = Math.min(RECONNECT_MAX.toMillis(), backoffMs * 2);
    }
  }

  /** Notifications read so far, ours or not; for tests. */
  long received() {
    return received.get();
  }

  private boolean isForUs(PGNotification[] notifications) {
    for (PGNotification n : notifications) {
      if (instanceKeys.contains(n.getParameter())) {
        return true;
      }
    }
    return false;
  }

  private static void closeQuietly(Connection c) {
    if (c != null) {
      try {
        c.close();
      } catch (SQLException ignored) {
        // Closing to interrupt a blocked read; nothing to report.
      }
    }
  }
}
