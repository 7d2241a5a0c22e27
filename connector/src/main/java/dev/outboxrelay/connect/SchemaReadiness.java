package dev.outboxrelay.connect;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.retry.BackoffPolicy;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.SqlStates;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies the schema migrations before a task's first claim, when {@code schema.migrate.on.start}
 * is set, and checks that the schema is then the one this build relays (a task restarted with a new
 * plugin on a table left unmigrated fails at once, naming what to do, not after sending). A
 * migration that could not take a lock within its lock timeout (SQLState 55P03: a long transaction
 * holds the outbox table) is tried again after a growing delay, not on the next poll: each attempt
 * queues the application's inserts behind its wait for up to the lock timeout. A migration that
 * another session is running (another task, or the CLI) is waited for, checking again after a short
 * growing delay: not a failure, and it holds up nothing. Any other retriable failure (the database
 * is down) is tried again on the next poll.
 *
 * <p>Only a connector's first task migrates; the others wait for the schema as for any other
 * migrator's. Each task migrating in its turn, their backoffs did not add up to one: behind a long
 * transaction, the tasks took the lock one after the other, and the inserts queued behind one
 * task's wait after another, most of the time.
 */
final class SchemaReadiness {
  private static final Logger log = LoggerFactory.getLogger(SchemaReadiness.class);

  private final StoreProvider provider;
  private final OutboxSourceConfig config;

  /** This task migrates: {@code schema.migrate.on.start}, and the connector's first task. */
  private final boolean migrates;

  private final Time time;
  private final DoubleSupplier random;
  private final BackoffPolicy lockBackoff;
  private boolean ready;
  private int lockTimeouts;
  private int migrationsElsewhere;
  private long waitingSinceMs;

  /** On the monotonic clock ({@link Time#hiResClockMs()}), as all of this class's times. */
  private long nextAttemptMs;

  private int schemaWaits;
  private long schemaWaitingSinceMs;
  private long schemaWarnedMs;

  /** What the last schema wait said (its failure's message), to say a change at once. */
  private String schemaWarning;

  /**
   * @param firstTask the connector's first task: the one that migrates, with {@code
   *     schema.migrate.on.start}
   */
  SchemaReadiness(StoreProvider provider, OutboxSourceConfig config, boolean firstTask, Time time) {
    this(provider, config, firstTask, time, () -> ThreadLocalRandom.current().nextDouble());
  }

  SchemaReadiness(
      StoreProvider provider,
      OutboxSourceConfig config,
      boolean firstTask,
      Time time,
      DoubleSupplier random) {
    this.provider = provider;
    this.config = config;
    this.migrates = config.migrateOnStart() && firstTask;
    this.time = time;
    this.random = random;
    this.nextAttemptMs = time.hiResClockMs(); // at once (a monotonic clock may be negative)
    // At least twice the lock timeout (less up to a fifth of jitter), so that a task's attempts
    // hold the inserts well under half the time, and less with every attempt.
    Duration initial =
        max(Duration.ofSeconds(10), config.schemaMigrateLockTimeout().multipliedBy(2));
    this.lockBackoff = new BackoffPolicy(initial, max(Duration.ofMinutes(5), initial), 2.0, 0.2);
  }

  /**
   * Checks for the end of another session's migration: a migration usually takes a second or two,
   * an index build on a large table minutes.
   */
  static final BackoffPolicy ELSEWHERE_BACKOFF =
      new BackoffPolicy(Duration.ofSeconds(1), Duration.ofSeconds(30), 2.0, 0.2);

  /** How long a wait for another session's migration is logged at INFO before WARN. */
  static final long LONG_WAIT_MINUTES = 5;

  /**
   * True once the schema is ready; false while a migration that timed out on a lock waits for its
   * next attempt, or another session's migration of the table runs.
   *
   * @throws OutboxStoreException the failure of the migration tried now
   */
  boolean ensure() {
    if (ready) {
      return true;
    }
    if (time.hiResClockMs() < nextAttemptMs) {
      return false;
    }
    try {
      if (migrates) {
        provider.migrate(config);
      }
      provider.checkSchema(config);
    } catch (OutboxStoreException e) {
      if (StoreProvider.MIGRATION_IN_PROGRESS.equals(e.reasonCode())) {
        waitElsewhere();
        return false;
      }
      if (StoreProvider.SCHEMA_TOO_OLD.equals(e.reasonCode())
          || StoreProvider.SCHEMA_INCOMPLETE.equals(e.reasonCode())) {
        waitForSchema(e);
        return false;
      }
      migrationsElsewhere = 0;
      if (SqlStates.LOCK_NOT_AVAILABLE.equals(e.sqlState())) {
        lockTimeouts++;
        nextAttemptMs =
            time.hiResClockMs() + lockBackoff.delayAfter(lockTimeouts, random).toMillis();
      }
      throw e;
    }
    ready = true;
    return true;
  }

  /**
   * The table is older than this build relays, or (no schema history) lacks what the relay reads:
   * nothing is claimed (its first publish would fail after the records went out, or its claims read
   * the whole table) until someone migrates it or runs the statements named, checked again after a
   * short growing delay, so that the task goes on by itself then. Said at once, again as soon as
   * what is lacking changes (one gap fixed, the next found), and every {@value #LONG_WAIT_MINUTES}
   * minutes while it lasts; the backlog figures stay unread meanwhile (task 0 claims nothing),
   * which the shipped alerts report too. A task that leaves the migration to the first task says so
   * at INFO at first, and at WARN only if the wait lasts.
   */
  private void waitForSchema(OutboxStoreException e) {
    long now = time.hiResClockMs();
    if (schemaWaits++ == 0) {
      schemaWaitingSinceMs = now;
    }
    boolean changed = !e.getMessage().equals(schemaWarning); // the first wait's too: null before
    nextAttemptMs = now + ELSEWHERE_BACKOFF.delayAfter(schemaWaits, random).toMillis();
    if (changed || now - schemaWarnedMs >= LONG_WAIT_MINUTES * 60_000) {
      boolean firstTaskMigrates =
          config.migrateOnStart()
              && !migrates
              && StoreProvider.SCHEMA_TOO_OLD.equals(e.reasonCode());
      // Its versions may change as the first task applies them: a WARN only once it is long.
      boolean longWait = now - schemaWaitingSinceMs >= LONG_WAIT_MINUTES * 60_000;
      schemaWarnedMs = now;
      schemaWarning = e.getMessage();
      if (firstTaskMigrates && !longWait) {
        log.info(
            "Outbox table {} is not migrated for this build ({}); the connector's first task"
                + " migrates it (schema.migrate.on.start), this one claims nothing until it has;"
                + " checking again {} (reason=SCHEMA_MIGRATION_IN_PROGRESS)",
            config.table(),
            e.getMessage(),
            nextAttempt());
      } else if (firstTaskMigrates) {
        log.warn(
            "Outbox table {} is still not migrated for this build ({}); the connector's first"
                + " task migrates it (schema.migrate.on.start): see its status and log (on a worker"
                + " not yet upgraded it runs the previous plugin, which does not); checking again {}"
                + " (reason=SCHEMA_TOO_OLD)",
            config.table(),
            e.getMessage(),
            nextAttempt());
      } else if (StoreProvider.SCHEMA_INCOMPLETE.equals(e.reasonCode())) {
        log.warn(
            "Outbox table {} has no schema history (your own tool's, or adopted from Debezium),"
                + " and is not as the relay reads it ({}); claiming nothing until it is;"
                + " checking again {} (reason=SCHEMA_INCOMPLETE)",
            config.table(),
            e.getMessage(),
            nextAttempt());
      } else {
        log.warn(
            "Outbox table {} is not migrated for this build ({}); claiming nothing until it is:"
                + " outbox-relay-cli migrate, schema.migrate.on.start=true, or, kept by your own"
                + " tool, the statements of outbox-relay-cli schema-sql --after-version <its"
                + " version>; checking again {} (reason=SCHEMA_TOO_OLD)",
            config.table(),
            e.getMessage(),
            nextAttempt());
      }
    }
  }

  private void waitElsewhere() {
    long now = time.hiResClockMs();
    if (migrationsElsewhere++ == 0) {
      waitingSinceMs = now;
    }
    nextAttemptMs = now + ELSEWHERE_BACKOFF.delayAfter(migrationsElsewhere, random).toMillis();
    long waitedMinutes = (now - waitingSinceMs) / 60_000;
    if (waitedMinutes < LONG_WAIT_MINUTES) {
      log.info(
          "Schema migration of table {} is running in another session (a task or the CLI);"
              + " checking again {} (reason=SCHEMA_MIGRATION_IN_PROGRESS)",
          config.table(),
          nextAttempt());
    } else {
      // A migrator whose process died while its session lingers (a partition) holds the lock
      // until the server notices; an index build may also just be long. Either deserves a look.
      log.warn(
          "Schema migration of table {} has been running in another session for {} min;"
              + " checking again {}. Its session holds an advisory lock (pg_locks, locktype"
              + " advisory; application_name outbox-relay-migrate for a task's)"
              + " (reason=SCHEMA_MIGRATION_IN_PROGRESS)",
          config.table(),
          waitedMinutes,
          nextAttempt());
    }
  }

  /** When the next attempt runs, for the log: "in 12 s", or "on the next poll". */
  String nextAttempt() {
    long waitMs = nextAttemptMs - time.hiResClockMs();
    return waitMs > 0
        ? "in " + Math.max(1, Math.round(waitMs / 1000.0)) + " s"
        : "on the next poll";
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }
}
