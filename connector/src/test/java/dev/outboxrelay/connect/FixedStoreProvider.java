package dev.outboxrelay.connect;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.RelayClock;
import java.sql.Connection;
import java.util.function.Supplier;

/** For task tests: one store for every task, no migrations, no notifications, a given clock. */
final class FixedStoreProvider implements StoreProvider {
  private final OutboxStore store;
  private final Supplier<RelayClock> clock;

  FixedStoreProvider(OutboxStore store, Supplier<RelayClock> clock) {
    this.store = store;
    this.clock = clock;
  }

  @Override
  public OutboxStore open(OutboxSourceConfig config, String poolName) {
    return store;
  }

  @Override
  public void migrate(OutboxSourceConfig config) {}

  @Override
  public Supplier<Connection> notificationConnections(OutboxSourceConfig config) {
    return null;
  }

  @Override
  public RelayClock clock() {
    return clock.get();
  }
}
