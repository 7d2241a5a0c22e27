package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.cli.Database;
import dev.outboxrelay.cli.ExitCode;
import dev.outboxrelay.cli.LockTimeoutOption;
import dev.outboxrelay.cli.Text;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.DataSourceFactory;
import dev.outboxrelay.store.postgres.MigrationInProgressException;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.store.postgres.SchemaNotManagedException;
import dev.outboxrelay.store.postgres.ServerTooOldException;
import dev.outboxrelay.store.postgres.ServerVersion;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.MigrationVersion;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(
    name = "migrate",
    description = {
      "Creates or upgrades the outbox table with the relay's own migrations (SchemaMigrator), and"
          + " prints the schema version before and after. A no-op when already current.",
      "A table created by another migration tool (from schema-sql) is refused: keep it current"
          + " with schema-sql --after-version.",
      "Fails (exit 2, INVALID_INDEX) when the table or its published log is left with an index"
          + " PostgreSQL marks invalid: a concurrent pre-build that failed, which the migrations"
          + " go on past."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  outbox-relay-cli migrate --user app_owner --password",
      "  outbox-relay-cli migrate --table app.outbox --target 2",
      "  outbox-relay-cli migrate --lock-timeout 0"
    })
public final class MigrateCommand extends DatabaseCommand {
  @Option(
      names = "--target",
      paramLabel = "VERSION",
      description = "Stop at this version (staged roll-outs). Default: the latest.")
  String target;

  @Option(
      names = "--lock-timeout",
      paramLabel = "MS",
      description =
          "Longest a migration waits for a lock, in milliseconds, at most 3600000 (0: the"
              + " server's own lock_timeout, by default no limit). Inserts into the table queue"
              + " behind a migration waiting for its lock. Default: ${DEFAULT-VALUE}.")
  long lockTimeoutMs = SchemaMigrator.DEFAULT_LOCK_TIMEOUT.toMillis();

  private MigrationVersion targetVersion;
  private Duration lockTimeout;

  @Override
  void validate() {
    lockTimeout = LockTimeoutOption.checked(lockTimeoutMs);
    if (target == null) {
      return;
    }
    targetVersion = SchemaVersions.parse("--target", target);
  }

  /** A role's or database's idle or transaction timeout must not end a long migration half-way. */
  @Override
  String sessionSetup() {
    return DataSourceFactory.MIGRATION_SESSION;
  }

  @Override
  int run(Database database) {
    SchemaMigrator migrator =
        new SchemaMigrator(database.dataSource(), database.table(), lockTimeout);
    Optional<String> from = flyway(migrator::currentVersion);
    if (from.isEmpty() && database.operatorStore().tableExists()) {
      requireSupportedServer(database);
      throw CliException.database(
          "SCHEMA_NOT_MANAGED",
          "table "
              + database.table()
              + " exists without an outbox-relay schema history ("
              + database.table().historyTable()
              + "): another migration tool keeps it; use schema-sql --after-version instead");
    }
    if (from.isPresent()
        && MigrationVersion.fromVersion(from.get()).isNewerThan(SchemaMigrator.CURRENT_VERSION)) {
      throw CliException.database(
          "SCHEMA_TOO_NEW",
          "table "
              + database.table()
              + " has schema version "
              + from.get()
              + ", newer than this CLI knows ("
              + SchemaMigrator.CURRENT_VERSION
              + "): use a newer outbox-relay-cli");
    }
    if (from.isPresent()
        && targetVersion != null
        && MigrationVersion.fromVersion(from.get()).isNewerThan(targetVersion.getVersion())) {
      // A usage error never repeats a typed value: the table's version is the database's.
      throw CliException.usage("--target is older than the table's version " + from.get());
    }
    String before = from.orElse("none");
    int applied =
        flyway(
            () ->
                targetVersion == null
                    ? migrator.migrate()
                    : migrator.migrateTo(targetVersion.getVersion()),
            () -> versionAfterFailure(migrator, before));
    Optional<String> to = flyway(migrator::currentVersion);
    PrintWriter out = out();
    String after = to.orElse("none");
    if (applied == 0) {
      out.println("table " + database.table() + ": schema version " + after + ", nothing to apply");
    } else {
      out.println(
          "table "
              + database.table()
              + ": schema version "
              + before
              + " -> "
              + after
              + " ("
              + applied
              + " migration(s) applied)");
    }
    List<String> invalid;
    try {
      invalid = migrator.invalidIndexes();
    } catch (OutboxStoreException e) { // classified, without a cause: not Flyway's
      throw CliException.database("migrate applied its migrations, then its index check failed", e);
    }
    if (!invalid.isEmpty()) {
      // The migrations went on past them (IF NOT EXISTS meets the name): the relay would claim
      // without them, scanning the table. A failure, so that a deployment script stops here.
      throw CliException.database(
          "INVALID_INDEX",
          "table "
              + database.table()
              + " has invalid indexes "
              + invalid.stream().map(Text::safe).toList() // names from the catalog, escaped
              + " (a concurrent build that failed, or one still running): PostgreSQL never reads"
              + " them. Rebuild each with REINDEX INDEX CONCURRENTLY, or drop it (DROP INDEX"
              + " CONCURRENTLY) and build it again as schema-sql shows");
    }
    return ExitCode.OK;
  }

  /**
   * Where a failed run left the table: each migration is its own transaction, so those before the
   * failed one stay applied, and a deployment script must know the version it now has. Said as a
   * fact, not as this run's doing (another session may migrate too).
   */
  private static String versionAfterFailure(SchemaMigrator migrator, String before) {
    String now;
    try {
      now = migrator.currentVersion().orElse("none");
    } catch (RuntimeException e) {
      return "the table's schema version could not be read after the failure (status shows it)";
    }
    return now.equals(before)
        ? "the table's schema version is still " + now
        : "the table's schema version is now "
            + now
            + " (it was "
            + before
            + " when migrate began)";
  }

  /**
   * Runs a Flyway call. Its exceptions quote SQL, server messages or the connection, so only the
   * SQLState or Flyway's error code is reported.
   */
  private static <T> T flyway(Supplier<T> call) {
    return flyway(call, null);
  }

  /**
   * As {@link #flyway(Supplier)}; a failure once the migration lock was taken (not another
   * session's migration) also says {@code afterFailure}, unless null.
   */
  private static <T> T flyway(Supplier<T> call, Supplier<String> afterFailure) {
    try {
      return call.get();
    } catch (MigrationInProgressException e) {
      throw inProgress(e); // nothing done: said so
    } catch (RuntimeException e) {
      RuntimeException failure = failureOf(e);
      throw afterFailure == null || !(failure instanceof CliException cli)
          ? failure
          : cli.withDetail(afterFailure.get());
    }
  }

  private static CliException inProgress(MigrationInProgressException e) {
    return CliException.database(
        "SCHEMA_MIGRATION_IN_PROGRESS",
        "another session is migrating table "
            + e.table()
            + " (a task with schema.migrate.on.start, or another migrate); nothing was changed:"
            + " run the command again when it has finished");
  }

  /**
   * Before a table another tool keeps is refused: on a server older than 13 that is what to say
   * (said the other way round, the advice to print the table's SQL led to a schema the relay
   * refuses). A migration to apply there is refused by the migrator; a table already current is
   * left as it is.
   */
  private static void requireSupportedServer(Database database) {
    try (Connection c = database.dataSource().getConnection()) {
      ServerVersion.require(c);
    } catch (ServerTooOldException e) {
      throw CliException.database(ServerTooOldException.REASON_CODE, e.getMessage());
    } catch (SQLException e) {
      throw Database.classify(e, "migrate");
    }
  }

  /**
   * A Flyway call's failure in the CLI's words. Flyway's exceptions quote SQL, server messages or
   * the connection, so only the SQLState or Flyway's error code is reported. A failure neither
   * Flyway's nor the database's (a migration missing from the jar, a bug) is returned as it is: the
   * CLI reports it as internal (exit 4), not as the database's failure (exit 2) that a script would
   * retry.
   */
  static RuntimeException failureOf(RuntimeException failure) {
    if (failure instanceof ServerTooOldException e) {
      return CliException.database(ServerTooOldException.REASON_CODE, e.getMessage());
    }
    if (failure instanceof SchemaNotManagedException e) {
      // Created by another tool between the check above and the migration lock.
      return CliException.database(
          "SCHEMA_NOT_MANAGED",
          e.getMessage() + ": another migration tool keeps it; use schema-sql --after-version");
    }
    if (failure instanceof FlywayException e && !hasSqlException(e)) {
      String code = e.getErrorCode() instanceof Enum<?> en ? en.name() : "ERROR";
      return CliException.database(
          "SCHEMA_MIGRATION_FAILED",
          "Flyway refused the migration ("
              + code
              + "); its message is not shown because it may quote the connection");
    }
    if (failure instanceof OutboxStoreException store) {
      return CliException.database("migrate failed", store); // classified already
    }
    if (!(failure instanceof FlywayException) && !hasSqlException(failure)) {
      return failure;
    }
    RuntimeException classified = Database.classify(failure, "migrate");
    return classified instanceof OutboxStoreException store
        ? CliException.database("migrate failed", store) // as the CLI reports any command's
        : (CliException) classified;
  }

  private static boolean hasSqlException(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException) {
        return true;
      }
    }
    return false;
  }
}
