package dev.outboxrelay.config;

import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_ADDITIONAL_PLACEMENT_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_AGGREGATE_ID_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_AGGREGATE_TYPE_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_EVENT_TIMESTAMP_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_EVENT_TYPE_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_MESSAGE_ID_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_PAYLOAD_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.CONNECTION_PASSWORD_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.CONNECTION_POOL_SIZE_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.CONNECTION_TIMEOUT_MS_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.CONNECTION_URL_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.CONNECTION_USER_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.DELIVERY_GUARANTEE_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.NOTIFY_ENABLED_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.OUTBOX_TABLE_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.RETENTION_PUBLISHED_MS_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.SCHEMA_MIGRATE_ON_START_CONFIG;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.DataSourceFactory;
import dev.outboxrelay.store.postgres.EpochTable;
import dev.outboxrelay.store.postgres.OutboxColumns;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.RelayIndexes;
import dev.outboxrelay.store.postgres.RelayPrivileges;
import dev.outboxrelay.store.postgres.ReplicaIdentity;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.store.postgres.ServerVersion;
import dev.outboxrelay.store.postgres.SqlStates;
import dev.outboxrelay.writer.Printable;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.common.config.types.Password;
import org.flywaydb.core.api.MigrationVersion;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@code Connector.validate()} returns: single-key validation (ConfigDef), the rules spanning
 * keys ({@link ConfigChecks}), then live checks against the database when the connection keys are
 * valid: can we log in, and is the outbox table there, with the relay's columns, in the version
 * this build needs.
 *
 * <p>Each error is attached to the key the user has to change. Errors name keys and SQLStates only;
 * the URL, the password and the driver's messages never appear in them.
 */
public final class ConfigValidation {
  private static final Logger log = LoggerFactory.getLogger(ConfigValidation.class);

  /** too_many_connections: the server's, the role's or the database's limit reached. */
  private static final String TOO_MANY_CONNECTIONS = "53300";

  /** Live checks answer within this, whatever {@code connection.timeout.ms} says. */
  static final Duration MAX_CHECK_TIMEOUT = Duration.ofSeconds(10);

  /** What to do about a table that does not exist: the connector, the CLI or one's own tool. */
  static String createTable(Object table) {
    return "set "
        + SCHEMA_MIGRATE_ON_START_CONFIG
        + "=true, run `outbox-relay-cli migrate --table "
        + table
        + "`, or apply what `outbox-relay-cli schema-sql --table "
        + table
        + "` prints with your own migration tool";
  }

  /**
   * What to do about a table whose outbox-relay schema history is older than this connector: the
   * migrations upgrade it (docs/schema.sql creates a table, it upgrades none).
   */
  static String upgradeTable(OutboxTable table) {
    return "set "
        + SCHEMA_MIGRATE_ON_START_CONFIG
        + "=true, or run `outbox-relay-cli migrate --table "
        + table
        + "`";
  }

  /**
   * The columns schema version 1 created: every column of the outbox table ({@link
   * OutboxColumns.Row}) but the {@link #MIGRATED_COLUMNS}. The store reads or writes each of them;
   * {@code ConfigValidationTest} compares these lists with a freshly migrated table.
   */
  static final List<String> REQUIRED_COLUMNS = columns(true);

  /**
   * Columns later migrations add. Not required of a table: an older table is brought up to date by
   * the migrations (schema.migrate.on.start), and one that is not is reported as outdated.
   */
  static final List<String> MIGRATED_COLUMNS = columns(false);

  /**
   * The columns of the published log (schema version 9) that publishing writes; {@code
   * ConfigValidationTest} compares them with a freshly migrated log.
   */
  static final List<String> PUBLISHED_LOG_COLUMNS =
      List.of(
          "seq",
          "message_id",
          "instance_key",
          "aggregate_type",
          "aggregate_id",
          "event_type",
          "correlation_id",
          "created_at",
          "attempts",
          "abandoned_claims",
          "lease_token",
          "last_failure_code",
          "published_at",
          "kafka_topic",
          "kafka_partition",
          "kafka_offset");

  private static List<String> columns(boolean firstVersion) {
    return Arrays.stream(OutboxColumns.Row.values())
        .filter(c -> (c.since == 1) == firstVersion)
        .map(c -> c.label)
        .toList();
  }

  /** The settings that name the column of a message field, by the relay's name of the field. */
  static final Map<String, String> MAPPING_KEYS =
      Map.of(
          ColumnMapping.RELAY.messageId(), COLUMN_MESSAGE_ID_CONFIG,
          ColumnMapping.RELAY.aggregateType(), COLUMN_AGGREGATE_TYPE_CONFIG,
          ColumnMapping.RELAY.aggregateId(), COLUMN_AGGREGATE_ID_CONFIG,
          ColumnMapping.RELAY.eventType(), COLUMN_EVENT_TYPE_CONFIG,
          ColumnMapping.RELAY.payload(), COLUMN_PAYLOAD_CONFIG);

  /** The types a column holding the event's time may have, as {@code format_type} names them. */
  static final Set<String> EVENT_TIMESTAMP_TYPES =
      Set.of("timestamp with time zone", "timestamp without time zone");

  /** What Connect's validation response shows in place of a URL that carries a credential. */
  static final String HIDDEN_URL = "[hidden: the URL carries a password]";

  private ConfigValidation() {}

  /**
   * A connector whose name its tasks' lease owners cannot tell from another's (cut at {@link
   * ConnectorNames#KEPT_IN_LEASE_OWNERS} characters, or holding {@code /task-}): an exactly-once
   * connector of either name takes the other's live leases for its own earlier instances' and
   * releases them at each start, their rows sent twice, and the foreign-lease figures stay at 0. An
   * error on {@code name} whenever a configuration is submitted, an update of a running connector's
   * too (and a standalone worker's properties at its start): such a connector is recreated under
   * another name. One that is not updated is only warned about at its start
   * (CONNECTOR_NAME_AMBIGUOUS_IN_LEASES).
   */
  private static void ambiguousName(
      Map<String, String> props, Map<String, ConfigValue> connectKeys) {
    String name = props.get("name");
    if (name == null || !ConnectorNames.ambiguousInLeaseOwners(name)) {
      return;
    }
    connectKeys
        .computeIfAbsent("name", key -> undefinedKey(key, name))
        .addErrorMessage(
            "name "
                + (name.length() > ConnectorNames.KEPT_IN_LEASE_OWNERS
                    ? "is longer than " + ConnectorNames.KEPT_IN_LEASE_OWNERS + " characters"
                    : "holds '" + ConnectorNames.TASK_PART + "'")
                + ": its tasks' lease owners could not be told from another connector's, and an"
                + " exactly-once one would release the other's live leases at each start (their"
                + " rows sent twice); give it a shorter name without '"
                + ConnectorNames.TASK_PART
                + "'");
  }

  public static Config validate(Map<String, String> props) {
    ConfigDef definition = OutboxSourceConfig.configDef();
    Map<String, ConfigValue> values = definition.validateAll(props);
    // Problems of Connect's own settings (a producer override, say), which the connector does not
    // define: Connect lists such a key, and counts its errors like any other.
    Map<String, ConfigValue> connectKeys = new LinkedHashMap<>();
    for (ConfigChecks.Problem problem : ConfigChecks.find(key -> validValue(values, key), props)) {
      ConfigValue value = values.get(problem.key());
      if (value == null) {
        value =
            connectKeys.computeIfAbsent(problem.key(), key -> undefinedKey(key, props.get(key)));
      }
      value.addErrorMessage(problem.message());
    }
    ambiguousName(props, connectKeys);
    if (allValid(
        values,
        CONNECTION_URL_CONFIG,
        CONNECTION_USER_CONFIG,
        CONNECTION_PASSWORD_CONFIG,
        CONNECTION_TIMEOUT_MS_CONFIG)) {
      runLiveChecks(values, props, LIVE_CHECKS_DEADLINE);
    }
    hideCredentialsOfUrl(values.get(CONNECTION_URL_CONFIG));
    List<ConfigValue> ordered = new ArrayList<>();
    for (String key : definition.configKeys().keySet()) {
      ordered.add(values.get(key));
    }
    ordered.addAll(connectKeys.values());
    return new Config(ordered);
  }

  /**
   * How long all the live checks may take together. Each waits at most {@link #MAX_CHECK_TIMEOUT}
   * and 5 s for its reply, but a server that answers each just in time (overloaded, or behind a
   * lock) could hold the fifteen or so of them past Connect's 90 s REST call, which then fails
   * without any error of ours.
   */
  static final Duration LIVE_CHECKS_DEADLINE = Duration.ofSeconds(60);

  /**
   * Runs the live checks on their own thread against a copy of {@code values}, and takes their
   * errors only if they end within {@code deadline}; else a single error on the URL says so. The
   * copy keeps a check that outlives the deadline (until its reply's timeout) from adding to the
   * response Connect is writing.
   */
  static void runLiveChecks(
      Map<String, ConfigValue> values, Map<String, String> props, Duration deadline) {
    Map<String, ConfigValue> copy = new LinkedHashMap<>();
    values.forEach((key, value) -> copy.put(key, copyOf(value)));
    int tasks = tasksStarted(copy, props);
    AtomicReference<Throwable> died = new AtomicReference<>();
    Thread checks =
        new Thread(
            () -> {
              try {
                new LiveCheck(copy, tasks).run();
              } catch (Throwable t) { // NOPMD: said as an error below, never a silent pass
                died.set(t);
              }
            },
            "outbox-relay-validate");
    checks.setDaemon(true);
    checks.start();
    boolean interrupted = false;
    try {
      checks.join(Math.max(1, deadline.toMillis())); // join(0) would wait for ever
    } catch (InterruptedException e) {
      interrupted = true;
      Thread.currentThread().interrupt();
    }
    boolean alive = checks.isAlive(); // first: once the thread has ended, died is final
    if (interrupted || !alive && died.get() != null) {
      // The class only: a message may carry the connection's details.
      values
          .get(CONNECTION_URL_CONFIG)
          .addErrorMessage(
              interrupted
                  ? "validation was interrupted before its database checks ended"
                  : "the database checks failed unexpectedly ("
                      + died.get().getClass().getName()
                      + ")");
      return;
    }
    if (alive) {
      values
          .get(CONNECTION_URL_CONFIG)
          .addErrorMessage(
              "the database did not answer validation's checks within "
                  + deadline.toSeconds()
                  + " s (a server overloaded, or a lock held on the outbox table or its schema"
                  + " history): try again, or look at the server's activity (pg_stat_activity)");
      return;
    }
    copy.forEach(
        (key, checked) -> {
          List<String> before = values.get(key).errorMessages();
          checked.errorMessages().stream()
              .skip(before.size())
              .forEach(values.get(key)::addErrorMessage);
        });
  }

  /**
   * How many tasks Connect starts: {@code tasks.max} (Connect's key, 1 if not given or not a
   * number: Connect refuses that itself), exactly once at most {@code exactly.once.buckets}.
   */
  private static int tasksStarted(Map<String, ConfigValue> values, Map<String, String> props) {
    int maxTasks;
    try {
      maxTasks = Math.max(1, Integer.parseInt(props.getOrDefault("tasks.max", "1").trim()));
    } catch (NumberFormatException e) {
      maxTasks = 1;
    }
    Object buckets = validValue(values, OutboxSourceConfig.EXACTLY_ONCE_BUCKETS_CONFIG);
    return ConfigChecks.exactlyOnce(key -> validValue(values, key)) && buckets instanceof Integer b
        ? OutboxSourceConfig.tasksStarted(maxTasks, true, b)
        : maxTasks;
  }

  private static ConfigValue copyOf(ConfigValue value) {
    return new ConfigValue(
        value.name(),
        value.value(),
        new ArrayList<>(value.recommendedValues()),
        new ArrayList<>(value.errorMessages()));
  }

  /**
   * Connect's validation response shows every value that is not of type PASSWORD as it is: a URL
   * with a password (or an SSL key's) in its query string, or a user and password before its host
   * (which the URL rule refuses), is shown as {@link #HIDDEN_URL}.
   */
  private static void hideCredentialsOfUrl(ConfigValue url) {
    if (url.value() instanceof String text && mayHoldPassword(text)) {
      url.value(HIDDEN_URL);
    }
  }

  /**
   * A URL whose query string cannot be read (a malformed %-escape) is hidden too, and so is one
   * that names a password anywhere: after a ';' or '&' in its database name, or in a libpq keyword
   * string pasted instead of a URL, which the URL rule refuses.
   */
  private static boolean mayHoldPassword(String url) {
    if (url.indexOf('@') >= 0
        || DataSourceFactory.namesPassword(url, "password")
        || !DataSourceFactory.portsAreNumbers(url)) {
      // User information, a password holding '?' before it, or one taken for a port (pasted
      // without its '@host'): hidden, not parsed.
      return true;
    }
    try {
      return DataSourceFactory.urlParameters(url).stringPropertyNames().stream()
          .anyMatch(name -> name.toLowerCase(Locale.ROOT).contains("password"));
    } catch (IllegalArgumentException e) {
      return true;
    }
  }

  /**
   * A key the connector does not define (Connect's own). Connect's response puts this entry in
   * place of its own and prints its value by Connect's type for the key, casting it (a transform's
   * type is a CLASS: the text given failed the whole request with a ClassCastException, a 500
   * instead of the error), so the value is left out, but for a client override (Connect gives those
   * no type: the text prints as it is).
   */
  static ConfigValue undefinedKey(String key, String value) {
    ConfigValue undefined = new ConfigValue(key);
    if ((key.startsWith("producer.override.") || key.startsWith("admin.override."))
        && !mayHoldASecret(key)) {
      undefined.value(value);
    }
    return undefined;
  }

  /**
   * A client setting whose value may be a secret (a password, a JAAS config with one, a key): never
   * echoed, whichever check reports on it.
   */
  private static boolean mayHoldASecret(String key) {
    String k = key.toLowerCase(Locale.ROOT);
    return k.contains("password")
        || k.contains("jaas")
        || k.contains("secret")
        || k.contains(".key");
  }

  private static Object validValue(Map<String, ConfigValue> values, String key) {
    ConfigValue value = values.get(key);
    return value == null || !value.errorMessages().isEmpty() ? null : value.value();
  }

  private static boolean allValid(Map<String, ConfigValue> values, String... keys) {
    for (String key : keys) {
      if (!values.get(key).errorMessages().isEmpty()) {
        return false;
      }
    }
    return values.get(keys[0]).value() != null;
  }

  /** The checks that talk to the database, with settings already known to be well-formed. */
  private static final class LiveCheck {
    private final Map<String, ConfigValue> values;
    private final String url;
    private final String user;
    private final Password password;
    private final Duration timeout;

    /** How many tasks Connect starts, each holding its pool. */
    private final int tasks;

    LiveCheck(Map<String, ConfigValue> values, int tasks) {
      this.values = values;
      this.tasks = tasks;
      this.url = (String) values.get(CONNECTION_URL_CONFIG).value();
      String configuredUser = (String) values.get(CONNECTION_USER_CONFIG).value();
      this.user = configuredUser == null || configuredUser.isEmpty() ? null : configuredUser;
      this.password = (Password) values.get(CONNECTION_PASSWORD_CONFIG).value();
      Duration configured =
          Duration.ofMillis((Long) values.get(CONNECTION_TIMEOUT_MS_CONFIG).value());
      this.timeout = configured.compareTo(MAX_CHECK_TIMEOUT) > 0 ? MAX_CHECK_TIMEOUT : configured;
    }

    void run() {
      if (!canConnect()) {
        return;
      }
      Object table = validValue(values, OUTBOX_TABLE_CONFIG);
      Object migrate = validValue(values, SCHEMA_MIGRATE_ON_START_CONFIG);
      if (table != null && migrate != null) {
        checkTable(OutboxTable.parse((String) table), (Boolean) migrate);
      }
    }

    /** How long a check waits for the server's reply: its statement timeout and 5 s. */
    private Duration readTimeout() {
      return timeout.plusSeconds(5);
    }

    /** One connection straight from the driver: quick to fail, nothing pooled, nothing logged. */
    private boolean canConnect() {
      try (Connection connection =
          DataSourceFactory.connectForCheckOrNull(
              url, user, password, timeout, DataSourceFactory.APPLICATION_NAME)) {
        if (connection == null) {
          error(
              CONNECTION_URL_CONFIG, CONNECTION_URL_CONFIG + " is not a valid PostgreSQL JDBC URL");
          return false;
        }
        // Opening and logging in are bounded by the driver's timeouts; the read of a server that
        // went silent after the login (a half-open path, a pooler without a server) is bounded
        // here, as the table checks' pooled reads are, or validation outlasts Connect's REST call.
        connection.setNetworkTimeout(Runnable::run, (int) readTimeout().toMillis());
        Optional<String> tooOld = ServerVersion.refusal(connection);
        if (tooOld.isPresent()) {
          error(
              CONNECTION_URL_CONFIG,
              CONNECTION_URL_CONFIG + " reaches a server too old: " + tooOld.get());
          return false;
        }
        if (!isWritable(connection)) {
          return false;
        }
        checkConnectionLimits(connection); // the table's checks go on either way
        return true;
      } catch (SQLException e) {
        reportConnectFailure(SqlStates.classify(e, "connection check"));
        return false;
      } catch (RuntimeException e) {
        error(CONNECTION_URL_CONFIG, "could not connect with " + CONNECTION_URL_CONFIG);
        return false;
      }
    }

    /**
     * The relay writes every row it claims: a standby (a URL of several hosts reaches one with
     * pgjdbc's default targetServerType=any) or a read-only default would refuse each claim with
     * SQLState 25006, which a task retries as a transient error, without end.
     */
    private boolean isWritable(Connection connection) throws SQLException {
      try (Statement s = connection.createStatement();
          ResultSet rs =
              s.executeQuery(
                  "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'")) {
        if (rs.next() && rs.getBoolean(1)) {
          error(
              CONNECTION_URL_CONFIG,
              CONNECTION_URL_CONFIG
                  + " reaches a server where "
                  + CONNECTION_USER_CONFIG
                  + " can only read (a standby, or default_transaction_read_only on): the relay"
                  + " writes every row it claims; name the primary (with several hosts, add"
                  + " targetServerType=primary)");
          return false;
        }
        return true;
      }
    }

    /**
     * Every task holds its pool's connections at all times, and one more to listen for inserts:
     * more than the server, the role or the database admits leaves tasks failing to connect, over
     * and over, and takes connections the application needs. Judged only with notifications on,
     * whose LISTEN needs the server's own session: behind a transaction-mode pooler (which needs
     * them off) many tasks' connections share few of the server's, whose limits then say nothing.
     * Other clients' connections are not counted: only what can never fit is refused. A check that
     * cannot be read is skipped.
     */
    private void checkConnectionLimits(Connection connection) {
      Object poolSize = validValue(values, CONNECTION_POOL_SIZE_CONFIG);
      if (!(poolSize instanceof Integer pool)
          || !Boolean.TRUE.equals(validValue(values, NOTIFY_ENABLED_CONFIG))) {
        return;
      }
      long held = (long) tasks * (pool + 1);
      long needed = held + 1; // and the next validation's: an update of this config
      long admitted;
      try (Statement s = connection.createStatement();
          ResultSet rs =
              s.executeQuery(
                  // A superuser may use the reserved connections, and no limit of a role or a
                  // database applies to it; the login role's limit is the one that counts.
                  "SELECT current_setting('max_connections')::int - CASE WHEN r.rolsuper THEN 0"
                      + " ELSE current_setting('superuser_reserved_connections')::int"
                      + " + coalesce(current_setting('reserved_connections', true)::int, 0) END,"
                      + " CASE WHEN r.rolsuper THEN -1 ELSE r.rolconnlimit END,"
                      + " CASE WHEN r.rolsuper THEN -1 ELSE d.datconnlimit END"
                      + " FROM pg_roles r, pg_database d"
                      + " WHERE r.rolname = session_user AND d.datname = current_database()")) {
        if (!rs.next()) {
          return;
        }
        admitted = rs.getLong(1);
        for (int column : new int[] {2, 3}) {
          long limit = rs.getLong(column);
          if (limit >= 0) { // -1: no limit
            admitted = Math.min(admitted, limit);
          }
        }
      } catch (SQLException e) {
        return; // the other checks go on
      }
      if (needed > admitted) {
        error(
            CONNECTION_POOL_SIZE_CONFIG,
            tasks
                + " tasks of "
                + CONNECTION_POOL_SIZE_CONFIG
                + "="
                + pool
                + " and one listening connection each hold "
                + held
                + " connections at all times, and validating an update of this config takes one"
                + " more: more than the database admits for "
                + CONNECTION_USER_CONFIG
                + " ("
                + admitted
                + ": max_connections less the reserved ones, the role's and the database's"
                + " connection limits): lower tasks.max or "
                + CONNECTION_POOL_SIZE_CONFIG);
      }
    }

    /**
     * Each failure on the key to change. By SQLState only: 28P01 (password refused) may mean a
     * wrong user as well, 28000 (role unknown, not allowed to log in, or not admitted by
     * pg_hba.conf) is the user's, and the driver's 08004 when the server asks for a password none
     * was given is the password's; with a password, 08004 is a refusal of another kind.
     */
    private void reportConnectFailure(OutboxStoreException failure) {
      if (TOO_MANY_CONNECTIONS.equals(failure.sqlState())) {
        // The server answered, and is full: often with this connector's own tasks' connections
        // (their pools are held at all times), when refusing would block the very update that
        // lowers them. Not the config's fault: the database checks are skipped, not failed.
        log.warn(
            "Configuration validation skipped its database checks: the server admits no more"
                + " connections for {} (SQLState 53300, reason=VALIDATION_DATABASE_FULL)",
            CONNECTION_USER_CONFIG);
        return;
      }
      if (failure.sqlState() != null && failure.sqlState().startsWith("57P")) {
        // A server starting up, shutting down or in recovery (a failover, a restart): the URL is
        // right, and refusing would block every update of the config meanwhile (a standalone
        // worker, which validates its connectors at start, would not start). Tasks wait for it.
        log.warn(
            "Configuration validation skipped its database checks: the server at {} is starting"
                + " up or shutting down (SQLState {}, reason=VALIDATION_DATABASE_UNAVAILABLE)",
            CONNECTION_URL_CONFIG,
            failure.sqlState());
        return;
      }
      String state = stateSuffix(failure);
      if ("08004".equals(failure.sqlState()) && !passwordGiven()) {
        error(
            CONNECTION_PASSWORD_CONFIG,
            "the database asks "
                + CONNECTION_USER_CONFIG
                + " for a password and "
                + CONNECTION_PASSWORD_CONFIG
                + " is not set"
                + state
                + ": set "
                + CONNECTION_PASSWORD_CONFIG
                + ", preferably through a config provider");
        return;
      }
      if (SqlStates.PROTOCOL_VIOLATION.equals(failure.sqlState())) {
        error(
            CONNECTION_URL_CONFIG,
            "the server at "
                + CONNECTION_URL_CONFIG
                + " refused the connection"
                + state
                + ", as a connection pooler such as PgBouncer refuses one itself (its log says"
                + " why: "
                + CONNECTION_USER_CONFIG
                + " or "
                + CONNECTION_PASSWORD_CONFIG
                + " its authentication does not take, an unknown database, max_client_conn, a"
                + " startup parameter it does not accept such as extra_float_digits, which"
                + " ignore_startup_parameters lets through, or the database behind it"
                + " unreachable), or it is no PostgreSQL server");
        return;
      }
      if ("28000".equals(failure.sqlState())) {
        error(
            CONNECTION_USER_CONFIG,
            "the database refused "
                + CONNECTION_USER_CONFIG
                + state
                + ": check that the role exists, may log in, and is admitted to this database"
                + " from this host by pg_hba.conf");
        return;
      }
      switch (failure.kind()) {
        case AUTHENTICATION -> {
          String message =
              "the database rejected "
                  + CONNECTION_USER_CONFIG
                  + " or "
                  + CONNECTION_PASSWORD_CONFIG
                  + state;
          error(CONNECTION_PASSWORD_CONFIG, message);
          error(CONNECTION_USER_CONFIG, message);
        }
        case PERMISSION ->
            error(
                CONNECTION_USER_CONFIG,
                CONNECTION_USER_CONFIG + " may not connect to the database" + state);
        case SCHEMA ->
            error(
                CONNECTION_URL_CONFIG,
                "3D000".equals(failure.sqlState())
                    ? CONNECTION_URL_CONFIG + " names a database that does not exist" + state
                    : "could not connect with " + CONNECTION_URL_CONFIG + state);
        default ->
            error(
                CONNECTION_URL_CONFIG,
                "could not connect to the database in "
                    + CONNECTION_URL_CONFIG
                    + state
                    + ": check host, port and that the server accepts connections");
      }
    }

    /**
     * The table must be at {@link SchemaMigrator#CURRENT_VERSION}, unless the connector is to
     * create or upgrade it. A table without outbox-relay's schema history was created by the user's
     * own migration tool (from docs/schema.sql) and is accepted when it has every column the relay
     * needs; any existing table is checked for them.
     */
    private void checkTable(OutboxTable table, boolean migrateOnStart) {
      try (HikariDataSource pool =
          DataSourceFactory.createForChecks(
              url,
              user,
              password,
              new DataSourceFactory.Timeouts(timeout, timeout, readTimeout()),
              "outbox-relay-validate",
              2,
              0)) {
        Optional<String> version = new SchemaMigrator(pool, table).currentVersion();
        boolean exists = tableExists(pool, table);
        if (version.isPresent() && !exists) {
          // Migrations would find nothing to apply, and the task fail at its first claim.
          error(
              OUTBOX_TABLE_CONFIG,
              OUTBOX_TABLE_CONFIG
                  + " does not exist, though its schema history ("
                  + table.historyTable()
                  + ") does: restore the table, or drop the history and let the connector create"
                  + " the table anew");
        } else if (version.isPresent()) {
          checkVersion(table, version.get(), migrateOnStart);
        } else if (exists) {
          if (migrateOnStart) {
            error(
                SCHEMA_MIGRATE_ON_START_CONFIG,
                OUTBOX_TABLE_CONFIG
                    + " exists but has no outbox-relay schema history ("
                    + table.historyTable()
                    + "), so it cannot be migrated: set "
                    + SCHEMA_MIGRATE_ON_START_CONFIG
                    + "=false and keep it up to date with your own migration tool");
          }
        } else if (!migrateOnStart) {
          error(
              OUTBOX_TABLE_CONFIG, OUTBOX_TABLE_CONFIG + " does not exist: " + createTable(table));
        } else {
          // The table the task would create has the relay's columns, none of the application's.
          Set<String> created = new HashSet<>(REQUIRED_COLUMNS);
          created.addAll(MIGRATED_COLUMNS);
          checkMappedColumns(created, true);
          checkEventTimestampColumn(pool, table, null);
        }
        checkTemporaryTables(pool);
        // Not for a table without history (its error: it cannot be migrated at all).
        if (migrateOnStart
            && (version.isPresent() || !exists)
            && values.get(OUTBOX_TABLE_CONFIG).errorMessages().isEmpty()) {
          checkMigrationCanRun(pool, table, exists, version);
        }
        if (exists && values.get(OUTBOX_TABLE_CONFIG).errorMessages().isEmpty()) {
          Set<String> present = presentColumns(pool, table);
          checkColumns(table, missingColumns(present));
          checkMappedColumns(present, false);
          checkEventTimestampColumn(pool, table, present);
          checkMessageIdNotNull(pool, table, present);
          checkUncastFieldTypes(pool, table, present);
          checkReplicaIdentity(pool, table);
          checkInvalidIndexes(pool, table);
          checkPrivileges(pool, table);
          if (version.isEmpty() && values.get(OUTBOX_TABLE_CONFIG).errorMessages().isEmpty()) {
            // A table kept up to date by the user's own tool (or adopted from Debezium).
            checkPublishedLog(pool, table);
            checkParkedRowsIndex(pool, table);
            checkDueIndex(pool, table);
            if (values.get(OUTBOX_TABLE_CONFIG).errorMessages().isEmpty()) {
              checkIndexes(pool, table);
            }
          }
        }
      } catch (SQLException e) {
        reportTableFailure(SqlStates.classify(e, "table check"), table);
      } catch (RuntimeException e) {
        // Flyway wraps the driver's exception; its message may quote SQL or the URL.
        SQLException cause = findSqlException(e);
        if (cause != null) {
          reportTableFailure(SqlStates.classify(cause, "table check"), table);
        } else {
          error(OUTBOX_TABLE_CONFIG, "could not read the schema version of " + OUTBOX_TABLE_CONFIG);
        }
      }
    }

    /**
     * What the migrations a task runs at start need, which nothing else checks before its first
     * poll fails on it: the table's schema (named, or the search_path's first), CREATE on it where
     * a pending migration creates a table or function (versions 1 to 9), ownership of what a
     * pending migration alters or indexes (the table; the published log below version 11, whose
     * versions 10 and 11 index it; the insert notification function below version 5, which replaces
     * it), and Flyway's reads and writes of the schema history (SELECT, INSERT, UPDATE: it locks
     * and appends to it, never alters it).
     */
    private void checkMigrationCanRun(
        HikariDataSource pool, OutboxTable table, boolean exists, Optional<String> version)
        throws SQLException {
      if (version.isPresent() && !before(version.get(), SchemaMigrator.CURRENT_VERSION)) {
        return; // nothing to migrate
      }
      boolean createsObjects = version.isEmpty() || before(version.get(), "9");
      try (Connection c = pool.getConnection();
          PreparedStatement ps = c.prepareStatement(MIGRATION_PRIVILEGES)) {
        ps.setString(1, table.qualified());
        ps.setString(2, table.qualifiedPublishedLog());
        ps.setString(3, table.qualifiedNotifyFunction() + "()");
        ps.setString(4, table.qualifiedHistoryTable());
        ps.setString(5, table.schema());
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (!rs.getBoolean("schema_exists")) {
            error(
                OUTBOX_TABLE_CONFIG,
                table.schema() == null
                    ? "no schema of "
                        + CONNECTION_USER_CONFIG
                        + "'s search_path exists, so "
                        + SCHEMA_MIGRATE_ON_START_CONFIG
                        + " could not create "
                        + OUTBOX_TABLE_CONFIG
                        + ": name its schema in "
                        + OUTBOX_TABLE_CONFIG
                        + " (schema.table), or create the search_path's schema"
                    : OUTBOX_TABLE_CONFIG
                        + "'s schema "
                        + table.schema()
                        + " does not exist, so "
                        + SCHEMA_MIGRATE_ON_START_CONFIG
                        + " could not create the table in it: create the schema, or name one"
                        + " that exists");
            return;
          }
          List<String> lacks = new ArrayList<>();
          if (createsObjects && !rs.getBoolean("can_create")) {
            lacks.add("CREATE on schema " + rs.getString("schema_name"));
          }
          if (!rs.getBoolean("owns_table")) {
            lacks.add("ownership of " + OUTBOX_TABLE_CONFIG);
          }
          boolean logIndexed = version.isPresent() && before(version.get(), "11");
          if (logIndexed && !rs.getBoolean("owns_log")) {
            lacks.add("ownership of its published log " + table.objectName("published"));
          }
          boolean notifyReplaced = version.isPresent() && before(version.get(), "5");
          if (notifyReplaced && !rs.getBoolean("owns_notify")) {
            lacks.add("ownership of its insert notification function");
          }
          if (!rs.getBoolean("writes_history")) {
            lacks.add("SELECT, INSERT and UPDATE on its schema history " + table.historyTable());
          }
          if (!lacks.isEmpty()) {
            error(
                SCHEMA_MIGRATE_ON_START_CONFIG,
                CONNECTION_USER_CONFIG
                    + " lacks "
                    + String.join(" and ", lacks)
                    + ", which "
                    + SCHEMA_MIGRATE_ON_START_CONFIG
                    + "=true needs to "
                    + (exists ? "migrate" : "create")
                    + " the table: grant "
                    + (lacks.size() == 1 ? "it" : "them")
                    + ", or run outbox-relay-cli migrate as a role that has "
                    + (lacks.size() == 1 ? "it" : "them")
                    + " and set "
                    + SCHEMA_MIGRATE_ON_START_CONFIG
                    + "=false (docs/deployment.md)");
          }
        }
      }
    }

    private static boolean before(String version, String other) {
      return MigrationVersion.fromVersion(version).compareTo(MigrationVersion.fromVersion(other))
          < 0;
    }

    /**
     * The schema (named, else the search_path's first existing one) and whether the role may create
     * in it; whether it owns (is a member of the owner of) the table, the published log and the
     * insert notification function, and may read, insert and update the history table: each true
     * for an object that does not exist (has_table_privilege with several privileges is true for
     * any one of them, hence three calls).
     */
    private static final String MIGRATION_PRIVILEGES =
        """
        SELECT s.name AS schema_name, n.oid IS NOT NULL AS schema_exists,
          n.oid IS NOT NULL AND has_schema_privilege(n.oid, 'CREATE') AS can_create,
          coalesce((SELECT pg_has_role(current_user, t.relowner, 'USAGE') FROM pg_class t
            WHERE t.oid = to_regclass(?)), true) AS owns_table,
          coalesce((SELECT pg_has_role(current_user, l.relowner, 'USAGE') FROM pg_class l
            WHERE l.oid = to_regclass(?)), true) AS owns_log,
          coalesce((SELECT pg_has_role(current_user, f.proowner, 'USAGE') FROM pg_proc f
            WHERE f.oid = to_regprocedure(?)), true) AS owns_notify,
          coalesce((SELECT has_table_privilege(h.oid, 'SELECT')
              AND has_table_privilege(h.oid, 'INSERT') AND has_table_privilege(h.oid, 'UPDATE')
            FROM pg_class h WHERE h.oid = to_regclass(?)), true) AS writes_history
        FROM (SELECT coalesce(?, current_schema()) AS name) s
          LEFT JOIN pg_namespace n ON n.nspname = s.name""";

    /** Whether retention runs (anything but -1; an invalid value counts as running: stricter). */
    private boolean retains() {
      return !Long.valueOf(OutboxSourceConfig.RETENTION_FOREVER)
          .equals(validValue(values, RETENTION_PUBLISHED_MS_CONFIG));
    }

    /**
     * A publication that publishes updates or deletes of a table without a replica identity makes
     * the server refuse every claim and every publish (SQLState 55000); a Debezium connector's
     * publication for all tables does, on an adopted table without a primary key.
     */
    private void checkReplicaIdentity(HikariDataSource pool, OutboxTable table)
        throws SQLException {
      boolean retention = retains();
      List<String> ofTable;
      List<String> ofLog;
      try (Connection c = pool.getConnection()) {
        ofTable = ReplicaIdentity.blockingPublications(c, table);
        // Only retention deletes from the log; nothing updates it.
        ofLog = retention ? ReplicaIdentity.blockingPublicationsOfLog(c, table) : List.of();
      }
      if (!ofTable.isEmpty()) {
        error(
            OUTBOX_TABLE_CONFIG,
            OUTBOX_TABLE_CONFIG
                + " has no replica identity and "
                + publish(ofTable)
                + " its updates or deletes, so PostgreSQL would refuse every claim and publish"
                + " (SQLState 55000): give the table a primary key or REPLICA IDENTITY FULL, or"
                + " take it out of the publication");
      }
      if (!ofLog.isEmpty()) {
        error(
            OUTBOX_TABLE_CONFIG,
            OUTBOX_TABLE_CONFIG
                + "'s published log "
                + table.objectName("published")
                + " has no replica identity and "
                + publish(ofLog)
                + " its deletes, so PostgreSQL would refuse every retention delete (SQLState"
                + " 55000): give it back REPLICA IDENTITY FULL (as schema version 9 creates it), or"
                + " take it out of the publication");
      }
    }

    /** "publication p publishes", "publications p, q publish". */
    private static String publish(List<String> publications) {
      // Names read from the catalog: anything may be quoted in one.
      List<String> names = publications.stream().map(Printable::escape).toList();
      return names.size() == 1
          ? "publication " + abbreviated(names) + " publishes"
          : "publications " + abbreviated(names) + " publish";
    }

    /**
     * The role may do what a task does: otherwise the task would fail at its first claim, or at its
     * first publish after Kafka had the batch. One error naming every privilege it lacks.
     */
    private void checkPrivileges(HikariDataSource pool, OutboxTable table) throws SQLException {
      List<String> lacks;
      try (Connection c = pool.getConnection()) {
        // A log not there yet (migrated at start) lacks nothing.
        Object retention = validValue(values, RETENTION_PUBLISHED_MS_CONFIG);
        lacks =
            RelayPrivileges.lacking(
                    c,
                    table,
                    !Long.valueOf(0L).equals(retention),
                    !Long.valueOf(OutboxSourceConfig.RETENTION_FOREVER).equals(retention))
                .named(OUTBOX_TABLE_CONFIG, "its published log " + table.objectName("published"));
      }
      if (!lacks.isEmpty()) {
        error(
            OUTBOX_TABLE_CONFIG,
            CONNECTION_USER_CONFIG
                + " lacks "
                + String.join(" and ", lacks)
                + ", which a task needs: grant them as docs/deployment.md shows");
      }
    }

    /**
     * Exactly once, a task's start creates a temporary table, which makes its epoch's commit
     * durable (OutboxSql#newEpoch): the role needs TEMPORARY on the database, which PUBLIC has
     * unless it was revoked, and the database must let it create one (a DDL event trigger may not),
     * which is tried in a transaction rolled back. Judged whether or not the table exists yet.
     */
    private void checkTemporaryTables(HikariDataSource pool) throws SQLException {
      if (!ConfigChecks.exactlyOnce(key -> validValue(values, key))) {
        return;
      }
      try (Connection c = pool.getConnection();
          Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery(
                  "SELECT has_database_privilege(current_database(), 'TEMPORARY'),"
                      + " quote_ident(current_database())")) {
        if (rs.next() && !rs.getBoolean(1)) {
          error(
              CONNECTION_USER_CONFIG,
              CONNECTION_USER_CONFIG
                  + " may not create temporary tables in the database (TEMPORARY, which PUBLIC"
                  + " has unless revoked), which an exactly-once task's start does to commit its"
                  + " epoch durably: GRANT TEMPORARY ON DATABASE "
                  + Printable.escape(rs.getString(2))
                  + " to it");
          return;
        }
      }
      try (Connection c = pool.getConnection()) {
        EpochTable.tryCreate(c);
      } catch (SQLException e) {
        OutboxStoreException failure = SqlStates.classify(e, "epoch table check");
        if (failure.kind() == OutboxStoreException.Kind.TRANSIENT) {
          throw e; // the database's state, reported as the table check's
        }
        error(
            DELIVERY_GUARANTEE_CONFIG,
            "the database refused the temporary table an exactly-once task's start creates to"
                + " commit its epoch durably ("
                + EpochTable.NAME
                + ", dropped at its commit), so every task's start would fail"
                + stateSuffix(failure)
                + ": a DDL event trigger that forbids DDL must let this role create temporary"
                + " tables");
      }
    }

    /** The published log of schema version 9 exists, and is one: it has the log's columns. */
    private void checkPublishedLog(HikariDataSource pool, OutboxTable table) throws SQLException {
      String log = table.objectName("published");
      if (!relationExists(pool, table.qualifiedPublishedLog())) {
        error(
            OUTBOX_TABLE_CONFIG,
            OUTBOX_TABLE_CONFIG
                + " has no published log ("
                + log
                + ", schema version 9): apply the statements of `outbox-relay-cli schema-sql"
                + " --after-version 8`");
        return;
      }
      Set<String> present = presentColumns(pool, table.qualifiedPublishedLog());
      List<String> missing =
          PUBLISHED_LOG_COLUMNS.stream().filter(c -> !present.contains(c)).toList();
      if (!missing.isEmpty()) {
        error(
            OUTBOX_TABLE_CONFIG,
            OUTBOX_TABLE_CONFIG
                + "'s published log "
                + log
                + " lacks "
                + abbreviated(missing)
                + ": a relation of that name that is not outbox-relay's published log (schema"
                + " version 9); rename it");
      }
    }

    /**
     * An index left INVALID by a concurrent build that failed (a cancelled pre-build, a unique
     * violation) is never used, and no migration rebuilds one that already applied: without the due
     * indexes every claim scans the table and times out, and the task relays nothing while it stays
     * RUNNING. A build still running shows the same way for a moment.
     */
    private void checkInvalidIndexes(HikariDataSource pool, OutboxTable table) throws SQLException {
      List<String> invalid;
      try (Connection c = pool.getConnection()) {
        invalid = SchemaMigrator.invalidIndexes(c, table);
      }
      if (!invalid.isEmpty()) {
        error(
            OUTBOX_TABLE_CONFIG,
            OUTBOX_TABLE_CONFIG
                + " has "
                + (invalid.size() == 1 ? "an invalid index, " : "invalid indexes, ")
                + abbreviated(invalid.stream().map(Printable::escape).toList())
                + " (a concurrent build that failed, or one still running): PostgreSQL never uses"
                + " it; rebuild it with REINDEX INDEX CONCURRENTLY, or drop it with DROP INDEX"
                + " CONCURRENTLY and build it again (the relay's own as `outbox-relay-cli"
                + " schema-sql` shows)");
      }
    }

    /**
     * Schema version 12 replaced the index of parked rows by one on a prefix of the correlation id:
     * with the old one still there, a row whose correlation id is longer than an index entry can
     * never be parked, and each try fails the task.
     */
    private void checkParkedRowsIndex(HikariDataSource pool, OutboxTable table)
        throws SQLException {
      if (hasIndex(pool, table, "parked_rows_idx")) {
        error(
            OUTBOX_TABLE_CONFIG,
            OUTBOX_TABLE_CONFIG
                + " still has the index of parked rows of schema version 7 ("
                + table.objectName("parked_rows_idx")
                + "), which cannot hold a long correlation id: apply the statements of"
                + " `outbox-relay-cli schema-sql --after-version 11` (schema version 12)");
      }
    }

    /** Whether the table itself has the index (not one of that name further along the path). */
    private static boolean hasIndex(HikariDataSource pool, OutboxTable table, String suffix)
        throws SQLException {
      try (Connection c = pool.getConnection()) {
        return RelayIndexes.onTable(c, table, suffix);
      }
    }

    /**
     * Schema version 13 indexes the due rows by (instance_key, seq): the claims read each key's due
     * rows in order by it, and without it would sort the keys' whole backlog on every claim.
     */
    private void checkDueIndex(HikariDataSource pool, OutboxTable table) throws SQLException {
      if (!hasIndex(pool, table, "due_key_seq_idx")) {
        error(
            OUTBOX_TABLE_CONFIG,
            OUTBOX_TABLE_CONFIG
                + " has no index of due rows by instance key ("
                + table.objectName("due_key_seq_idx")
                + "), which every claim reads: apply the statements of"
                + " `outbox-relay-cli schema-sql --after-version 12` (schema version 13)");
      }
    }

    /**
     * Every other index the relay's statements read. Adopted and own-tool tables get theirs from
     * statements run by hand, where a failed concurrent build that was dropped and not run again
     * leaves a table that validates yet reads itself whole, in a claim or a retention run.
     */
    private void checkIndexes(HikariDataSource pool, OutboxTable table) throws SQLException {
      List<String> missing;
      try (Connection c = pool.getConnection()) {
        missing = RelayIndexes.missing(c, table, this::mappedColumn, retains());
      }
      if (!missing.isEmpty()) {
        error(
            OUTBOX_TABLE_CONFIG,
            OUTBOX_TABLE_CONFIG
                + " lacks "
                + (missing.size() == 1 ? "an index" : "indexes")
                + " the relay reads: "
                + String.join(", ", missing)
                + "; without "
                + (missing.size() == 1 ? "it" : "them")
                + " those statements read the whole table: build "
                + (missing.size() == 1 ? "it" : "them")
                + " as `outbox-relay-cli schema-sql` shows (a table adopted from Debezium: as"
                + " `outbox-relay-cli adopt-debezium-table` prints them), with CREATE INDEX"
                + " CONCURRENTLY on a table in use");
      }
    }

    private void checkVersion(OutboxTable table, String version, boolean migrateOnStart) {
      int comparison =
          MigrationVersion.fromVersion(version)
              .compareTo(MigrationVersion.fromVersion(SchemaMigrator.CURRENT_VERSION));
      // A newer version passes, as a task starts on it (SCHEMA_NEWER_THAN_PLUGIN): each release's
      // migrations keep the previous release working, and in a rolling upgrade a worker still on
      // the older plugin validates every configuration update it receives.
      if (comparison < 0 && !migrateOnStart) {
        error(
            OUTBOX_TABLE_CONFIG,
            OUTBOX_TABLE_CONFIG
                + " has schema version "
                + version
                + " but this connector needs version "
                + SchemaMigrator.CURRENT_VERSION
                + ": "
                + upgradeTable(table));
      }
    }

    /**
     * A table without the relay's columns (an application table named by mistake, say) would pass
     * every other check and fail the task at its first claim.
     */
    private void checkColumns(OutboxTable table, List<String> missing) {
      if (missing.isEmpty()) {
        return;
      }
      int required = REQUIRED_COLUMNS.size();
      if (missing.size() == required) {
        error(
            OUTBOX_TABLE_CONFIG,
            OUTBOX_TABLE_CONFIG
                + " names a table that is not an outbox table: it has none of the "
                + required
                + " columns outbox-relay reads and writes ("
                + abbreviated(missing)
                + "). Set "
                + OUTBOX_TABLE_CONFIG
                + " to the outbox table; for a new one, pick a name no table has and "
                + createTable("<new table>"));
      } else {
        error(
            OUTBOX_TABLE_CONFIG,
            OUTBOX_TABLE_CONFIG
                + " lacks "
                + missing.size()
                + " of the "
                + required
                + " columns outbox-relay reads and writes: "
                + abbreviated(missing)
                + ". Bring the table to schema version "
                + SchemaMigrator.CURRENT_VERSION
                + " with your own migration tool (`outbox-relay-cli schema-sql --table "
                + table
                + " --after-version N` prints the statements after version N), or set "
                + OUTBOX_TABLE_CONFIG
                + " to the outbox table");
      }
    }

    /** Up to six names, then how many more. */
    private static String abbreviated(List<String> names) {
      int shown = Math.min(names.size(), 6);
      String list = String.join(", ", names.subList(0, shown));
      return names.size() > shown ? list + " and " + (names.size() - shown) + " more" : list;
    }

    /**
     * The required columns the table does not have, in the order of {@link #REQUIRED_COLUMNS}. A
     * message field mapped to a column of another name ({@code column.*}) is checked on its own key
     * instead ({@link #checkMappedColumns}).
     */
    private List<String> missingColumns(Set<String> present) {
      List<String> missing = new ArrayList<>();
      for (String column : REQUIRED_COLUMNS) {
        String key = MAPPING_KEYS.get(column);
        boolean mappedElsewhere = key != null && !column.equals(validValue(values, key));
        if (!mappedElsewhere && !present.contains(column)) {
          missing.add(column);
        }
      }
      return missing;
    }

    /**
     * The column {@code field} is mapped to: its setting's value, or the relay's own; null where
     * the setting has an error already (an invalid name, a column the table lacks).
     */
    private String mappedColumn(OutboxColumns.Row field) {
      String relay = ColumnMapping.RELAY.column(field);
      String key = MAPPING_KEYS.get(relay);
      ConfigValue setting = key == null ? null : values.get(key);
      if (setting != null && !setting.errorMessages().isEmpty()) {
        return null;
      }
      Object column = setting == null ? null : setting.value();
      return column == null ? relay : column.toString();
    }

    /**
     * Each {@code column.*} setting that names a column of another name must name one of the
     * table's; each column placed as a header must exist. Each error on its own key, naming the
     * setting, not the value.
     */
    private void checkMappedColumns(Set<String> present, boolean toBeCreated) {
      String lacking =
          toBeCreated ? ", which the task would create, would not have" : " does not have";
      MAPPING_KEYS.forEach(
          (relayColumn, key) -> {
            Object column = validValue(values, key);
            if (column != null && !column.equals(relayColumn) && !present.contains(column)) {
              error(
                  key,
                  key
                      + " names a column that "
                      + OUTBOX_TABLE_CONFIG
                      + lacking
                      + ": set it to the column that holds this field");
            }
          });
      Object placements = validValue(values, COLUMN_ADDITIONAL_PLACEMENT_CONFIG);
      if (placements instanceof List<?> entries) {
        List<ColumnMapping.HeaderColumn> headers =
            HeaderPlacements.parse(entries.stream().map(String::valueOf).toList());
        for (int i = 0; i < headers.size(); i++) {
          if (!present.contains(headers.get(i).column())) {
            error(
                COLUMN_ADDITIONAL_PLACEMENT_CONFIG,
                COLUMN_ADDITIONAL_PLACEMENT_CONFIG
                    + " entry "
                    + (i + 1)
                    + " names a column that "
                    + OUTBOX_TABLE_CONFIG
                    + lacking);
          }
        }
      }
    }

    /**
     * A column named for the event's time must exist and hold a timestamp: the claim reads it with
     * {@code extract(epoch ...)}, which takes no other type, and every claim would fail. A table
     * the relay is about to create has no column of the application's.
     *
     * @param present the table's columns, or null for a table the task would create
     */
    private void checkEventTimestampColumn(
        HikariDataSource pool, OutboxTable table, Set<String> present) throws SQLException {
      Object column = validValue(values, COLUMN_EVENT_TIMESTAMP_CONFIG);
      if (column == null || column.equals(ColumnMapping.RELAY.eventTimestamp())) {
        return;
      }
      if (present == null || !present.contains(column)) {
        error(
            COLUMN_EVENT_TIMESTAMP_CONFIG,
            COLUMN_EVENT_TIMESTAMP_CONFIG
                + " names a column that "
                + OUTBOX_TABLE_CONFIG
                + (present == null
                    ? ", which the task would create, would not have"
                    : " does not have")
                + ": set it to the column that holds the event's time");
        return;
      }
      // A domain's base type: extract reads a domain over timestamptz as a timestamptz.
      Optional<ColumnType> type = baseType(pool, table, column.toString());
      if (type.isPresent() && !EVENT_TIMESTAMP_TYPES.contains(type.get().name())) {
        error(
            COLUMN_EVENT_TIMESTAMP_CONFIG,
            COLUMN_EVENT_TIMESTAMP_CONFIG
                + " names a column of type "
                + Printable.escape(type.get().name())
                + ": the event's time must be a timestamptz, or a timestamp (read as UTC)");
      }
    }

    /**
     * The message id and the aggregate id in a column of the relay's own name are read as they are,
     * not cast (a column of another name is read as its text): of any type but a string type (text,
     * varchar, char, citext: PostgreSQL's category S), the statements' comparisons of message ids
     * with text and the claim's hash of the aggregate id fail. (The aggregate and event types are
     * only read, and written into text columns: an enum does.) A uuid message_id passed validation,
     * and every publish failed (42883), the task with it, each restart sending the row again; a
     * bigint aggregate_id failed every claim (22P02). Domains count as their base type.
     */
    private void checkUncastFieldTypes(
        HikariDataSource pool, OutboxTable table, Set<String> present) throws SQLException {
      Map<OutboxColumns.Row, String> keys =
          Map.of(
              OutboxColumns.Row.MESSAGE_ID, COLUMN_MESSAGE_ID_CONFIG,
              OutboxColumns.Row.AGGREGATE_ID, COLUMN_AGGREGATE_ID_CONFIG);
      for (OutboxColumns.Row field : OutboxColumns.Row.values()) {
        String key = keys.get(field);
        if (key == null) {
          continue;
        }
        Object mapped = validValue(values, key);
        String column = mapped == null ? field.label : mapped.toString();
        if (!column.equals(field.label) || !present.contains(column)) {
          continue; // cast to text, or reported as missing
        }
        Optional<ColumnType> type = baseType(pool, table, column);
        // A string type (text, varchar, char, name, citext: category S) compares with text.
        if (type.isPresent() && type.get().category() != 'S') {
          error(
              key,
              "column "
                  + column
                  + " is of type "
                  + Printable.escape(type.get().name())
                  + ", and a column of the relay's own name is read as it is: make it text"
                  + " (ALTER TABLE "
                  + table.qualified()
                  + " ALTER COLUMN "
                  + column
                  + " TYPE text), or rename it and name it by "
                  + key
                  + ", which reads it as its text");
        }
      }
    }

    /**
     * A row without a message id cannot be relayed or parked (nothing names it): its claim fails,
     * and the task with it, at every claim. The relay's own tables declare the column NOT NULL; an
     * adopted one's may not (Debezium's table without a primary key).
     */
    private void checkMessageIdNotNull(
        HikariDataSource pool, OutboxTable table, Set<String> present) throws SQLException {
      String relayColumn = ColumnMapping.RELAY.messageId();
      Object mapped = validValue(values, COLUMN_MESSAGE_ID_CONFIG);
      String column = mapped == null ? relayColumn : mapped.toString();
      if (!present.contains(column)) {
        return; // reported as missing
      }
      // NOT NULL, or a CHECK that keeps the relay's rows (those with an instance key) non-null;
      // one NOT VALID holds for every row written after it, which the relay's rows are.
      String notNull = "(" + column + " IS NOT NULL)";
      try (Connection c = pool.getConnection();
          PreparedStatement ps =
              c.prepareStatement(
                  "SELECT a.attnotnull OR EXISTS (SELECT 1 FROM pg_constraint k"
                      + " WHERE k.conrelid = a.attrelid AND k.contype = 'c'"
                      + " AND regexp_replace(pg_get_constraintdef(k.oid), ' NOT VALID$', '')"
                      + " IN (?, ?, ?))"
                      + " FROM pg_attribute a WHERE a.attrelid = to_regclass(?)"
                      + " AND a.attname = ? AND NOT a.attisdropped")) {
        ps.setString(1, "CHECK (" + notNull + ")");
        ps.setString(2, "CHECK (((instance_key IS NULL) OR " + notNull + "))");
        ps.setString(3, "CHECK ((" + notNull + " OR (instance_key IS NULL)))");
        ps.setString(4, table.qualified());
        ps.setString(5, column);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next() && !rs.getBoolean(1)) {
            String key =
                column.equals(relayColumn) ? OUTBOX_TABLE_CONFIG : COLUMN_MESSAGE_ID_CONFIG;
            error(
                key,
                "the message id column "
                    + column
                    + " of "
                    + OUTBOX_TABLE_CONFIG
                    + " allows NULL: a row without a message id cannot be relayed, and its claim"
                    + " would fail the task; add ALTER TABLE ... ADD CONSTRAINT ... CHECK"
                    + " (instance_key IS NULL OR "
                    + column
                    + " IS NOT NULL) NOT VALID (reads no row, so it holds the table's lock for a"
                    + " moment only), or declare the column NOT NULL");
          }
        }
      }
    }

    /** The table's column names. */
    private static Set<String> presentColumns(HikariDataSource pool, OutboxTable table)
        throws SQLException {
      return presentColumns(pool, table.qualified());
    }

    private static Set<String> presentColumns(HikariDataSource pool, String qualified)
        throws SQLException {
      return new HashSet<>(
          strings(
              pool,
              "SELECT attname FROM pg_attribute"
                  + " WHERE attrelid = to_regclass(?) AND attnum > 0 AND NOT attisdropped",
              qualified));
    }

    /** A column's type through domains over domains: PostgreSQL's category and its name. */
    private record ColumnType(char category, String name) {}

    /** {@code column}'s base type, or empty when the table has no such column. */
    private static Optional<ColumnType> baseType(
        HikariDataSource pool, OutboxTable table, String column) throws SQLException {
      List<String> type =
          strings(
              pool,
              "WITH RECURSIVE base(oid, typbasetype) AS ("
                  + " SELECT t.oid, t.typbasetype"
                  + " FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
                  + " WHERE a.attrelid = to_regclass(?) AND a.attname = ? AND NOT a.attisdropped"
                  + " UNION ALL SELECT t.oid, t.typbasetype"
                  + " FROM base b JOIN pg_type t ON t.oid = b.typbasetype WHERE b.typbasetype <> 0)"
                  + " SELECT t.typcategory::text || format_type(b.oid, NULL)"
                  + " FROM base b JOIN pg_type t ON t.oid = b.oid WHERE b.typbasetype = 0",
              table.qualified(),
              column);
      return type.isEmpty()
          ? Optional.empty()
          : Optional.of(new ColumnType(type.get(0).charAt(0), type.get(0).substring(1)));
    }

    /** The first column of every row of a catalog query with text parameters. */
    private static List<String> strings(HikariDataSource pool, String sql, String... parameters)
        throws SQLException {
      List<String> values = new ArrayList<>();
      try (Connection c = pool.getConnection();
          PreparedStatement ps = c.prepareStatement(sql)) {
        for (int i = 0; i < parameters.length; i++) {
          ps.setString(i + 1, parameters[i]);
        }
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            values.add(rs.getString(1));
          }
        }
      }
      return values;
    }

    /** to_regclass takes the quoted name as a bind parameter: nothing user-supplied in SQL. */
    private static boolean tableExists(HikariDataSource pool, OutboxTable table)
        throws SQLException {
      return relationExists(pool, table.qualified());
    }

    private static boolean relationExists(HikariDataSource pool, String qualified)
        throws SQLException {
      return SchemaMigrator.relationExists(pool, qualified);
    }

    private void reportTableFailure(OutboxStoreException failure, OutboxTable table) {
      String state = stateSuffix(failure);
      if (failure.kind() == OutboxStoreException.Kind.PERMISSION) {
        // The table, or its schema history, which the version check reads first.
        error(
            OUTBOX_TABLE_CONFIG,
            CONNECTION_USER_CONFIG
                + " may not read "
                + OUTBOX_TABLE_CONFIG
                + " or its schema history "
                + Printable.escape(table.historyTable())
                + state);
      } else {
        error(
            OUTBOX_TABLE_CONFIG,
            "could not read the schema version of " + OUTBOX_TABLE_CONFIG + state);
      }
    }

    private static SQLException findSqlException(Throwable e) {
      Throwable t = e;
      for (int depth = 0; t != null && depth < 8; depth++, t = t.getCause()) {
        if (t instanceof SQLException sql) {
          return sql;
        }
      }
      return null;
    }

    /** A password in connection.password or in the URL's query string. */
    private boolean passwordGiven() {
      return password != null || DataSourceFactory.urlHasPassword(url);
    }

    private static String stateSuffix(OutboxStoreException failure) {
      return failure.sqlState() == null ? "" : " (SQLState " + failure.sqlState() + ")";
    }

    private void error(String key, String message) {
      values.get(key).addErrorMessage(message);
    }
  }
}
