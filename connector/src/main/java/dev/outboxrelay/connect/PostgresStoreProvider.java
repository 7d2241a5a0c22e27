package dev.outboxrelay.connect;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.postgres.DataSourceFactory;
import dev.outboxrelay.store.postgres.MigrationInProgressException;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.store.postgres.SqlStates;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Supplier;
import org.flywaydb.core.api.FlywayException;

/** The production store: PostgreSQL through a HikariCP pool, judged by the database clock. */
final class PostgresStoreProvider implements StoreProvider {
  private HikariDataSource dataSource;

  @Override
  public OutboxStore open(OutboxSourceConfig config, String poolName) {
    dataSource = DataSourceFactory.create(config.connectionSettings(), poolName);
    return new PostgresOutboxStore(
        dataSource, config.table(), config.columnMapping(), clock(), dataSource);
  }

  @Override
  public void migrate(OutboxSourceConfig config) {
    try {
      // Not the task's pool: its statement timeout would cancel a long index build.
      new SchemaMigrator(
              DataSourceFactory.unpooled(
                  config.connectionSettings(),
                  DataSourceFactory.APPLICATION_NAME + "-migrate",
                  DataSourceFactory.MIGRATION_SESSION),
              config.table(),
              config.schemaMigrateLockTimeout())
          .migrate();
    } catch (MigrationInProgressException e) {
      throw new OutboxStoreException(
          OutboxStoreException.Kind.TRANSIENT, MIGRATION_IN_PROGRESS, null, MIGRATE);
    } catch (FlywayException e) {
      SQLException sql = findSql(e);
      throw sql != null
          ? SqlStates.classify(sql, MIGRATE)
          : new OutboxStoreException(
              OutboxStoreException.Kind.SCHEMA, "SCHEMA_MIGRATION_FAILED", null, MIGRATE);
    }
  }

  private static SQLException findSql(Throwable t) {
    for (int depth = 0; t != null && depth < 10; depth++, t = t.getCause()) {
      if (t instanceof SQLException sql) {
        return sql;
      }
    }
    return null;
  }

  @Override
  public Supplier<Connection> notificationConnections(OutboxSourceConfig config) {
    return () -> {
      try {
        return DataSourceFactory.connect(config.connectionSettings(), "outbox-relay-listener");
      } catch (SQLException e) {
        throw SqlStates.classify(e, "listen");
      }
    };
  }

  @Override
  public RelayClock clock() {
    return RelayClock.database();
  }
}
