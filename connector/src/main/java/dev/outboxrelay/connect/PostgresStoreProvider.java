package dev.outboxrelay.connect;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.DataSourceFactory;
import dev.outboxrelay.store.postgres.MigrationInProgressException;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import dev.outboxrelay.store.postgres.RelayIndexes;
import dev.outboxrelay.store.postgres.RelayPrivileges;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.store.postgres.SchemaNotManagedException;
import dev.outboxrelay.store.postgres.ServerTooOldException;
import dev.outboxrelay.store.postgres.ServerVersion;
import dev.outboxrelay.store.postgres.SqlStates;
import dev.outboxrelay.writer.Printable;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.MigrationVersion;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The production store: PostgreSQL through a HikariCP pool, judged by the database clock. */
final class PostgresStoreProvider implements StoreProvider {
  private static final Logger log = LoggerFactory.getLogger(PostgresStoreProvider.class);

  private HikariDataSource dataSource;

  @Override
  public OutboxStore open(OutboxSourceConfig config, String poolName) {
    // Read before the pool opens its connections: a store that cannot be built then leaves none
    // open (the task has no store to close, and each restart would add a pool).
    OutboxTable table = config.table();
    ColumnMapping columns = config.columnMapping();
    dataSource = DataSourceFactory.create(config.connectionSettings(), poolName);
    try {
      return new PostgresOutboxStore(
          dataSource, table, columns, clock(), dataSource, config.keepsPublishedLog());
    } catch (RuntimeException | Error e) {
      dataSource.close();
      dataSource = null;
      throw e;
    }
  }

  @Override
  public void migrate(OutboxSourceConfig config) {
    try {
      // Not the task's pool: its statement timeout would cancel a long index build.
      SchemaMigrator migrator =
          new SchemaMigrator(
              DataSourceFactory.unpooled(
                  config.connectionSettings(),
                  DataSourceFactory.APPLICATION_NAME + "-migrate",
                  DataSourceFactory.MIGRATION_SESSION),
              config.table(),
              config.schemaMigrateLockTimeout());
      migrator.migrate();
      reportInvalidIndexes(migrator, config);
    } catch (MigrationInProgressException e) {
      throw new OutboxStoreException(
          OutboxStoreException.Kind.TRANSIENT, MIGRATION_IN_PROGRESS, null, MIGRATE);
    } catch (SchemaNotManagedException e) {
      // Validation refuses this; a table created after it (the application's own tool), or a
      // restore without the history, reaches here.
      throw new OutboxStoreException(
          OutboxStoreException.Kind.SCHEMA, SCHEMA_NOT_MANAGED, null, MIGRATE);
    } catch (ServerTooOldException e) {
      // Not retried: the server's version does not change while a task waits.
      throw new OutboxStoreException(
          OutboxStoreException.Kind.SCHEMA,
          ServerTooOldException.REASON_CODE,
          null,
          MIGRATE,
          e.getMessage());
    } catch (FlywayException e) {
      throw failure(e, MIGRATE);
    }
  }

  @Override
  public void checkSchema(OutboxSourceConfig config) {
    // The task's pool (its statement timeout) once open; a migration's connections otherwise.
    DataSource source =
        dataSource != null
            ? dataSource
            : DataSourceFactory.unpooled(
                config.connectionSettings(), DataSourceFactory.APPLICATION_NAME);
    checkVersion(config, source);
    requirePrivileges(config, source);
    warnIfServerTooOld(source);
  }

  /**
   * A table already current on a server older than 13 (12 with pgcrypto's gen_random_uuid() can
   * hold one) is relayed, with a warning: failing such a task at the first start after an upgrade
   * would stop a deployment that ran. Validation refuses the server, and nothing is created or
   * migrated on it (SchemaMigrator).
   */
  private static void warnIfServerTooOld(DataSource source) {
    Optional<String> refusal;
    try (Connection c = source.getConnection()) {
      refusal = ServerVersion.refusal(c);
    } catch (SQLException e) {
      throw SqlStates.classify(e, CHECK_SCHEMA);
    }
    refusal.ifPresent(
        tooOld ->
            log.warn(
                "Server not supported: {} (reason={}; the table is current, so the task goes on,"
                    + " untested)",
                tooOld,
                ServerTooOldException.REASON_CODE));
  }

  /**
   * The role may do what a task does, as validation checked: a grant revoked since (a worker
   * restarted after it) failed the first publish after Kafka had the batch, and every restart sent
   * it again. Checked before the first claim, it fails the task having sent nothing.
   */
  private static void requirePrivileges(OutboxSourceConfig config, DataSource source) {
    RelayPrivileges.Lacking lacking;
    try (Connection c = source.getConnection()) {
      lacking =
          RelayPrivileges.lacking(
              c, config.table(), config.keepsPublishedLog(), config.retention().isPresent());
    } catch (SQLException e) {
      throw SqlStates.classify(e, CHECK_PRIVILEGES);
    }
    if (!lacking.none()) {
      throw new OutboxStoreException(
          OutboxStoreException.Kind.PERMISSION,
          "DB_PERMISSION_DENIED",
          null,
          CHECK_PRIVILEGES,
          "lacks " + String.join("; ", lacking.named("the outbox table", "its published log")));
    }
  }

  private static void checkVersion(OutboxSourceConfig config, DataSource source) {
    OutboxTable table = config.table();
    Optional<String> version;
    SchemaMigrator migrator;
    try {
      migrator = new SchemaMigrator(source, table, config.schemaMigrateLockTimeout());
      version = migrator.currentVersion();
    } catch (FlywayException e) {
      throw failure(e, CHECK_SCHEMA);
    }
    if (version.isPresent()) {
      int comparison =
          MigrationVersion.fromVersion(version.get())
              .compareTo(MigrationVersion.fromVersion(SchemaMigrator.CURRENT_VERSION));
      if (comparison < 0) {
        throw new OutboxStoreException(
            OutboxStoreException.Kind.SCHEMA,
            SCHEMA_TOO_OLD,
            null,
            CHECK_SCHEMA,
            "schema version " + version.get() + ", this build's " + SchemaMigrator.CURRENT_VERSION);
      }
      if (comparison > 0) {
        log.warn(
            "Outbox table {} has schema version {}, newer than this build's {}: relaying on, as"
                + " each release's migrations keep the previous release working (a worker not yet"
                + " upgraded in a rolling upgrade); upgrade the plugin on this worker"
                + " (reason=SCHEMA_NEWER_THAN_PLUGIN)",
            table,
            version.get(),
            SchemaMigrator.CURRENT_VERSION);
      }
      if (!config.migrateOnStart()) {
        // Not migrated here, which says so: an index a pre-build left invalid is named at start
        // all the same (validation names it too, but only when the connector is created or
        // changed, not when a worker restarts).
        reportInvalidIndexes(migrator, config);
      }
    } else if (config.migrateOnStart() && exists(source, table.qualified())) {
      // As the first task's migration refuses it: the tasks that wait for that migration fail as
      // it does, rather than relay a table another tool keeps beside a failed task 0.
      throw new OutboxStoreException(
          OutboxStoreException.Kind.SCHEMA, SCHEMA_NOT_MANAGED, null, CHECK_SCHEMA);
    } else if (config.migrateOnStart()) {
      // Not created yet: the first task creates it (a task that migrates checks after migrating).
      // Passed, the check let a waiting task claim from a table that did not exist, and fail.
      throw new OutboxStoreException(
          OutboxStoreException.Kind.SCHEMA,
          SCHEMA_TOO_OLD,
          null,
          CHECK_SCHEMA,
          "no table yet, this build's " + SchemaMigrator.CURRENT_VERSION);
    } else if (exists(source, table.qualified())) {
      String lacking = lackingFromOwnToolsTable(config, source);
      if (lacking != null) {
        throw new OutboxStoreException(
            OutboxStoreException.Kind.SCHEMA, SCHEMA_INCOMPLETE, null, CHECK_SCHEMA, lacking);
      }
    }
  }

  /**
   * A table kept by the user's own tool (or adopted from Debezium) has no history to vouch for what
   * the relay's statements read, so each task checks, as validation does, what a plugin upgrade or
   * a dropped index may have changed since: the published log, which the first publish writes and
   * task 0's backlog count reads with any retention; no index of schema version 7 that fails the
   * park of a row with a long correlation id; every index the statements read (retention's only
   * where it runs), without which a claim reads the whole table until the statement timeout.
   * Indexes are found among the table's own, not by name on the search path. The relay's columns,
   * the log's, or the table itself, are the claim's and the publish's to find missing (the claim
   * fails before sending).
   *
   * @return what the table lacks, or null
   */
  private static String lackingFromOwnToolsTable(OutboxSourceConfig config, DataSource source) {
    OutboxTable table = config.table();
    if (!exists(source, table.qualifiedPublishedLog())) {
      return "no published log "
          + table.objectName("published")
          + " (schema version 9, needed whatever the retention: the backlog count reads it):"
          + " apply the statements of `outbox-relay-cli schema-sql --after-version 8`";
    }
    List<String> missing;
    List<String> invalid;
    boolean parkedRowsIndex;
    try (Connection c = source.getConnection()) {
      parkedRowsIndex = RelayIndexes.onTable(c, table, "parked_rows_idx");
      missing =
          RelayIndexes.missing(
              c, table, config.columnMapping()::column, config.retention().isPresent());
      invalid = missing.isEmpty() ? List.of() : SchemaMigrator.invalidIndexes(c, table);
    } catch (SQLException e) {
      throw SqlStates.classify(e, CHECK_SCHEMA);
    }
    if (parkedRowsIndex) {
      return "still has the index of parked rows of schema version 7 ("
          + table.objectName("parked_rows_idx")
          + "), which cannot hold a long correlation id: apply the statements of"
          + " `outbox-relay-cli schema-sql --after-version 11`";
    }
    if (missing.isEmpty()) {
      return null;
    }
    // An invalid index under a needed name (a failed concurrent build) counts as missing, and
    // CREATE INDEX IF NOT EXISTS would skip it: it must be rebuilt, or dropped first.
    return "lacks indexes the relay reads: "
        + String.join(", ", missing)
        + "; build them as `outbox-relay-cli schema-sql` shows (a table adopted from Debezium:"
        + " as `outbox-relay-cli adopt-debezium-table` prints them), with CREATE INDEX"
        + " CONCURRENTLY on a table in use"
        + (invalid.isEmpty()
            ? ""
            : "; invalid, which those statements skip: "
                + invalid.stream().map(Printable::escape).toList()
                + ", rebuild each with REINDEX INDEX CONCURRENTLY, or drop it with DROP INDEX"
                + " CONCURRENTLY first");
  }

  private static boolean exists(DataSource source, String qualified) {
    try {
      return SchemaMigrator.relationExists(source, qualified);
    } catch (SQLException e) {
      throw SqlStates.classify(e, CHECK_SCHEMA);
    }
  }

  /** A Flyway failure, classified by its SQL cause where it has one; never Flyway's message. */
  private static OutboxStoreException failure(FlywayException e, String operation) {
    SQLException sql = findSql(e);
    return sql != null
        ? SqlStates.classify(sql, operation)
        : new OutboxStoreException(
            OutboxStoreException.Kind.SCHEMA,
            SCHEMA_MIGRATION_FAILED,
            null,
            operation,
            "Flyway " + (e.getErrorCode() instanceof Enum<?> code ? code.name() : "ERROR"));
  }

  /**
   * A migration goes on past an index left INVALID under its name (a failed concurrent pre-build),
   * and the relay then works without it, slowly or not at all: said at once, naming the index. Not
   * a failure: one still being built shows the same way.
   */
  private static void reportInvalidIndexes(SchemaMigrator migrator, OutboxSourceConfig config) {
    List<String> invalid;
    try {
      invalid = migrator.invalidIndexes();
    } catch (OutboxStoreException e) {
      return; // the claims report a database that fails; this check is only advice
    }
    if (!invalid.isEmpty()) {
      log.warn(
          "Outbox table {} has invalid indexes {} (reason=INVALID_INDEX; a concurrent build that"
              + " failed, or one still running): PostgreSQL never reads them, so claims may scan"
              + " the table. Rebuild each with REINDEX INDEX CONCURRENTLY, or drop it (DROP INDEX"
              + " CONCURRENTLY) and build it again as `outbox-relay-cli schema-sql` shows",
          config.table(),
          invalid.stream().map(Printable::escape).toList()); // names may hold anything quoted
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
