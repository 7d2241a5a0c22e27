package dev.outboxrelay.store.postgres;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.MigrationInfo;
import org.flywaydb.core.api.MigrationVersion;

/**
 * Applies the versioned migrations shipped in the plugin jar ({@code db/outbox}) with Flyway. Each
 * outbox table has its own history table, so several outbox tables can live in one schema.
 */
public final class SchemaMigrator {
  /** The schema version this build of the relay reads and writes. */
  public static final String CURRENT_VERSION = "15";

  /** Where the migrations live on the class path, as {@code V<version>__<description>.sql}. */
  public static final String MIGRATIONS_PATH = "db/outbox";

  private static final String LOCATION = "classpath:" + MIGRATIONS_PATH;

  /**
   * How long a migration statement waits for a lock by default. A statement waiting for the outbox
   * table's lock holds up every insert queued behind it; failing is better, and changes nothing.
   */
  public static final Duration DEFAULT_LOCK_TIMEOUT = Duration.ofSeconds(5);

  private final DataSource dataSource;
  private final OutboxTable table;
  private final Duration lockTimeout;

  public SchemaMigrator(DataSource dataSource, OutboxTable table) {
    this(dataSource, table, DEFAULT_LOCK_TIMEOUT);
  }

  /**
   * @param lockTimeout PostgreSQL's {@code lock_timeout} for the migrations: the longest one wait
   *     for a lock may last (on a timeout, SQLState 55P03, that migration is rolled back; those
   *     before it stay applied); zero leaves the server's own setting (by default, no limit)
   */
  public SchemaMigrator(DataSource dataSource, OutboxTable table, Duration lockTimeout) {
    if (lockTimeout.isNegative()) {
      throw new IllegalArgumentException("lock timeout must not be negative");
    }
    this.dataSource = dataSource;
    this.table = table;
    this.lockTimeout = lockTimeout;
  }

  /**
   * Migrates to the latest version; a no-op when already there, which takes no lock. Returns
   * migrations applied. Uses three connections of the data source at once.
   *
   * @throws MigrationInProgressException another session is migrating this table and this one has
   *     something to apply; nothing changed
   * @throws SchemaNotManagedException the table exists without a schema history; nothing changed
   * @throws ServerTooOldException the server is older than the relay supports; nothing changed
   */
  public int migrate() {
    return exclusively(null);
  }

  /** The version of the baseline Flyway records in a schema that already holds other tables. */
  private static final String BASELINE = "0";

  /**
   * Migrates up to and including {@code version}; for upgrade tests and staged roll-outs. A no-op,
   * without the lock, when already there.
   *
   * @throws MigrationInProgressException another session is migrating this table and this one has
   *     something to apply; nothing changed
   * @throws SchemaNotManagedException the table exists without a schema history; nothing changed
   * @throws ServerTooOldException the server is older than the relay supports; nothing changed
   */
  public int migrateTo(String version) {
    return exclusively(version);
  }

  private int exclusively(String target) {
    if (nothingToApply(flyway(target))) {
      return 0;
    }
    // Only with something to apply: a table already current on an older server (12 with pgcrypto
    // can hold one) is left as it is; nothing is created or changed on one.
    requireSupportedServer();
    // Three connections for the duration: the lock's and Flyway's two (its transactional lock, the
    // default, keeps the history table's work apart from the migrations').
    try (MigrationLock lock = MigrationLock.take(dataSource, table)) {
      // Under the lock, so that no migration of ours runs meanwhile: a table ours created has
      // its history beside it; one without is another tool's, and Flyway would record a baseline
      // at 0 for it and then fail on the existing table at every attempt.
      if (currentVersion().isEmpty() && tableExists()) {
        throw new SchemaNotManagedException(table);
      }
      return flyway(target).migrate().migrationsExecuted;
    } catch (SQLException e) {
      throw new FlywayException("could not take the migration lock", e);
    }
  }

  private void requireSupportedServer() {
    try (Connection c = dataSource.getConnection()) {
      ServerVersion.require(c);
    } catch (SQLException e) {
      throw new FlywayException("could not read the server's version", e);
    }
  }

  /**
   * Whether the table is at (or past) the target with every applied migration as shipped. Then the
   * lock is not taken: when every task of a connector migrated at its start (task 0 alone does now,
   * beside the CLI and other connectors on the table), tasks starting together found one another's
   * no-op migration holding it and waited a second or more each before their first claim. Read
   * without the lock: a migration running elsewhere leaves versions pending, and anything but
   * "nothing to do" (an edited migration too) takes the locked path, which applies or reports it as
   * before.
   */
  private static boolean nothingToApply(Flyway flyway) {
    // One read of the history: validation fails on a pending migration (one not applied yet, the
    // table's creation included) as on an edited or failed one.
    return flyway.validateWithResult().validationSuccessful;
  }

  private boolean tableExists() throws SQLException {
    return relationExists(dataSource, table.qualified());
  }

  /**
   * Whether {@code qualified} (quoted as {@link OutboxTable} quotes names) names a table or index.
   * to_regclass takes the name as a bind parameter: nothing user-supplied in SQL.
   */
  public static boolean relationExists(DataSource source, String qualified) throws SQLException {
    try (Connection c = source.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
      ps.setString(1, qualified);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  /** The applied schema version, or empty when the table was never migrated by outbox-relay. */
  public Optional<String> currentVersion() {
    MigrationInfo current = flyway(null).info().current();
    return current == null || current.getVersion() == null
        ? Optional.empty()
        : Optional.of(current.getVersion().getVersion());
  }

  /** True when the applied version is exactly the one this build expects. */
  public boolean isCurrent() {
    return currentVersion().map(CURRENT_VERSION::equals).orElse(false);
  }

  /**
   * The values of the migrations' {@code ${...}} placeholders for {@code table}; also used to print
   * the migrations as plain SQL for teams that run their own migration tool. Every derived name
   * comes from {@link OutboxTable}, fitted to PostgreSQL's identifier limit. The migrations spell
   * most object names as {@code "${tableName}_<suffix>"} in their text, which Flyway checksums, so
   * those stay cut by PostgreSQL, the way {@link OutboxTable#objectName} cuts them.
   */
  public static Map<String, String> placeholders(OutboxTable table) {
    return Map.ofEntries(
        Map.entry("qualifiedTable", table.qualified()),
        Map.entry("qualifiedFunction", table.qualifiedFunction()),
        Map.entry("qualifiedNotifyFunction", table.qualifiedNotifyFunction()),
        Map.entry("notifyChannel", table.notifyChannel()),
        Map.entry("qualifiedV1ActiveIndex", table.qualifiedIndex("active_idx")),
        Map.entry("qualifiedIndexActiveSeq", table.qualifiedIndex("active_seq_idx")),
        Map.entry("qualifiedIndexActiveAggregate", table.qualifiedIndex("active_aggregate_idx")),
        Map.entry("qualifiedIndexPublished", table.qualifiedIndex("published_idx")),
        Map.entry("qualifiedIndexParked", table.qualifiedIndex("parked_idx")),
        Map.entry("qualifiedIndexParkedRows", table.qualifiedIndex("parked_rows_idx")),
        Map.entry("qualifiedIndexParkedCorrelation", table.qualifiedIndex("parked_cid_idx")),
        Map.entry("qualifiedIndexParkedCorrelationSeq", table.qualifiedIndex("parked_cid_seq_idx")),
        Map.entry("qualifiedIndexDueSeq", table.qualifiedIndex("due_seq_idx")),
        Map.entry("qualifiedIndexDueKeySeq", table.qualifiedIndex("due_key_seq_idx")),
        Map.entry("qualifiedIndexParkedKeySeq", table.qualifiedIndex("parked_key_seq_idx")),
        Map.entry("qualifiedPublishedTable", table.qualifiedPublishedLog()),
        Map.entry("qualifiedIndexPublishedId", table.qualifiedIndex("published_id_idx")),
        Map.entry("qualifiedIndexPublishedIdHash", table.qualifiedIndex("published_id_hash")),
        Map.entry("tableName", table.name()));
  }

  /**
   * The statements of one shipped migration whose statements are all plain (no function bodies),
   * placeholders filled for {@code table}, comments left out: for scripts that bring a table
   * outbox-relay did not create up to a version ({@link DebeziumAdoption}).
   */
  static List<String> plainStatements(String migration, OutboxTable table) {
    String path = LOCATION.substring("classpath:".length()) + "/" + migration;
    String sql;
    try (InputStream in = SchemaMigrator.class.getClassLoader().getResourceAsStream(path)) {
      if (in == null) {
        throw new IllegalStateException("no migration " + path);
      }
      sql = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    for (Map.Entry<String, String> placeholder : placeholders(table).entrySet()) {
      sql = sql.replace("${" + placeholder.getKey() + "}", placeholder.getValue());
    }
    String code =
        sql.lines().filter(line -> !line.startsWith("--")).collect(Collectors.joining("\n"));
    return Arrays.stream(code.split(";"))
        .map(String::strip)
        .filter(statement -> !statement.isEmpty())
        .toList();
  }

  /**
   * The indexes of the table and its published log that PostgreSQL marks INVALID, sorted: left by a
   * concurrent build that failed or was cancelled (a pre-build the migrations' notes advise on a
   * large table), or one still running. PostgreSQL never reads one, and a migration whose {@code
   * CREATE INDEX IF NOT EXISTS} met it under its name went on without it: a missing due index makes
   * every claim scan the table until the statement timeout cancels it.
   */
  public List<String> invalidIndexes() {
    try (Connection c = dataSource.getConnection()) {
      return invalidIndexes(c, table);
    } catch (SQLException e) {
      throw SqlStates.classify(e, "inspect indexes");
    }
  }

  /** As {@link #invalidIndexes()}, on {@code c}. */
  public static List<String> invalidIndexes(Connection c, OutboxTable table) throws SQLException {
    List<String> invalid = new ArrayList<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT i.indexrelid::regclass::text FROM pg_index i"
                + " WHERE i.indrelid IN (to_regclass(?), to_regclass(?))"
                + " AND NOT i.indisvalid ORDER BY 1")) {
      ps.setString(1, table.qualified());
      ps.setString(2, table.qualifiedPublishedLog());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          invalid.add(rs.getString(1));
        }
      }
    }
    return invalid;
  }

  private Flyway flyway(String target) {
    var config =
        Flyway.configure(SchemaMigrator.class.getClassLoader())
            .dataSource(dataSource)
            .locations(LOCATION)
            .table(table.historyTable())
            .placeholders(placeholders(table))
            // The history table lives beside the outbox table; never create or clean schemas.
            .createSchemas(false)
            .cleanDisabled(true)
            // The outbox usually shares a schema with the application's tables: start this
            // table's own history at version 0 rather than refusing a non-empty schema.
            .baselineOnMigrate(true)
            .baselineVersion(BASELINE)
            .loggers("slf4j");
    // Only the migrations' statements run under these: Flyway's own lock is an advisory try-lock.
    config.callbacks(new MigrationSettingsCallback(lockTimeout, table.schema()));
    if (table.schema() != null) {
      config.schemas(table.schema()).defaultSchema(table.schema());
    }
    if (target != null) {
      config.target(MigrationVersion.fromVersion(target));
    }
    return config.load();
  }
}
