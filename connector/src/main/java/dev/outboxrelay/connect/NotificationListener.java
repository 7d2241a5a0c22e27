package dev.outboxrelay.connect;

import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.NotifyChannel;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
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

  /**
   * How often the connection is checked by a round trip, and how long that may take: a wait for
   * notifications that times out says nothing of a dead peer (an unplanned failover leaves the
   * socket half open, found by TCP keepalive after hours), so without it the task would poll
   * unnoticed all that time.
   */
  static final Duration PROBE_INTERVAL = Duration.ofSeconds(15);

  static final Duration PROBE_TIMEOUT = Duration.ofSeconds(10);

  private final Duration probeInterval;
  private final Duration probeTimeout;
  private final Supplier<Connection> connections;
  private final OutboxTable table;

  /** The channel listened on: the one the table's insert trigger announces on (NotifyChannel). */
  private volatile String channel;

  /** Said once: the trigger announces on another channel than outbox.table's spelling gives. */
  private boolean otherChannelReported;

  private final Set<String> instanceKeys;
  private final WakeSignal wake;
  private final BooleanSupplier roomToClaim;
  private final Thread thread;
  private final Map<String, String> mdc;
  private volatile boolean running = true;
  private volatile Connection current;
  private final AtomicLong received = new AtomicLong();
  private final AtomicLong probes = new AtomicLong();

  /** An outage of the notification connection was logged at INFO (once, until it is back). */
  private boolean unavailableReported;

  NotificationListener(
      Supplier<Connection> connections,
      OutboxTable table,
      Set<String> instanceKeys,
      WakeSignal wake,
      String threadName) {
    this(connections, table, instanceKeys, wake, () -> true, threadName);
  }

  /**
   * @param roomToClaim whether a claim could take rows now: a wake-up while it could not (the task
   *     holds its limit, waiting for Kafka) ended poll()'s pause for a claim that found nothing,
   *     and a stream of inserts kept the task polling at their rate; the room freed wakes it
   *     instead
   */
  NotificationListener(
      Supplier<Connection> connections,
      OutboxTable table,
      Set<String> instanceKeys,
      WakeSignal wake,
      BooleanSupplier roomToClaim,
      String threadName) {
    this(
        connections,
        table,
        instanceKeys,
        wake,
        roomToClaim,
        threadName,
        PROBE_INTERVAL,
        PROBE_TIMEOUT);
  }

  /** With the connection's check every {@code probeInterval}, answered within {@code timeout}. */
  NotificationListener(
      Supplier<Connection> connections,
      OutboxTable table,
      Set<String> instanceKeys,
      WakeSignal wake,
      BooleanSupplier roomToClaim,
      String threadName,
      Duration probeInterval,
      Duration probeTimeout) {
    this.roomToClaim = roomToClaim;
    this.probeInterval = probeInterval;
    this.probeTimeout = probeTimeout;
    this.connections = connections;
    this.table = table;
    this.channel = table.notifyChannel();
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
    try {
      listen();
    } catch (Throwable t) { // NOPMD: an Error would otherwise go to stderr only
      // The class only: a message may carry connection details. Polling goes on without it.
      log.error(
          "Notification listener thread died (reason=BACKGROUND_THREAD_DIED, error={}); new rows"
              + " are found by polling (poll.interval.ms) until the task restarts",
          t.getClass().getName());
    }
  }

  /**
   * The channel to listen on, as the table's insert trigger announces: another than outbox.table's
   * spelling gives when the table was migrated under another spelling ({@code outbox} and {@code
   * public.outbox}); said once.
   */
  private void listenOn(String announced) {
    if (!announced.equals(table.notifyChannel()) && !otherChannelReported) {
      otherChannelReported = true;
      log.info(
          "The outbox table's insert trigger announces on channel {}, not {} (the table was"
              + " migrated under another spelling of outbox.table); listening on {}",
          announced,
          table.notifyChannel(),
          announced);
    }
    channel = announced;
  }

  /** Listens on the channel the trigger now announces on, instead of the one it left. */
  private void moveTo(Statement statement, String announced) throws SQLException {
    log.info(
        "The outbox table's insert trigger now announces on channel {}, not {} (migrated since);"
            + " listening on {}",
        announced,
        channel,
        announced);
    String left = channel;
    channel = announced;
    // The new one first: a row whose transaction began before the migration and commits now
    // announces on the old one, heard until the UNLISTEN.
    statement.execute("LISTEN \"" + channel + "\""); // plain identifiers, read as such
    statement.execute("UNLISTEN \"" + left + "\"");
    wakeIfRoomToClaim(); // rows announced on the new channel before this LISTEN
  }

  private void listen() {
    long backoffMs = RECONNECT_MIN.toMillis();
    while (running) {
      try (Connection connection = connections.get()) {
        current = connection;
        if (!running) {
          return; // stopped while connecting: no LISTEN on a connection nobody will close
        }
        // A read of the connection that takes longer fails (the probe's), instead of hanging.
        connection.setNetworkTimeout(Runnable::run, (int) probeTimeout.toMillis());
        listenOn(NotifyChannel.of(connection, table));
        try (Statement s = connection.createStatement()) {
          // A plain identifier: derived from the validated table name, or read as one.
          s.execute("LISTEN \"" + channel + "\"");
        }
        // Rows committed before the LISTEN took effect were announced to nobody: one claim now
        // finds them, instead of the poll interval (at start, and after every reconnect).
        wakeIfRoomToClaim();
        // Back only once a probe has passed: a session the server or a proxy ends soon after
        // every connect (an idle timeout shorter than the probe interval) is still an outage,
        // reported once and retried with a growing backoff, not a reconnect logged every cycle.
        boolean proven = false;
        PGConnection pg = connection.unwrap(PGConnection.class);
        long probeNs = probeInterval.toNanos();
        long lastProbe = System.nanoTime();
        try (Statement statement = connection.createStatement()) {
          while (running) {
            PGNotification[] notifications = pg.getNotifications(1000);
            if (notifications != null) {
              if (isForUs(notifications)) {
                wakeIfRoomToClaim();
              }
              received.addAndGet(notifications.length);
            }
            if (System.nanoTime() - lastProbe >= probeNs) {
              // The probe reads the trigger's channel (a dead peer fails here, within the network
              // timeout): a migration since the LISTEN may have moved it (version 5 writes it
              // from the migrating connector's spelling of the table), and nothing was heard.
              String announced = NotifyChannel.of(connection, table);
              if (!announced.equals(channel)) {
                moveTo(statement, announced);
              }
              if (!NotifyChannel.isListenedOn(connection, channel)) {
                // A session that LISTENed listens until it ends: another session answered, so a
                // pooler in transaction mode hands each statement to a session of its choosing,
                // and a notification reaches whichever one holds the LISTEN. Reconnecting would
                // only leave more of its sessions listening, their notifications unread.
                log.warn(
                    "Insert notifications cannot reach this task: the database session that"
                        + " answers its listener does not listen on channel {} (a connection"
                        + " pooler in transaction mode between them?); new rows are found by"
                        + " polling (poll.interval.ms): set notify.enabled=false, or connect the"
                        + " connector to the server directly (reason=NOTIFY_UNAVAILABLE)",
                    channel);
                return;
              }
              probes.incrementAndGet();
              lastProbe = System.nanoTime();
              if (!proven) {
                proven = true;
                backoffMs = RECONNECT_MIN.toMillis();
                if (unavailableReported) {
                  unavailableReported = false;
                  log.info("Listening for insert notifications again (channel {})", channel);
                }
              }
            }
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
        Thread.currentThread().interrupt(); // the thread ends here; kept for whoever reads it
        return;
      }
      backoffMs = Math.min(RECONNECT_MAX.toMillis(), backoffMs * 2);
    }
  }

  /** Whether the listener's thread still runs; for tests. */
  boolean isAlive() {
    return thread.isAlive();
  }

  /** Checks of the connection that succeeded; for tests. */
  long probes() {
    return probes.get();
  }

  /** Notifications read so far, ours or not; for tests. */
  long received() {
    return received.get();
  }

  /** Wakes poll() for new rows, unless no claim could take them now (see the constructor). */
  private void wakeIfRoomToClaim() {
    if (roomToClaim.getAsBoolean()) {
      wake.wake();
    }
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
      } catch (SQLException | RuntimeException ignored) {
        // Closing to interrupt a blocked read; nothing to report, and nothing that may fail the
        // stop that called it (its threads and pool would stay open for the worker's lifetime).
      }
    }
  }
}
