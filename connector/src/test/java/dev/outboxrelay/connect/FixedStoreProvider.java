package dev.outboxrelay.connect;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.RelayClock;
import java.sql.Connection;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * For task tests: one store for every task, migrations that change nothing (and fail on demand), no
 * notifications, a given clock.
 */
final class FixedStoreProvider implements StoreProvider {
  private final OutboxStore store;
  private final Supplier<RelayClock> clock;

  /** Migrations run (with {@code schema.migrate.on.start}); none change anything. */
  final AtomicInteger migrations = new AtomicInteger();

  /** Thrown by each migration while set. */
  volatile OutboxStoreException migrationFailure;

  /** Schema checks run (before the first claim, whether or not the task migrates). */
  final AtomicInteger schemaChecks = new AtomicInteger();

  /** Thrown by each schema check while set. */
  volatile OutboxStoreException schemaFailure;

  /** Thrown by each open while set (a task's start then fails). */
  volatile Throwable openFailure;

  FixedStoreProvider(OutboxStore store, Supplier<RelayClock> clock) {
    this.store = store;
    this.clock = clock;
  }

  @Override
  public OutboxStore open(OutboxSourceConfig config, String poolName) {
    Throwable failure = openFailure;
    if (failure instanceof Error error) {
      throw error;
    }
    if (failure != null) {
      throw (RuntimeException) failure;
    }
    return store;
  }

  @Override
  public void migrate(OutboxSourceConfig config) {
    migrations.incrementAndGet();
    OutboxStoreException failure = migrationFailure;
    if (failure != null) {
      throw failure;
    }
  }

  @Override
  public void checkSchema(OutboxSourceConfig config) {
    schemaChecks.incrementAndGet();
    OutboxStoreException failure = schemaFailure;
    if (failure != null) {
      throw failure;
    }
  }

  @Override
  public Supplier<Connection> notificationConnections(OutboxSourceConfig config) {
    return null;
  }

  @Override
  public RelayClock clock() {
    return clock.get();
  }
}
