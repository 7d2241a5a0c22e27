package dev.outboxrelay.config;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.postgres.DataSourceFactory;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.Postgres;
import dev.outboxrelay.testing.RefusingPooler;
import dev.outboxrelay.testing.SilentProxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigValue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link ConfigValidation} against a real PostgreSQL: each error lands on its own key, and no error
 * ever carries the URL, the password or the driver's message.
 */
class ConfigValidationTest {
  static final String PASSWORD_SENTINEL = "PW-SENTINEL-41c9";
  static final String URL_SENTINEL = "URL-SENTINEL-8d2e";

  /**
   * Port 1, where nothing listens: a free port found and let go could be taken meanwhile by a
   * broker, worker or database of a test class running in the other test JVM.
   */
  static final String CLOSED_PORT_URL =
      "jdbc:postgresql://127.0.0.1:1/app?sslpassword=" + URL_SENTINEL;

  /**
   * Valid settings for {@code jdbcUrl}, with sentinels in the URL (a credential the driver does not
   * use without SSL: a password there would override connection.password) and the password.
   */
  static Map<String, String> props(String jdbcUrl) {
    Map<String, String> props = new HashMap<>();
    props.put(
        "connection.url",
        jdbcUrl + (jdbcUrl.contains("?") ? "&" : "?") + "sslpassword=" + URL_SENTINEL);
    props.put("connection.user", Postgres.user());
    props.put("connection.password", PASSWORD_SENTINEL);
    props.put("instance.keys", "orders");
    props.put("connection.timeout.ms", "2000");
    return props;
  }

  static Map<String, String> offline() {
    Map<String, String> props = props("jdbc:postgresql://127.0.0.1:1/app");
    props.put("connection.url", CLOSED_PORT_URL);
    return props;
  }

  /** Validates, checks that nothing secret leaked, and returns the errors by key. */
  static Map<String, List<String>> errors(Map<String, String> props) {
    Config config = ConfigValidation.validate(props);
    Set<String> reported = new HashSet<>();
    for (ConfigValue value : config.configValues()) {
      assertTrue(reported.add(value.name()), "reported twice: " + value.name());
    }
    // Every key of the connector, and other keys only where they are wrong.
    assertTrue(reported.containsAll(OutboxSourceConfig.configDef().names()), reported.toString());
    Map<String, List<String>> errors = new TreeMap<>();
    for (ConfigValue value : config.configValues()) {
      if (!OutboxSourceConfig.configDef().names().contains(value.name())) {
        assertFalse(value.errorMessages().isEmpty(), value.name());
      }
      if (!value.errorMessages().isEmpty()) {
        errors.put(value.name(), value.errorMessages());
      }
    }
    for (List<String> messages : errors.values()) {
      for (String message : messages) {
        assertFalse(message.contains(PASSWORD_SENTINEL), message);
        assertFalse(message.contains(URL_SENTINEL), message);
        assertFalse(message.contains(PasswordRole.PASSWORD), message);
        assertFalse(message.contains("jdbc:postgresql://1"), message);
        assertFalse(message.contains("localhost:"), message);
        assertFalse(message.contains("FATAL"), message); // a server message
      }
    }
    return errors;
  }

  /** The URL as the validation response shows it. */
  private static Object shownUrl(Map<String, String> props) {
    return ConfigValidation.validate(props).configValues().stream()
        .filter(v -> v.name().equals("connection.url"))
        .findFirst()
        .orElseThrow()
        .value();
  }

  static String only(Map<String, List<String>> errors, String key) {
    assertEquals(Set.of(key), errors.keySet(), errors.toString());
    assertEquals(1, errors.get(key).size(), errors.toString());
    return errors.get(key).get(0);
  }

  static void migrate(String jdbcUrl, String table, String version) {
    try (HikariDataSource pool = Postgres.pool(jdbcUrl, 3)) {
      new SchemaMigrator(pool, OutboxTable.parse(table)).migrateTo(version);
    }
  }

  static void execute(String jdbcUrl, String sql) throws SQLException {
    try (HikariDataSource pool = Postgres.pool(jdbcUrl, 1);
        Connection c = pool.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  // Live: connection

  @Test
  void unreachableServerIsAnErrorOnTheUrl() {
    String message = only(errors(offline()), "connection.url");

    assertTrue(message.startsWith("could not connect to the database in connection.url"), message);
    assertTrue(message.contains("SQLState 08"), message);
  }

  @Test
  void unknownDatabaseIsAnErrorOnTheUrl() {
    String message = only(errors(props(Postgres.jdbcUrl("no_such_database"))), "connection.url");

    assertEquals("connection.url names a database that does not exist (SQLState 3D000)", message);
  }

  @Test
  void wrongPasswordIsAnErrorOnTheCredentials() {
    PasswordRole.ensureCreated();
    Map<String, String> props = props(Postgres.jdbcUrl("postgres"));
    props.put("connection.user", PasswordRole.NAME);
    // The URL's password (a sentinel too) would win over this one: both are wrong.
    props.put("connection.password", PASSWORD_SENTINEL);

    Map<String, List<String>> errors = errors(props);

    assertEquals(Set.of("connection.password", "connection.user"), errors.keySet());
    assertEquals(
        List.of("the database rejected connection.user or connection.password (SQLState 28P01)"),
        errors.get("connection.password"));
  }

  @Test
  void missingPasswordIsAnErrorOnThePassword() {
    PasswordRole.ensureCreated();
    Map<String, String> props = props(Postgres.jdbcUrl("postgres"));
    props.put("connection.url", Postgres.jdbcUrl("postgres")); // no password in the URL either
    props.put("connection.user", PasswordRole.NAME);
    props.remove("connection.password");

    String message = only(errors(props), "connection.password");

    assertEquals(
        "the database asks connection.user for a password and connection.password is not set"
            + " (SQLState 08004): set connection.password, preferably through a config provider",
        message);
  }

  @Test
  void unknownRoleIsAnErrorOnTheUser() {
    Map<String, String> props = props(Postgres.jdbcUrl("postgres"));
    props.put("connection.user", "no_such_role");

    String message = only(errors(props), "connection.user");

    assertEquals(
        "the database refused connection.user (SQLState 28000): check that the role exists, may"
            + " log in, and is admitted to this database from this host by pg_hba.conf",
        message);
  }

  @Test
  void rightPasswordPasses() throws SQLException {
    PasswordRole.ensureCreated();
    String url = Postgres.freshDatabase("config_role_ok");
    // It creates the table: CREATE on the schema (PostgreSQL 15 on gives PUBLIC none on public).
    execute(url, "GRANT CREATE ON SCHEMA public TO " + PasswordRole.NAME);
    Map<String, String> props = props(url);
    props.put("connection.url", props.get("connection.url").replaceAll("[?&]password=.*", ""));
    props.put("connection.user", PasswordRole.NAME);
    props.put("connection.password", PasswordRole.PASSWORD);
    props.put("schema.migrate.on.start", "true");

    assertEquals(Map.of(), errors(props));
  }

  /**
   * A cancelled concurrent pre-build leaves an INVALID index under the name, which the migration's
   * IF NOT EXISTS then keeps: the claims could not use it and would scan the table.
   */
  @Test
  void anInvalidIndexOfTheTableIsAnErrorOnTheTableNamingIt() throws SQLException {
    String url = Postgres.freshDatabase("config_invalid_index");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    assertEquals(Map.of(), errors(props(url)));
    execute(
        url,
        "UPDATE pg_index SET indisvalid = false"
            + " WHERE indexrelid = 'outbox_due_aggregate_idx'::regclass");

    assertEquals(
        "outbox.table has an invalid index, outbox_due_aggregate_idx (a concurrent build that"
            + " failed, or one still running): PostgreSQL never uses it; rebuild it with REINDEX"
            + " INDEX CONCURRENTLY, or drop it with DROP INDEX CONCURRENTLY and build it again (the"
            + " relay's own as `outbox-relay-cli schema-sql` shows)",
        only(errors(props(url)), "outbox.table"));
  }

  @Test
  void roleThatMayNotReadTheTableIsAnErrorOnTheTable() {
    PasswordRole.ensureCreated();
    String url = Postgres.freshDatabase("config_role_denied");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    Map<String, String> props = props(url);
    props.put("connection.url", url);
    props.put("connection.user", PasswordRole.NAME);
    props.put("connection.password", PasswordRole.PASSWORD);

    String message = only(errors(props), "outbox.table");

    assertEquals(
        "connection.user may not read outbox.table or its schema history outbox_schema_history"
            + " (SQLState 42501)",
        message);
  }

  /** The grants of the table but not its history's: the message names the history too. */
  @Test
  void aRoleThatMayNotReadTheSchemaHistoryIsToldItsName() throws SQLException {
    Map<String, String> props =
        grantedRole(
            Postgres.freshDatabase("config_role_no_history"),
            "GRANT SELECT, UPDATE, DELETE ON outbox",
            "GRANT SELECT, INSERT, DELETE ON outbox_published");

    assertEquals(
        "connection.user may not read outbox.table or its schema history outbox_schema_history"
            + " (SQLState 42501)",
        only(errors(props), "outbox.table"));
  }

  /** The grants of docs/deployment.md, step 2, for the password role on {@code url}'s table. */
  private static Map<String, String> grantedRole(String url, String... grants) throws SQLException {
    return grantedRoleAt(url, SchemaMigrator.CURRENT_VERSION, grants);
  }

  /** As {@link #grantedRole}, the table at schema {@code version} (none: no table). */
  private static Map<String, String> grantedRoleAt(String url, String version, String... grants)
      throws SQLException {
    PasswordRole.ensureCreated();
    // PUBLIC may not create in schema public, as from PostgreSQL 15 on (13 and 14 let it).
    execute(url, "REVOKE CREATE ON SCHEMA public FROM PUBLIC");
    if (version != null) {
      migrate(url, "outbox", version);
    }
    for (String grant : grants) {
      execute(url, grant + " TO " + PasswordRole.NAME);
    }
    Map<String, String> props = props(url);
    props.put("connection.url", url);
    props.put("connection.user", PasswordRole.NAME);
    props.put("connection.password", PasswordRole.PASSWORD);
    return props;
  }

  @Test
  void theDocumentedGrantsPass() throws SQLException {
    Map<String, String> props =
        grantedRole(
            Postgres.freshDatabase("config_role_granted"),
            "GRANT SELECT, UPDATE, DELETE ON outbox",
            "GRANT SELECT, INSERT, DELETE ON outbox_published",
            "GRANT SELECT ON outbox_schema_history");

    assertEquals(Map.of(), errors(props));
  }

  /**
   * Exactly once, a task's start creates a temporary table (its epoch's commit made durable): a
   * role that may not (TEMPORARY revoked from PUBLIC on the database) is an error on the user,
   * naming the grant, also where the task is to create the outbox table; at least once it is not
   * needed.
   */
  @Test
  void exactlyOnceARoleThatMayNotCreateATemporaryTableIsAnErrorOnTheUser() throws SQLException {
    String database = "config_role_no_temp";
    String url = Postgres.createDatabase(database);
    Map<String, String> props =
        grantedRole(
            url,
            "GRANT SELECT, UPDATE, DELETE ON outbox",
            "GRANT SELECT, INSERT, DELETE ON outbox_published",
            "GRANT SELECT ON outbox_schema_history");
    execute(url, "REVOKE TEMPORARY ON DATABASE " + database + " FROM PUBLIC");
    assertEquals(Map.of(), errors(props), "at least once");

    props.put("delivery.guarantee", "exactly-once");
    props.put("exactly.once.support", "required");
    String expected =
        "connection.user may not create temporary tables in the database (TEMPORARY, which PUBLIC"
            + " has unless revoked), which an exactly-once task's start does to commit its epoch"
            + " durably: GRANT TEMPORARY ON DATABASE "
            + database
            + " to it";
    assertEquals(expected, only(errors(props), "connection.user"));

    // Also where the task is to create the table (it was judged only with the table's grants).
    props.put("outbox.table", "new_outbox");
    props.put("schema.migrate.on.start", "true");
    assertEquals(expected, errors(props).get("connection.user").get(0));

    execute(url, "GRANT TEMPORARY ON DATABASE " + database + " TO " + PasswordRole.NAME);
    props.put("outbox.table", "outbox");
    props.remove("schema.migrate.on.start");
    assertEquals(Map.of(), errors(props), "granted");
  }

  /**
   * Exactly once, a DDL event trigger that forbids DDL refuses the temporary table each task's
   * start creates: an error on delivery.guarantee naming the table, not the trigger's message; at
   * least once, and once the trigger lets it through, none.
   */
  @Test
  void exactlyOnceADdlEventTriggerRefusingTheEpochTableIsAnErrorOnTheGuarantee()
      throws SQLException {
    String url = Postgres.freshDatabase("config_no_ddl");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    Map<String, String> props = props(url);
    execute(
        url,
        "CREATE FUNCTION no_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN"
            + " RAISE EXCEPTION 'secret-payload DDL refused'; END $$");
    execute(url, "CREATE EVENT TRIGGER no_ddl ON ddl_command_start EXECUTE FUNCTION no_ddl()");
    try {
      assertEquals(Map.of(), errors(props), "at least once");

      props.put("delivery.guarantee", "exactly-once");
      props.put("exactly.once.support", "required");
      assertEquals(
          "the database refused the temporary table an exactly-once task's start creates to commit"
              + " its epoch durably (outbox_relay_epoch, dropped at its commit), so every task's"
              + " start would fail (SQLState P0001): a DDL event trigger that forbids DDL must let"
              + " this role create temporary tables",
          only(errors(props), "delivery.guarantee"));

      execute(url, "ALTER EVENT TRIGGER no_ddl DISABLE");
      assertEquals(Map.of(), errors(props), "trigger disabled");
    } finally {
      execute(url, "DROP EVENT TRIGGER no_ddl");
    }
  }

  /**
   * A name its tasks' lease owners cannot tell from another connector's (over 100 characters, or
   * holding '/task-') is an error on name, in either mode (an exactly-once connector of either name
   * releases the other's live leases at each start), naming neither it nor the other.
   */
  @Test
  void aNameLeaseOwnersCannotTellApartIsAnErrorOnName() {
    for (String name : List.of("orders/task-eu", "n".repeat(101))) {
      for (boolean exactlyOnce : List.of(false, true)) {
        Map<String, String> props = offline();
        props.put("name", name);
        if (exactlyOnce) {
          props.put("delivery.guarantee", "exactly-once");
          props.put("exactly.once.support", "required");
        }
        List<String> said = errors(props).get("name");
        assertEquals(1, said == null ? 0 : said.size(), name);
        assertTrue(said.get(0).startsWith("name "), said.get(0));
        assertTrue(said.get(0).contains("lease owners could not be told"), said.get(0));
        assertFalse(said.get(0).contains(name), said.get(0));
      }
    }
    Map<String, String> fine = offline();
    fine.put("name", "orders-task-eu");
    fine.put("delivery.guarantee", "exactly-once");
    fine.put("exactly.once.support", "required");
    assertEquals(null, errors(fine).get("name"));
  }

  /**
   * A login a connection pooler refuses itself (PgBouncer, a password its auth file does not take)
   * comes back as SQLState 08P01: named as such on the URL, not as a server that is away.
   */
  @Test
  void aLoginAPoolerRefusesIsAnErrorNamingThePooler() {
    try (RefusingPooler pooler = RefusingPooler.start()) {
      Map<String, String> props = props(pooler.jdbcUrl("app"));
      assertEquals(
          "the server at connection.url refused the connection (SQLState 08P01), as a connection"
              + " pooler such as PgBouncer refuses one itself (its log says why: connection.user"
              + " or connection.password its authentication does not take, an unknown database,"
              + " max_client_conn, a startup parameter it does not accept such as"
              + " extra_float_digits, which ignore_startup_parameters lets through, or the"
              + " database behind it unreachable), or it is no PostgreSQL server",
          only(errors(props), "connection.url"));
    }
  }

  /**
   * A server starting up, shutting down or in recovery (SQLState class 57P: a failover, a restart)
   * is no fault of the config: its database checks are skipped with a WARN, as for a full server.
   * Refused, every config update was blocked meanwhile, and a standalone worker, which validates
   * its connectors at start, did not start.
   */
  @Test
  void aServerStartingUpSkipsTheDatabaseChecksInsteadOfRefusingTheUrl() {
    try (RefusingPooler starting =
        RefusingPooler.answering("57P03", "the database system is starting up")) {
      long mark = LogCapture.get().mark();
      assertEquals(Map.of(), errors(props(starting.jdbcUrl("app"))));
      assertEquals(
          1,
          LogCapture.get()
              .matching(
                  mark,
                  e ->
                      e.fullText().contains("reason=VALIDATION_DATABASE_UNAVAILABLE")
                          && e.fullText().contains("SQLState 57P03"))
              .size());
    }
  }

  /** Without the check this role passed validation and failed its first claim. */
  @Test
  void aRoleThatMayOnlyReadIsAnErrorOnTheTableNamingWhatItLacks() throws SQLException {
    Map<String, String> props =
        grantedRole(
            Postgres.freshDatabase("config_role_read_only"),
            "GRANT SELECT ON outbox",
            "GRANT SELECT ON outbox_published",
            "GRANT SELECT ON outbox_schema_history");

    assertEquals(
        "connection.user lacks UPDATE, DELETE on outbox.table and INSERT, DELETE on its published"
            + " log outbox_published, which a task needs: grant them as docs/deployment.md shows",
        only(errors(props), "outbox.table"));
  }

  /** The outbox columns the relay writes, as docs/deployment.md lists them for a column grant. */
  private static final String WRITTEN_COLUMNS =
      "status, attempts, abandoned_claims, isolated, next_attempt_at, lease_owner, lease_token,"
          + " lease_expires_at, last_failure_code, kafka_topic, kafka_partition, kafka_offset,"
          + " parked_at, lease_epoch, claim_batch";

  /**
   * Only retention deletes from the published log; UPDATE granted on each column the relay writes
   * counts as held.
   */
  @Test
  void withoutRetentionTheLogNeedsNoDeleteAndColumnGrantsCount() throws SQLException {
    Map<String, String> props =
        grantedRole(
            Postgres.freshDatabase("config_role_no_retention"),
            "GRANT SELECT, DELETE ON outbox",
            "GRANT UPDATE (" + WRITTEN_COLUMNS + ") ON outbox",
            "GRANT SELECT, INSERT ON outbox_published",
            "GRANT SELECT ON outbox_schema_history");
    assertEquals(
        "connection.user lacks DELETE on its published log outbox_published, which a task needs:"
            + " grant them as docs/deployment.md shows",
        only(errors(props), "outbox.table"));

    props.put("retention.published.ms", "-1");

    assertEquals(Map.of(), errors(props));
  }

  /** A retention of 0 keeps no log: the relay never inserts into it, and needs no INSERT. */
  @Test
  void withoutAPublishedLogTheLogNeedsNoInsert() throws SQLException {
    Map<String, String> props =
        grantedRole(
            Postgres.freshDatabase("config_role_no_log"),
            "GRANT SELECT, UPDATE, DELETE ON outbox",
            "GRANT SELECT, DELETE ON outbox_published",
            "GRANT SELECT ON outbox_schema_history");
    assertEquals(
        "connection.user lacks INSERT on its published log outbox_published, which a task needs:"
            + " grant them as docs/deployment.md shows",
        only(errors(props), "outbox.table"));

    props.put("retention.published.ms", "0");

    assertEquals(Map.of(), errors(props));
  }

  /** UPDATE on some of the columns a claim writes would fail the first claim: it is not held. */
  @Test
  void updateOnSomeOfTheWrittenColumnsIsAnError() throws SQLException {
    Map<String, String> props =
        grantedRole(
            Postgres.freshDatabase("config_role_some_columns"),
            "GRANT SELECT, DELETE ON outbox",
            "GRANT UPDATE (lease_owner, lease_token, lease_expires_at) ON outbox",
            "GRANT SELECT, INSERT, DELETE ON outbox_published",
            "GRANT SELECT ON outbox_schema_history");

    assertEquals(
        "connection.user lacks UPDATE on outbox.table, which a task needs: grant them as"
            + " docs/deployment.md shows",
        only(errors(props), "outbox.table"));
  }

  @Test
  void malformedUrlIsAnErrorOnTheUrl() {
    Map<String, String> props = offline();
    props.put("connection.url", "jdbc:postgresql://localhost:port/" + URL_SENTINEL);

    // Refused before the driver reads it (its own message would quote the whole URL).
    String message = only(errors(props), "connection.url");
    assertTrue(message.startsWith("connection.url names a port that is not a number"), message);
    assertFalse(message.contains(URL_SENTINEL), message);
  }

  @Test
  void liveChecksAreSkippedWhileConnectionKeysAreInvalid() {
    Map<String, String> props = offline();
    props.put("connection.timeout.ms", "1");

    only(errors(props), "connection.timeout.ms"); // no attempt, so no error on the URL
  }

  @Test
  void otherInvalidKeysDoNotSkipLiveChecks() {
    Map<String, String> props = offline();
    props.put("poll.interval.ms", "1");

    assertEquals(Set.of("connection.url", "poll.interval.ms"), errors(props).keySet());
  }

  /**
   * A server that falls silent after the login (a half-open network path, a pooler that accepts
   * logins without a server behind it) fails the check within its timeout: the first read had no
   * timeout, and validation outlasted Connect's REST call.
   */
  @Test
  void aServerSilentAfterTheLoginIsAnErrorOnTheUrlWithinTheTimeout() {
    assertSilentServerIsAnErrorOnTheUrl("config_silent", "", "pg_is_in_recovery");
  }

  /**
   * Validation through a proxy that falls silent once the client has sent {@code silentAfter}, with
   * {@code urlParameters} after the URL, answers, and names the URL.
   */
  private static void assertSilentServerIsAnErrorOnTheUrl(
      String databasePrefix, String urlParameters, String silentAfter) {
    try (SilentProxy proxy = SilentProxy.to(Postgres.server().getPort())) {
      String database = Postgres.freshDatabase(databasePrefix);
      Map<String, String> props =
          props(proxy.jdbcUrl(database.substring(database.lastIndexOf('/') + 1)) + urlParameters);
      props.put("connection.timeout.ms", "1000");
      proxy.silenceAfterClientSends(silentAfter);
      CompletableFuture<Map<String, List<String>>> validation =
          CompletableFuture.supplyAsync(() -> errors(props));

      await("validation to answer").atMost(PoolTimeoutsTest.HANG).until(validation::isDone);
      assertTrue(proxy.silenced());
      String message = only(validation.join(), "connection.url");
      assertTrue(message.startsWith("could not connect"), message);
    }
  }

  /**
   * A server silent from the start (a firewall that drops, a pooler that never answers the login)
   * fails the check within the validation's timeout even when the URL asks the driver to wait
   * minutes: its loginTimeout, connectTimeout and socketTimeout take precedence in a task's pool,
   * and validation outlasted Connect's REST call.
   */
  @Test
  void theUrlsOwnTimeoutsDoNotHoldTheChecks() {
    // Silent after the startup message: no login is ever answered.
    assertSilentServerIsAnErrorOnTheUrl(
        "config_silent_login", "?loginTimeout=600&connectTimeout=600&socketTimeout=600", "user");
  }

  /**
   * The live checks together end within their deadline, answered or not: a server that answers each
   * check just within its own timeout could otherwise hold validation past Connect's REST call.
   * Here the login is never answered, and the deadline shorter than its timeout.
   */
  @Test
  void checksThatOutlastTheirDeadlineAreOneErrorOnTheUrl() {
    try (SilentProxy proxy = SilentProxy.to(Postgres.server().getPort())) {
      String database = Postgres.freshDatabase("config_deadline");
      Map<String, String> props =
          props(proxy.jdbcUrl(database.substring(database.lastIndexOf('/') + 1)));
      props.put("connection.timeout.ms", "5000");
      proxy.silenceAfterClientSends("user");
      Map<String, ConfigValue> values = OutboxSourceConfig.configDef().validateAll(props);

      ConfigValidation.runLiveChecks(values, props, Duration.ofMillis(50));

      List<String> errors = values.get("connection.url").errorMessages();
      assertEquals(1, errors.size(), errors.toString());
      assertTrue(
          errors.get(0).startsWith("the database did not answer validation's checks within"),
          errors.get(0));
    }
  }

  /** Reported on payload.format, beside what the live checks find. */
  @Test
  void aPayloadFormatTheValueConverterDoesNotWriteIsAnErrorOnTheFormat() {
    Map<String, String> props = offline();
    props.put("value.converter", ConfigChecks.STRING_CONVERTER);

    Map<String, List<String>> errors = errors(props);
    assertEquals(Set.of("connection.url", "payload.format"), errors.keySet());
    assertTrue(
        errors.get("payload.format").get(0).contains("StringConverter would send"),
        errors.toString());
  }

  /**
   * A schemaless JSON value has no schema for a registry's converter: Protobuf's fails every
   * record, Avro's writes a generic record past the size the relay checked. Inferred, or given a
   * schema by a transform, it is written.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "io.confluent.connect.avro.AvroConverter",
        "io.confluent.connect.protobuf.ProtobufConverter",
        "io.confluent.connect.json.JsonSchemaConverter"
      })
  void aSchemalessJsonValueForASchemaConverterIsAnErrorOnTheSchemaSetting(String converter) {
    Map<String, String> props = offline();
    props.put("payload.format", "json");
    props.put("value.converter", converter);

    Map<String, List<String>> errors = errors(props);
    assertEquals(Set.of("connection.url", "payload.json.schema"), errors.keySet());
    assertTrue(
        errors
            .get("payload.json.schema")
            .get(0)
            .startsWith(
                "payload.json.schema must be inferred with payload.format=json and"
                    + " value.converter="
                    + converter
                    + " (it is none)"),
        errors.toString());

    props.put("payload.json.schema", "inferred");
    assertEquals(Set.of("connection.url"), errors(props).keySet());
    props.remove("payload.json.schema");
    props.put("transforms", "schema"); // a transform may give the value a schema
    props.put("transforms.schema.type", "com.example.JsonSchemaTransform");
    assertEquals(Set.of("connection.url"), errors(props).keySet());
  }

  /** The key is the aggregate id as a string: a converter of another type fails every record. */
  @Test
  void aKeyConverterThatCannotWriteTextIsAnErrorOnTheKeyConverter() {
    Map<String, String> props = offline();
    props.put("key.converter", ConfigChecks.BYTE_ARRAY_CONVERTER);
    Map<String, List<String>> errors = errors(props);
    assertEquals(Set.of("connection.url", "key.converter"), errors.keySet());
    assertTrue(
        errors
            .get("key.converter")
            .get(0)
            .startsWith(
                "key.converter=org.apache.kafka.connect.converters.ByteArrayConverter cannot"
                    + " write the record key"),
        errors.toString());

    props.put("key.converter", "Long"); // Connect's alias of LongConverter
    assertEquals(Set.of("connection.url", "key.converter"), errors(props).keySet());

    props.put("transforms", "cast"); // a transform may cast the key
    props.put("transforms.cast.type", "org.apache.kafka.connect.transforms.Cast$Key");
    props.put("transforms.cast.spec", "int64");
    assertEquals(Set.of("connection.url"), errors(props).keySet());

    props.remove("transforms");
    props.put("key.converter", ConfigChecks.STRING_CONVERTER);
    assertEquals(Set.of("connection.url"), errors(props).keySet());
  }

  /**
   * The value is the payload (bytes, a string or a struct) and every record carries string headers:
   * a value converter of one number type, or a header converter of bytes or one number type, fails
   * every record in Connect's conversion.
   */
  @Test
  void valueAndHeaderConvertersThatCannotWriteTheRecordAreErrorsOnThem() {
    Map<String, String> props = offline();
    props.put("value.converter", "org.apache.kafka.connect.converters.LongConverter");
    props.put("header.converter", ConfigChecks.BYTE_ARRAY_CONVERTER);
    Map<String, List<String>> errors = errors(props);
    assertEquals(Set.of("connection.url", "value.converter", "header.converter"), errors.keySet());
    assertTrue(
        errors
            .get("value.converter")
            .get(0)
            .startsWith(
                "value.converter=org.apache.kafka.connect.converters.LongConverter cannot write"
                    + " the record value"),
        errors.toString());
    assertTrue(
        errors
            .get("header.converter")
            .get(0)
            .startsWith(
                "header.converter=org.apache.kafka.connect.converters.ByteArrayConverter cannot"
                    + " write the record's headers"),
        errors.toString());

    props.put("header.converter", "Integer"); // Connect's alias of IntegerConverter
    assertEquals(
        Set.of("connection.url", "value.converter", "header.converter"), errors(props).keySet());

    props.put("transforms", "cast"); // a transform may change the value, or drop the headers
    props.put("transforms.cast.type", "org.apache.kafka.connect.transforms.Cast$Value");
    props.put("transforms.cast.spec", "int64");
    assertEquals(Set.of("connection.url"), errors(props).keySet());

    props.remove("transforms");
    props.put("value.converter", ConfigChecks.BYTE_ARRAY_CONVERTER);
    props.put("header.converter", "org.apache.kafka.connect.storage.SimpleHeaderConverter");
    assertEquals(Set.of("connection.url"), errors(props).keySet());
  }

  /**
   * Above 5 requests in flight, order cannot be kept: an idempotent (or transactional) producer
   * refuses to start, and Connect's producers are not idempotent by default. 2 to 5 is judged by
   * idempotence (a warning at start when the worker decides).
   */
  @Test
  void moreThanFiveRequestsInFlightWithOrderingOnIsAnError() {
    Map<String, String> props = offline();
    props.put("producer.override.max.in.flight.requests.per.connection", "6");
    props.put("producer.override.enable.idempotence", "true");
    Map<String, List<String>> errors = errors(props);
    assertEquals(
        Set.of("connection.url", "producer.override.max.in.flight.requests.per.connection"),
        errors.keySet());
    assertEquals(1, errors.get("producer.override.max.in.flight.requests.per.connection").size());
    assertTrue(
        errors
            .get("producer.override.max.in.flight.requests.per.connection")
            .get(0)
            .startsWith(
                "producer.override.max.in.flight.requests.per.connection above 5 with"
                    + " ordering.enabled=true cannot work"),
        errors.toString());

    props.put("producer.override.enable.idempotence", "false"); // one error, not two
    assertEquals(
        1, errors(props).get("producer.override.max.in.flight.requests.per.connection").size());

    props.put("producer.override.max.in.flight.requests.per.connection", "5");
    props.put("producer.override.enable.idempotence", "true");
    assertEquals(Set.of("connection.url"), errors(props).keySet());

    props.put("producer.override.max.in.flight.requests.per.connection", "6");
    props.put("ordering.enabled", "false"); // no order to keep, and no idempotence asked for
    props.remove("producer.override.enable.idempotence");
    assertEquals(Set.of("connection.url"), errors(props).keySet());
  }

  /**
   * Exactly once with transaction.boundary=interval: an interval at or past the transaction timeout
   * leaves every transaction open until the broker aborts it.
   */
  @Test
  void anIntervalAtOrPastTheTransactionTimeoutIsAnErrorOnTheInterval() {
    Map<String, String> props = offline();
    props.put("delivery.guarantee", "exactly-once");
    props.put("exactly.once.support", "required");
    props.put("transaction.boundary", "interval");
    props.put("transaction.boundary.interval.ms", "60000");
    props.put("producer.override.transaction.timeout.ms", "60000");
    Map<String, List<String>> errors = errors(props);
    assertEquals(Set.of("connection.url", "transaction.boundary.interval.ms"), errors.keySet());
    assertEquals(
        "transaction.boundary.interval.ms (60000 ms) must be below"
            + " producer.override.transaction.timeout.ms (60000 ms) with"
            + " transaction.boundary=interval: every transaction would still be open when the"
            + " broker aborts it, and the task fail at every restart",
        errors.get("transaction.boundary.interval.ms").get(0));

    props.put("transaction.boundary.interval.ms", "10000");
    assertEquals(Set.of("connection.url"), errors(props).keySet());
    props.put("transaction.boundary.interval.ms", "120000");
    props.remove("producer.override.transaction.timeout.ms"); // the worker's: not seen here
    assertEquals(Set.of("connection.url"), errors(props).keySet());
  }

  /**
   * Not the payload as a header (read whole by every claim, past payload.max.bytes, and sent
   * twice), nor the lease's fencing state.
   */
  @Test
  void thePayloadOrALeaseColumnAsAHeaderIsAnErrorNamingTheEntry() {
    Map<String, String> props = offline();
    props.put("column.additional.placement", "correlation_id:header:corr,payload:header:p");
    Map<String, List<String>> errors = errors(props);
    assertEquals(Set.of("connection.url", "column.additional.placement"), errors.keySet());
    assertEquals(
        "column.additional.placement entry 2 names the payload column: a claim would read every"
            + " payload whole as a header, past payload.max.bytes, and send it twice",
        errors.get("column.additional.placement").get(0));

    props.put("column.additional.placement", "lease_token:header:t");
    assertEquals(
        List.of(
            "column.additional.placement entry 1 names the relay's lease column lease_token: its"
                + " fencing state, not the message's"),
        errors(props).get("column.additional.placement"));

    props.put("column.additional.placement", "correlation_id:header:corr,created_at:header");
    assertEquals(Set.of("connection.url"), errors(props).keySet());
  }

  /**
   * Exactly once, offsets in one store: with a connector's own offsets topic, Connect copies each
   * offset to the worker's topic outside the transaction, where a recovery could read an aborted
   * one.
   */
  @Test
  void separateOffsetsAreAnErrorInExactlyOnceModeOnly() {
    Map<String, String> props = offline();
    props.put("offsets.storage.topic", "orders-relay-offsets");
    props.put("producer.override.bootstrap.servers", "other-cluster:9092");
    assertEquals(
        Set.of("connection.url"), errors(props).keySet(), "at least once: no offsets read");

    props.put("delivery.guarantee", "exactly-once");
    props.put("exactly.once.support", "required");
    Map<String, List<String>> errors = errors(props);
    assertEquals(
        Set.of("connection.url", "offsets.storage.topic", "producer.override.bootstrap.servers"),
        errors.keySet());
    assertTrue(
        errors
            .get("offsets.storage.topic")
            .get(0)
            .startsWith(
                "offsets.storage.topic must not be set with delivery.guarantee=exactly-once,"
                    + " whatever its value"),
        errors.toString());

    props.remove("offsets.storage.topic");
    props.remove("producer.override.bootstrap.servers");
    assertEquals(Set.of("connection.url"), errors(props).keySet());
  }

  // Live: table

  @Test
  void missingTableIsAnErrorOnTheTableNamingTheFix() {
    String message = only(errors(props(Postgres.freshDatabase("config_missing"))), "outbox.table");

    assertEquals(
        "outbox.table does not exist: set schema.migrate.on.start=true, run `outbox-relay-cli"
            + " migrate --table outbox`, or apply what `outbox-relay-cli schema-sql --table"
            + " outbox` prints with your own migration tool",
        message);
  }

  @Test
  void missingTableInMissingSchemaIsAnErrorOnTheTable() {
    Map<String, String> props = props(Postgres.freshDatabase("config_missing_schema"));
    props.put("outbox.table", "relay.outbox");

    String message = only(errors(props), "outbox.table");
    assertTrue(message.startsWith("outbox.table does not exist"), message);
  }

  @Test
  void missingTableIsFineWhenTheConnectorCreatesIt() {
    Map<String, String> props = props(Postgres.freshDatabase("config_create"));
    props.put("schema.migrate.on.start", "true");

    assertEquals(Map.of(), errors(props));
  }

  /** Without the check the task failed its first poll, with a hint to set what was set. */
  @Test
  void migratingIntoAMissingSchemaIsAnErrorOnTheTable() {
    Map<String, String> props = props(Postgres.freshDatabase("config_create_no_schema"));
    props.put("schema.migrate.on.start", "true");
    props.put("outbox.table", "relay.outbox");

    assertEquals(
        "outbox.table's schema relay does not exist, so schema.migrate.on.start could not create"
            + " the table in it: create the schema, or name one that exists",
        only(errors(props), "outbox.table"));
  }

  @Test
  void migratingWithNoSchemaOnTheSearchPathIsAnErrorOnTheTable() {
    Map<String, String> props = props(Postgres.freshDatabase("config_create_no_path"));
    props.put("schema.migrate.on.start", "true");
    String url = props.get("connection.url");
    props.put("connection.url", url + (url.contains("?") ? "&" : "?") + "currentSchema=nowhere");

    assertEquals(
        "no schema of connection.user's search_path exists, so schema.migrate.on.start could not"
            + " create outbox.table: name its schema in outbox.table (schema.table), or create the"
            + " search_path's schema",
        only(errors(props), "outbox.table"));
  }

  /** PostgreSQL 15 on gives PUBLIC no CREATE on schema public: the role may not create there. */
  @Test
  void creatingTheTableWithoutCreateOnItsSchemaIsAnErrorOnMigrating() throws SQLException {
    Map<String, String> props = grantedRoleAt(Postgres.freshDatabase("config_create_denied"), null);
    props.put("schema.migrate.on.start", "true");

    assertEquals(
        "connection.user lacks CREATE on schema public, which schema.migrate.on.start=true needs"
            + " to create the table: grant it, or run outbox-relay-cli migrate as a role that has"
            + " it and set schema.migrate.on.start=false (docs/deployment.md)",
        only(errors(props), "schema.migrate.on.start"));
  }

  /**
   * Index builds and ALTERs need the table's owner, Flyway's history lock and entries its SELECT,
   * INSERT and UPDATE; the later versions build indexes only, and need no CREATE on the schema.
   */
  @Test
  void migratingATableAnotherRoleOwnsIsAnErrorOnMigrating() throws SQLException {
    Map<String, String> props =
        grantedRoleAt(
            Postgres.freshDatabase("config_migrate_not_owner"),
            "13",
            "GRANT SELECT, UPDATE, DELETE ON outbox",
            "GRANT SELECT, INSERT, DELETE ON outbox_published",
            "GRANT SELECT ON outbox_schema_history");
    props.put("schema.migrate.on.start", "true");

    assertEquals(
        "connection.user lacks ownership of outbox.table and SELECT, INSERT and UPDATE on its"
            + " schema history outbox_schema_history, which schema.migrate.on.start=true needs to"
            + " migrate the table: grant them, or run outbox-relay-cli migrate as a role that has"
            + " them and set schema.migrate.on.start=false (docs/deployment.md)",
        only(errors(props), "schema.migrate.on.start"));

    props.put("schema.migrate.on.start", "false");
    assertEquals(Set.of("outbox.table"), errors(props).keySet(), "version 13: migrate it first");
  }

  /**
   * The owner of the table with Flyway's rights on the history (what the task's own hint asks for)
   * may migrate; below version 11 it must own the published log too, which versions 10 and 11
   * index.
   */
  @ParameterizedTest
  @ValueSource(strings = {"13", "10"})
  void theTablesOwnerWithWritesToTheHistoryMayMigrate(String version) throws SQLException {
    String url = Postgres.freshDatabase("config_migrate_owner_" + version);
    Map<String, String> props =
        grantedRoleAt(
            url,
            version,
            "GRANT SELECT, INSERT, DELETE ON outbox_published",
            "GRANT SELECT, INSERT, UPDATE ON outbox_schema_history");
    execute(url, "ALTER TABLE outbox OWNER TO " + PasswordRole.NAME);
    props.put("schema.migrate.on.start", "true");

    if (version.equals("13")) {
      assertEquals(Map.of(), errors(props));
      return;
    }
    assertEquals(
        "connection.user lacks ownership of its published log outbox_published, which"
            + " schema.migrate.on.start=true needs to migrate the table: grant it, or run"
            + " outbox-relay-cli migrate as a role that has it and set"
            + " schema.migrate.on.start=false (docs/deployment.md)",
        only(errors(props), "schema.migrate.on.start"));
    execute(url, "ALTER TABLE outbox_published OWNER TO " + PasswordRole.NAME);
    assertEquals(Map.of(), errors(props));
  }

  /** Such a table cannot be migrated at all: that one error, no list of rights to grant. */
  @Test
  void aTableWithoutHistoryGetsOneErrorOnMigratingWhateverTheRolesRights() throws SQLException {
    String url = externallyManagedTable("config_external_migrate_role");
    Map<String, String> props =
        grantedRoleAt(
            url,
            null,
            "GRANT SELECT, UPDATE, DELETE ON outbox",
            "GRANT SELECT, INSERT, DELETE ON outbox_published");
    props.put("schema.migrate.on.start", "true");

    String message = only(errors(props), "schema.migrate.on.start");
    assertTrue(
        message.startsWith("outbox.table exists but has no outbox-relay schema history"), message);
  }

  @Test
  void migratingAnOlderTableAsItsOwnerPasses() throws SQLException {
    String url = Postgres.freshDatabase("config_migrate_owner");
    Map<String, String> props =
        grantedRoleAt(
            url,
            "1",
            "GRANT SELECT, UPDATE, DELETE ON outbox",
            "GRANT SELECT ON outbox_schema_history");
    execute(url, "ALTER TABLE outbox OWNER TO " + PasswordRole.NAME);
    execute(url, "ALTER TABLE outbox_schema_history OWNER TO " + PasswordRole.NAME);
    props.put("schema.migrate.on.start", "true");
    Map<String, List<String>> errors = errors(props);
    assertEquals(
        "connection.user lacks CREATE on schema public, which schema.migrate.on.start=true needs"
            + " to migrate the table: grant it, or run outbox-relay-cli migrate as a role that has"
            + " it and set schema.migrate.on.start=false (docs/deployment.md)",
        only(errors, "schema.migrate.on.start"),
        "version 1 still creates functions and the published log");

    execute(url, "GRANT CREATE ON SCHEMA public TO " + PasswordRole.NAME);
    assertEquals(Map.of(), errors(props));
  }

  @Test
  void currentTablePasses() {
    String url = Postgres.freshDatabase("config_current");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);

    assertEquals(Map.of(), errors(props(url)));
  }

  @Test
  void currentTableInItsOwnSchemaPasses() throws SQLException {
    String url = Postgres.freshDatabase("config_schema");
    execute(url, "CREATE SCHEMA relay");
    migrate(url, "relay.events", SchemaMigrator.CURRENT_VERSION);
    Map<String, String> props = props(url);
    props.put("outbox.table", "relay.events");

    assertEquals(Map.of(), errors(props));
  }

  @Test
  void olderTableIsAnErrorOnTheTableNamingTheFix() {
    String url = Postgres.freshDatabase("config_older");
    migrate(url, "outbox", "1");

    String message = only(errors(props(url)), "outbox.table");

    assertEquals(
        "outbox.table has schema version 1 but this connector needs version "
            + SchemaMigrator.CURRENT_VERSION
            + ": set schema.migrate.on.start=true, or run `outbox-relay-cli migrate --table"
            + " outbox`",
        message);
  }

  @Test
  void olderTableIsFineWhenTheConnectorUpgradesIt() {
    String url = Postgres.freshDatabase("config_upgrade");
    migrate(url, "outbox", "1");
    Map<String, String> props = props(url);
    props.put("schema.migrate.on.start", "true");

    assertEquals(Map.of(), errors(props));
  }

  /**
   * As a task starts on it (SCHEMA_NEWER_THAN_PLUGIN): in a rolling upgrade, a worker still on the
   * older plugin validates each configuration update it receives, after a newer task migrated.
   */
  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void aNewerTablePassesAsATaskStartsOnIt(boolean migrateOnStart) throws SQLException {
    String url = Postgres.freshDatabase("config_newer");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    execute(
        url,
        "INSERT INTO outbox_schema_history (installed_rank, version, description, type, script,"
            + " checksum, installed_by, execution_time, success)"
            + " VALUES (100, '99', 'from the future', 'SQL', 'V99__future.sql', 0, 'test', 0,"
            + " true)");
    Map<String, String> props = props(url);
    props.put("schema.migrate.on.start", Boolean.toString(migrateOnStart));

    assertEquals(Map.of(), errors(props));
  }

  /**
   * A schema history whose table was dropped: migrations would find nothing to apply, and the task
   * would fail at its first claim; validation says so, migrating or not.
   */
  @Test
  void aHistoryWithoutItsTableIsAnError() throws SQLException {
    String url = Postgres.freshDatabase("config_history_only");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    execute(url, "DROP TABLE outbox CASCADE");
    Map<String, String> props = props(url);
    props.put("schema.migrate.on.start", "true");

    assertEquals(
        "outbox.table does not exist, though its schema history (outbox_schema_history) does:"
            + " restore the table, or drop the history and let the connector create the table"
            + " anew",
        only(errors(props), "outbox.table"));
  }

  /** The outbox table as docs/schema.sql creates it: current, without outbox-relay's history. */
  static String externallyManagedTable(String prefix) throws SQLException {
    String url = Postgres.freshDatabase(prefix);
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    execute(url, "DROP TABLE outbox_schema_history");
    return url;
  }

  @Test
  void aUserOrPasswordInTheUrlBesideItsKeyIsAnErrorOnTheKeyAndTheUrlIsNotShown() {
    Map<String, String> props = offline();
    props.put("connection.url", CLOSED_PORT_URL + "&user=app&password=" + URL_SENTINEL + "-other");

    assertEquals(
        Map.of(
            "connection.user",
            List.of(
                "connection.url names a user too, and the driver would take the URL's: give the"
                    + " user in one place, connection.user"),
            "connection.password",
            List.of(
                "connection.url holds a password too, and the driver would take the URL's: give"
                    + " the password in one place, connection.password")),
        errors(props));
    assertEquals(ConfigValidation.HIDDEN_URL, shownUrl(props));
  }

  /**
   * A port that is not a number (a user:password pasted without its '@host') is an error on the
   * URL, the URL is not shown, and the driver, which would log the port as it is, never reads it.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "jdbc:postgresql://app:" + URL_SENTINEL + "/appdb",
        "jdbc:postgresql://db1:5432,app:" + URL_SENTINEL + "/appdb",
        "jdbc:postgresql://app:/appdb",
        "jdbc:postgresql://app:70000/appdb",
        "jdbc:postgresql://app:" + URL_SENTINEL + "/appdb?sslmode=disable"
      })
  void aPortThatIsNotANumberIsAnErrorOnTheUrlWhichIsNotShown(String url) {
    Map<String, String> props = offline();
    props.put("connection.url", url);
    long mark = LogCapture.get().mark();

    String message = only(errors(props), "connection.url");
    assertTrue(message.startsWith("connection.url names a port that is not a number"), message);
    assertFalse(message.contains(URL_SENTINEL), message);
    assertEquals(ConfigValidation.HIDDEN_URL, shownUrl(props));
    assertEquals(
        List.of(), LogCapture.get().matching(mark, e -> e.fullText().contains(URL_SENTINEL)));
  }

  @Test
  void portsOfEveryFormTheDriverReadsPass() {
    for (String url :
        List.of(
            "jdbc:postgresql://db:5432/app",
            "jdbc:postgresql://db/app",
            "jdbc:postgresql://[::1]:5432/app",
            "jdbc:postgresql://[::1]/app",
            "jdbc:postgresql://db1:5432,db2:6543/app?targetServerType=primary",
            "jdbc:postgresql:app")) {
      assertTrue(DataSourceFactory.portsAreNumbers(url), url);
    }
  }

  /**
   * A user and password before the host (pasted from an application's libpq URL) is an error on the
   * URL, and the URL is not shown: the password would be, by a response that hides the password
   * key's value.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "jdbc:postgresql://alice:" + URL_SENTINEL + "@127.0.0.1:5432/app",
        "postgresql://alice:" + URL_SENTINEL + "@127.0.0.1/app",
        "jdbc:postgresql://alice:" + URL_SENTINEL + "@127.0.0.1?sslmode=disable",
        // A password holding '/', '?' or '#': the authority as a URI reads it ends before the '@'
        "jdbc:postgresql://alice:Zx/9k" + URL_SENTINEL + "@127.0.0.1:5432/app",
        "jdbc:postgresql://alice:pa?ss" + URL_SENTINEL + "@127.0.0.1/app",
        "jdbc:postgresql://alice:p#ss" + URL_SENTINEL + "@127.0.0.1:5432/app",
        "jdbc:postgresql://alice:pa?s=s" + URL_SENTINEL + "@127.0.0.1:5432/app"
      })
  void aUserAndPasswordBeforeTheHostAreAnErrorOnTheUrlAndTheUrlIsNotShown(String url) {
    Map<String, String> props = offline();
    props.put("connection.url", url);

    String error = only(errors(props), "connection.url");
    assertFalse(error.contains(URL_SENTINEL), error);
    assertEquals(ConfigValidation.HIDDEN_URL, shownUrl(props));
  }

  /**
   * A password after the database name but before any query string, or a libpq keyword string
   * pasted instead of a URL: an error on the URL, which is not shown.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "jdbc:postgresql://127.0.0.1:5432/app;password=" + URL_SENTINEL,
        "jdbc:postgresql://127.0.0.1:5432/app&PASSWORD=" + URL_SENTINEL,
        // %-escaped: the driver decodes the database name
        "jdbc:postgresql://127.0.0.1:5432/app;%70assword=" + URL_SENTINEL,
        "jdbc:postgresql://127.0.0.1:5432/app;password%3D" + URL_SENTINEL,
        // spaced, as %20 and as '+', which the driver decodes to a space
        "jdbc:postgresql://127.0.0.1:5432/app;password =" + URL_SENTINEL,
        "jdbc:postgresql://127.0.0.1:5432/app;password%20=" + URL_SENTINEL,
        "jdbc:postgresql://127.0.0.1:5432/app;password+=" + URL_SENTINEL,
        // inside another parameter's value, which the driver passes on whole
        "jdbc:postgresql://127.0.0.1:5432/app?user=app;password=" + URL_SENTINEL,
        "host=127.0.0.1 dbname=app password=" + URL_SENTINEL
      })
  void aPasswordOutsideTheQueryStringIsAnErrorOnTheUrlAndTheUrlIsNotShown(String url) {
    Map<String, String> props = offline();
    props.put("connection.url", url);

    String error = only(errors(props), "connection.url");
    assertFalse(error.contains(URL_SENTINEL), error);
    assertEquals(ConfigValidation.HIDDEN_URL, shownUrl(props));
  }

  /**
   * A URL without a '/' between its hosts and the database name, or with two, is refused before the
   * driver sees it: the driver refuses it too, but logs it whole (java.util.logging, WARNING).
   */
  @ParameterizedTest
  @ValueSource(strings = {"", "?sslmode=disable", "/app/", "/app/x?sslmode=disable", "/app/x%zz"})
  void aUrlTheDriverWouldLogAndRefuseIsAnErrorOnTheUrlAndNeverReachesTheDriver(String rest) {
    Map<String, String> props = offline();
    String url = "jdbc:postgresql://" + URL_SENTINEL + ".invalid:5432" + rest;
    props.put("connection.url", url);
    Logger driverLog = Logger.getLogger("org.postgresql");
    List<String> logged = new CopyOnWriteArrayList<>();
    Handler handler =
        new Handler() {
          @Override
          public void publish(LogRecord record) {
            logged.add(record.getMessage() + " " + Arrays.toString(record.getParameters()));
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        };
    driverLog.addHandler(handler);
    try {
      assertEquals(
          "connection.url must end its hosts with one '/' before the database name, as in"
              + " jdbc:postgresql://host:5432/app (a '/' in the database name is written %2F)",
          only(errors(props), "connection.url"));
      assertEquals(List.of(), logged.stream().filter(line -> line.contains(URL_SENTINEL)).toList());
    } finally {
      driverLog.removeHandler(handler);
    }
  }

  /** Before, the JDK's decoder failed the whole validation, its message quoting the password. */
  @Test
  void aMalformedEscapeInTheUrlIsAnErrorOnTheUrlAndTheUrlIsNotShown() {
    Map<String, String> props = offline();
    props.put("connection.url", CLOSED_PORT_URL + "&password=p%zz" + URL_SENTINEL);
    props.remove("connection.password");

    assertEquals(
        "connection.url has a malformed %-escape in its query string: write a literal % as %25",
        only(errors(props), "connection.url"));
    assertEquals(ConfigValidation.HIDDEN_URL, shownUrl(props));
  }

  /** The driver refuses a database name that does not decode; the error says why. */
  @Test
  void aMalformedEscapeInTheDatabaseNameIsAnErrorOnTheUrl() {
    Map<String, String> props = offline();
    props.put("connection.url", "jdbc:postgresql://127.0.0.1:5432/50%off" + URL_SENTINEL);

    assertEquals(
        "connection.url has a malformed %-escape in its database name: write a literal % as %25",
        only(errors(props), "connection.url"));
  }

  /** A client override whose value may be a secret is never echoed in a validation response. */
  @Test
  void aClientOverrideThatMayHoldASecretIsNotEchoed() {
    assertEquals(
        null,
        ConfigValidation.undefinedKey("producer.override.sasl.jaas.config", "SENTINEL").value());
    assertEquals(
        null, ConfigValidation.undefinedKey("admin.override.ssl.key.password", "SENTINEL").value());
    assertEquals("all", ConfigValidation.undefinedKey("producer.override.acks", "all").value());
  }

  @Test
  void aSocketTimeoutInTheUrlMustOutlastTheStatementTimeout() {
    // 2147484 s is past the driver's int milliseconds; the last, times 1000, wraps to 30384 ms.
    for (String socketTimeout : new String[] {"0", "30", "x", "2147484", "18446744073709582"}) {
      Map<String, String> props = offline();
      props.put("connection.url", CLOSED_PORT_URL + "&socketTimeout=" + socketTimeout);

      assertEquals(
          "the socketTimeout in connection.url must be more than statement.timeout.ms (30000 ms),"
              + " in whole seconds, not 0 and at most 2147483, so that no read can hang a task;"
              + " or leave it out and set socket.timeout.ms",
          only(errors(props), "connection.url"),
          socketTimeout);
    }
  }

  @Test
  void aDatabaseThatOnlyReadsIsAnErrorOnTheUrl() throws SQLException {
    String url = externallyManagedTable("config_read_only");
    execute(
        url,
        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on',"
            + " current_database()); END $$");

    assertEquals(
        "connection.url reaches a server where connection.user can only read (a standby, or"
            + " default_transaction_read_only on): the relay writes every row it claims; name the"
            + " primary (with several hosts, add targetServerType=primary)",
        only(errors(props(url)), "connection.url"));
  }

  @Test
  void tableManagedByAnotherToolIsAccepted() throws SQLException {
    String url = externallyManagedTable("config_external");

    assertEquals(Map.of(), errors(props(url)));
  }

  @Test
  void tableManagedByAnotherToolWithoutThePublishedLogIsAnErrorOnTheTable() throws SQLException {
    String url = externallyManagedTable("config_external_v8");
    execute(url, "DROP TABLE outbox_published");

    assertEquals(
        Map.of(
            "outbox.table",
            List.of(
                "outbox.table has no published log (outbox_published, schema version 9): apply"
                    + " the statements of `outbox-relay-cli schema-sql --after-version 8`")),
        errors(props(url)));
  }

  @Test
  void tableManagedByAnotherToolWithTheParkedRowsIndexOfVersion7IsAnErrorOnTheTable()
      throws SQLException {
    String url = externallyManagedTable("config_external_v11");
    execute(
        url,
        "CREATE INDEX outbox_parked_rows_idx ON outbox (instance_key, correlation_id)"
            + " WHERE parked_at IS NOT NULL");

    assertEquals(
        Map.of(
            "outbox.table",
            List.of(
                "outbox.table still has the index of parked rows of schema version 7"
                    + " (outbox_parked_rows_idx), which cannot hold a long correlation id: apply"
                    + " the statements of `outbox-relay-cli schema-sql --after-version 11` (schema"
                    + " version 12)")),
        errors(props(url)));
  }

  @Test
  void tableManagedByAnotherToolWithoutTheDueIndexOfVersion13IsAnErrorOnTheTable()
      throws SQLException {
    String url = externallyManagedTable("config_external_v12");
    execute(url, "DROP INDEX outbox_due_key_seq_idx");
    execute(
        url,
        "CREATE INDEX outbox_due_seq_idx ON outbox (seq)"
            + " WHERE published_at IS NULL AND parked_at IS NULL");

    assertEquals(
        Map.of(
            "outbox.table",
            List.of(
                "outbox.table has no index of due rows by instance key (outbox_due_key_seq_idx),"
                    + " which every claim reads: apply the statements of `outbox-relay-cli"
                    + " schema-sql --after-version 12` (schema version 13)")),
        errors(props(url)));
  }

  @Test
  void tableManagedByAnotherToolWithoutIndexesTheRelayReadsIsAnErrorNamingThem()
      throws SQLException {
    String url = externallyManagedTable("config_external_indexes");
    execute(url, "DROP INDEX outbox_due_aggregate_idx");
    execute(url, "DROP INDEX outbox_published_at_idx");

    assertEquals(
        Map.of(
            "outbox.table",
            List.of(
                "outbox.table lacks indexes the relay reads: outbox_due_aggregate_idx (ordered"
                    + " claims), outbox_published_at_idx (retention of the published log); without"
                    + " them those statements read the whole table: build them as"
                    + " `outbox-relay-cli schema-sql` shows (a table adopted from Debezium: as"
                    + " `outbox-relay-cli adopt-debezium-table` prints them), with CREATE INDEX"
                    + " CONCURRENTLY on a table in use")),
        errors(props(url)));
  }

  /**
   * An index of an earlier version that serves the same statements is enough: a table kept at
   * version 13 has no index of parked rows by seq (version 14's, which only the CLI needs) but
   * version 12's by correlation id; one at version 9 has the log's btree of message ids.
   */
  @Test
  void tableManagedByAnotherToolWithEarlierVersionsIndexesIsAccepted() throws SQLException {
    String url = externallyManagedTable("config_external_v13_indexes");
    execute(url, "DROP INDEX outbox_parked_key_seq_idx");
    execute(url, "DROP INDEX outbox_parked_cid_seq_idx");
    execute(
        url,
        "CREATE INDEX outbox_parked_cid_idx ON outbox (instance_key, left(correlation_id, 200))"
            + " WHERE parked_at IS NOT NULL");
    execute(url, "DROP INDEX outbox_published_id_hash");
    execute(url, "CREATE INDEX outbox_published_id_idx ON outbox_published (message_id)");
    assertEquals(Map.of(), errors(props(url)));

    execute(url, "DROP INDEX outbox_parked_cid_idx");
    String message = only(errors(props(url)), "outbox.table");
    assertTrue(
        message.startsWith(
            "outbox.table lacks an index the relay reads: outbox_parked_key_seq_idx (the"
                + " parked-row counts)"),
        message);
  }

  @Test
  void tableManagedByAnotherToolWithoutAUniqueIndexOnSeqIsAnError() throws SQLException {
    String url = externallyManagedTable("config_external_seq");
    execute(url, "ALTER TABLE outbox DROP CONSTRAINT outbox_pkey");
    // Neither a non-unique index nor a partial unique one finds every row by seq.
    execute(url, "CREATE INDEX outbox_seq_plain ON outbox (seq)");
    execute(url, "CREATE UNIQUE INDEX outbox_seq_partial ON outbox (seq) WHERE parked_at IS NULL");

    String message = only(errors(props(url)), "outbox.table");
    assertTrue(
        message.startsWith(
            "outbox.table lacks an index the relay reads: a unique index on seq (outcome writes"
                + " and claims find rows by it); without it"),
        message);

    execute(url, "CREATE UNIQUE INDEX outbox_seq_key ON outbox (seq)");
    assertEquals(Map.of(), errors(props(url)));
  }

  /**
   * The index by message id must be unique, not only named as the relay's: the writes after a claim
   * find a row by its id, and two rows of one id claimed together were both changed by one.
   */
  @Test
  void tableManagedByAnotherToolWhoseMessageIdIndexIsNotUniqueIsAnError() throws SQLException {
    String url = externallyManagedTable("config_external_mid");
    execute(url, "ALTER TABLE outbox DROP CONSTRAINT outbox_message_id_key");
    execute(url, "CREATE INDEX outbox_message_id_key ON outbox (message_id)");

    String message = only(errors(props(url)), "outbox.table");
    assertTrue(
        message.startsWith(
            "outbox.table lacks an index the relay reads: outbox_message_id_key (unique: one row"
                + " per message id; the index of that name is not unique: drop it first)"),
        message);

    execute(url, "DROP INDEX outbox_message_id_key");
    execute(url, "CREATE UNIQUE INDEX outbox_message_id_key ON outbox (message_id)");
    assertEquals(Map.of(), errors(props(url)));
  }

  /**
   * An index named as the relay's but on another column than the connector maps the field to (an
   * adoption given another id or aggregate column) serves none of its statements: the writes after
   * a claim would read the whole table, and find rows of one id together.
   */
  @Test
  void tableManagedByAnotherToolWhoseIndexesAreOnOtherColumnsThanTheMappedOnesIsAnError()
      throws SQLException {
    String url = externallyManagedTable("config_external_mapped");
    execute(url, "ALTER TABLE outbox ADD COLUMN event_id uuid NOT NULL"); // read as text
    execute(url, "ALTER TABLE outbox ADD COLUMN order_id text NOT NULL");
    Map<String, String> mapped = new HashMap<>(props(url));
    mapped.put("column.message.id", "event_id");
    mapped.put("column.aggregate.id", "order_id");

    String message = only(errors(mapped), "outbox.table");
    assertTrue(
        message.startsWith(
            "outbox.table lacks indexes the relay reads: outbox_message_id_key (unique: one row per"
                + " message id; the index of that name is not on event_id, the mapped column, at"
                + " key position 1: drop it first), outbox_due_aggregate_idx (ordered claims; the"
                + " index of that name is not on order_id, the mapped column, at key position 2:"
                + " drop it first)"),
        message);

    execute(url, "ALTER TABLE outbox DROP CONSTRAINT outbox_message_id_key");
    execute(url, "CREATE UNIQUE INDEX outbox_message_id_key ON outbox ((event_id::text))");
    execute(url, "DROP INDEX outbox_due_aggregate_idx");
    execute(
        url,
        "CREATE INDEX outbox_due_aggregate_idx ON outbox (instance_key, order_id, seq)"
            + " WHERE published_at IS NULL AND parked_at IS NULL AND instance_key IS NOT NULL");
    assertEquals(Map.of(), errors(mapped));
    assertEquals(
        List.of("outbox.table"),
        List.copyOf(errors(props(url)).keySet()),
        "the relay's own columns are no longer indexed");
  }

  @Test
  void aRelationNamedLikeThePublishedLogThatIsNotOneIsAnErrorOnTheTable() throws SQLException {
    String url = externallyManagedTable("config_external_other_log");
    execute(url, "DROP TABLE outbox_published");
    execute(url, "CREATE TABLE outbox_published (id bigint, message_id text)");

    List<String> messages = errors(props(url)).get("outbox.table");
    assertEquals(1, messages.size(), messages::toString);
    assertTrue(
        messages.get(0).startsWith("outbox.table's published log outbox_published lacks seq,"),
        messages.get(0));
  }

  @Test
  void publishedLogColumnsAreThoseOfTheMigratedLog() throws SQLException {
    String url = Postgres.freshDatabase("config_log_columns");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    assertEquals(ConfigValidation.PUBLISHED_LOG_COLUMNS, columnsOf(url, "outbox_published"));
  }

  /** The table's columns in their order, from a freshly migrated database. */
  private static List<String> columnsOf(String url, String table) throws SQLException {
    List<String> columns = new ArrayList<>();
    try (HikariDataSource pool = Postgres.pool(url, 1);
        Connection c = pool.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT column_name FROM information_schema.columns"
                    + " WHERE table_name = ? ORDER BY ordinal_position")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          columns.add(rs.getString(1));
        }
      }
    }
    return columns;
  }

  @Test
  void requiredColumnsAreThoseOfTheMigratedTable() throws SQLException {
    String url = Postgres.freshDatabase("config_columns");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    List<String> columns = columnsOf(url, "outbox");

    List<String> expected = new ArrayList<>(ConfigValidation.REQUIRED_COLUMNS);
    expected.addAll(ConfigValidation.MIGRATED_COLUMNS);
    assertEquals(columns, expected);
  }

  @Test
  void tableThatIsNoOutboxIsAnErrorOnTheTable() throws SQLException {
    String url = Postgres.freshDatabase("config_not_outbox");
    execute(url, "CREATE TABLE demo_orders (id bigint PRIMARY KEY, customer text, total numeric)");
    Map<String, String> props = props(url);
    props.put("outbox.table", "demo_orders");

    String message = only(errors(props), "outbox.table");

    assertEquals(
        "outbox.table names a table that is not an outbox table: it has none of the 25 columns"
            + " outbox-relay reads and writes (seq, message_id, instance_key, aggregate_type,"
            + " aggregate_id, event_type and 19 more). Set outbox.table to the outbox table; for a"
            + " new one, pick a name no table has and set schema.migrate.on.start=true, run"
            + " `outbox-relay-cli migrate --table <new table>`, or apply what `outbox-relay-cli"
            + " schema-sql --table <new table>` prints with your own migration tool",
        message);
  }

  @Test
  void tableMissingSomeColumnsIsAnErrorNamingThem() throws SQLException {
    String url = externallyManagedTable("config_partial");
    execute(url, "ALTER TABLE outbox DROP COLUMN kafka_offset, DROP COLUMN isolated");

    String message = only(errors(props(url)), "outbox.table");

    assertEquals(
        "outbox.table lacks 2 of the 25 columns outbox-relay reads and writes: isolated,"
            + " kafka_offset. Bring the table to schema version "
            + SchemaMigrator.CURRENT_VERSION
            + " with your own migration tool (`outbox-relay-cli schema-sql --table outbox"
            + " --after-version N` prints the statements after version N), or set outbox.table to"
            + " the outbox table",
        message);
  }

  @Test
  void tableManagedByAnotherToolCannotBeMigrated() throws SQLException {
    String url = externallyManagedTable("config_external_migrate");
    Map<String, String> props = props(url);
    props.put("schema.migrate.on.start", "true");

    String message = only(errors(props), "schema.migrate.on.start");

    assertTrue(
        message.startsWith("outbox.table exists but has no outbox-relay schema history"), message);
  }

  // Live: publications

  @Test
  void aPublicationOfUpdatesOrDeletesOfATableWithoutReplicaIdentityIsAnErrorOnTheTable()
      throws SQLException {
    String url = Postgres.freshDatabase("config_replica_identity");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    execute(url, "CREATE PUBLICATION inserts_only FOR TABLE outbox WITH (publish = 'insert')");
    execute(url, "CREATE PUBLICATION everything FOR ALL TABLES");
    assertEquals(Map.of(), errors(props(url)), "the primary key is its replica identity");

    execute(url, "ALTER TABLE outbox REPLICA IDENTITY NOTHING");

    assertEquals(
        "outbox.table has no replica identity and publication everything publishes its updates"
            + " or deletes, so PostgreSQL would refuse every claim and publish (SQLState 55000):"
            + " give the table a primary key or REPLICA IDENTITY FULL, or take it out of the"
            + " publication",
        only(errors(props(url)), "outbox.table"));

    execute(url, "ALTER PUBLICATION everything SET (publish = 'insert')");
    assertEquals(Map.of(), errors(props(url)), "a publication of inserts only needs none");
  }

  @Test
  void aPublicationOfDeletesOfThePublishedLogWithoutReplicaIdentityIsAnErrorOnTheTable()
      throws SQLException {
    String url = Postgres.freshDatabase("config_log_replica_identity");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    execute(url, "CREATE PUBLICATION everything FOR ALL TABLES");
    assertEquals(Map.of(), errors(props(url)), "the log is created REPLICA IDENTITY FULL");

    execute(url, "ALTER TABLE outbox_published REPLICA IDENTITY DEFAULT");

    assertEquals(
        "outbox.table's published log outbox_published has no replica identity and publication"
            + " everything publishes its deletes, so PostgreSQL would refuse every retention"
            + " delete (SQLState 55000): give it back REPLICA IDENTITY FULL (as schema version 9"
            + " creates it), or take it out of the publication",
        only(errors(props(url)), "outbox.table"));

    Map<String, String> keptForEver = props(url);
    keptForEver.put("retention.published.ms", "-1");
    assertEquals(Map.of(), errors(keptForEver), "nothing deletes from the log");
    execute(url, "ALTER PUBLICATION everything SET (publish = 'insert, update')");
    assertEquals(Map.of(), errors(props(url)), "nothing updates the log");
  }

  // Producer overrides

  @ParameterizedTest
  @ValueSource(strings = {"0", "1", " 1 "})
  void producerAcksOtherThanAllIsAnErrorOnThatKey(String acks) {
    String url = Postgres.freshDatabase("config_acks");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    Map<String, String> props = props(url);
    props.put("producer.override.acks", acks);

    assertEquals(
        "producer.override.acks must be all (or -1): a row is recorded as published on Kafka's"
            + " acknowledgement, which proves delivery only with acks=all (acks=0 returns no"
            + " offset at all, acks=1 is given before the record is replicated and can be lost);"
            + " remove the override or set it to all",
        only(errors(props), "producer.override.acks"));
  }

  /**
   * A size limit of 0, which Kafka takes: the producer then refuses every record, and the task
   * failed at every row, the connector reading 0 as no override; a positive one is the limit rows
   * are parked over.
   */
  @ParameterizedTest
  @ValueSource(strings = {"producer.override.max.request.size", "producer.override.buffer.memory"})
  void aProducerSizeLimitOfZeroIsAnErrorOnItsKey(String key) {
    String url = Postgres.freshDatabase("config_size_zero");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    Map<String, String> props = props(url);
    props.put(key, "0");

    assertEquals(
        key
            + " is 0: the producer would refuse every record and fail the task at every row;"
            + " remove the override or give a size in bytes",
        only(errors(props), key));

    props.put(key, "-0");
    assertEquals(1, errors(props).size(), "-0 is 0 to Kafka");
    props.put(key, "2097152");
    assertEquals(Map.of(), errors(props));
  }

  @ParameterizedTest
  @ValueSource(strings = {"all", "-1", " all"})
  void producerAcksAllPasses(String acks) {
    String url = Postgres.freshDatabase("config_acks_all");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    Map<String, String> props = props(url);
    props.put("producer.override.acks", acks);

    assertEquals(Map.of(), errors(props));
  }

  @Test
  void errorToleranceAllIsAnErrorOnThatKeyInExactlyOnceModeOnly() {
    String url = Postgres.freshDatabase("config_tolerance");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    Map<String, String> props = props(url);
    props.put("errors.tolerance", "all");
    assertEquals(Map.of(), errors(props), "at least once, a dropped record's row goes back");

    props.put("delivery.guarantee", "exactly-once");
    props.put("exactly.once.support", "required");
    assertEquals(
        "errors.tolerance must be none with delivery.guarantee=exactly-once: all drops a record"
            + " that a converter or transform fails on, a later record's committed offset then"
            + " covers its row, and a recovery would record that row PUBLISHED although it never"
            + " reached Kafka; remove the setting (none is Connect's default)",
        only(errors(props), "errors.tolerance"));

    props.put("errors.tolerance", "none");
    assertEquals(Map.of(), errors(props));
  }

  /**
   * Every task holds its pool at all times, and one listening connection: more than the server
   * admits never fits, and is an error on the pool's size. Exactly once, no more tasks start than
   * buckets. With notifications off (needed behind a transaction-mode pooler, whose connections
   * share the server's) not judged. A role's connection limit counts too.
   */
  @Test
  void tasksWhosePoolsNeverFitTheServersConnectionsAreAnErrorOnThePoolSize() throws SQLException {
    String url = Postgres.freshDatabase("config_connections");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    Map<String, String> props = props(url);
    props.put("tasks.max", "10000");

    String message = only(errors(props), "connection.pool.size");
    assertTrue(
        message.startsWith(
            "10000 tasks of connection.pool.size=4 and one listening connection each hold 50000"
                + " connections at all times, and validating an update of this config takes one"
                + " more: more than the database admits"),
        message);

    props.put("delivery.guarantee", "exactly-once");
    props.put("exactly.once.support", "required");
    props.put("exactly.once.buckets", "4");
    assertEquals(Map.of(), errors(props), "4 tasks at most, 20 connections");
    props.remove("delivery.guarantee");
    props.remove("exactly.once.support");
    props.put("notify.enabled", "false");
    assertEquals(Map.of(), errors(props), "not judged without notifications");

    // A role limited to 9 connections: 2 tasks of 4 and a listener each take 10.
    PasswordRole.ensureCreated();
    Map<String, String> limited = props(url);
    limited.put("connection.url", limited.get("connection.url").replaceAll("[?&]password=.*", ""));
    limited.put("connection.user", PasswordRole.NAME);
    limited.put("connection.password", PasswordRole.PASSWORD);
    limited.put("tasks.max", "2");
    execute(url, "ALTER ROLE " + PasswordRole.NAME + " CONNECTION LIMIT 9");
    try {
      List<String> pool = errors(limited).get("connection.pool.size");
      assertTrue(pool != null && pool.get(0).contains("hold 10 connections"), "the role's limit");
      limited.put("tasks.max", "1");
      assertFalse(errors(limited).containsKey("connection.pool.size"));

      // 10: the tasks' 10 fit, the next validation's does not.
      execute(url, "ALTER ROLE " + PasswordRole.NAME + " CONNECTION LIMIT 10");
      limited.put("tasks.max", "2");
      List<String> exact = errors(limited).get("connection.pool.size");
      assertTrue(exact != null && exact.get(0).contains("hold 10 connections"), "no room left");

      // The role's connections all taken (by a connector's running tasks, say): an update of its
      // config, the one lowering them, is not refused for the connection validation cannot open.
      execute(url, "ALTER ROLE " + PasswordRole.NAME + " CONNECTION LIMIT 1");
      limited.put("tasks.max", "1");
      limited.put("notify.enabled", "false");
      Properties login = new Properties();
      login.setProperty("user", PasswordRole.NAME);
      login.setProperty("password", PasswordRole.PASSWORD);
      try (Connection held = new org.postgresql.Driver().connect(url, login)) {
        long mark = LogCapture.get().mark();
        assertEquals(Map.of(), errors(limited));
        assertEquals(
            1,
            LogCapture.get()
                .matching(mark, e -> e.fullText().contains("reason=VALIDATION_DATABASE_FULL"))
                .size());
      }
    } finally {
      execute(url, "ALTER ROLE " + PasswordRole.NAME + " CONNECTION LIMIT -1");
    }
  }

  /**
   * Exactly once, Kafka's Filter transform is refused as errors.tolerance=all is: a dropped
   * record's row is covered by a later record's committed offset. At least once, with
   * null.metadata.policy=retry each dropped row was retried for minutes, its aggregate held back.
   */
  @Test
  void aFilterTransformIsAnErrorOnItsTypeInExactlyOnceModeAndOnTheRetryPolicyAtLeastOnce() {
    String url = Postgres.freshDatabase("config_filter");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    Map<String, String> props = props(url);
    props.put("transforms", "drop,route");
    props.put("transforms.drop.type", ConfigChecks.FILTER_TRANSFORM);
    props.put("transforms.drop.predicate", "internal");
    props.put("transforms.route.type", "org.apache.kafka.connect.transforms.RegexRouter");
    String retried = only(errors(props), "null.metadata.policy");
    assertTrue(
        retried.startsWith(
            "null.metadata.policy must be fail with a transform that drops records, a Filter or a"
                + " TombstoneHandler (transforms.drop.type)"),
        retried);
    props.put("null.metadata.policy", "fail");
    assertEquals(Map.of(), errors(props), "at least once, a dropped record's row is parked");

    props.put("delivery.guarantee", "exactly-once");
    props.put("exactly.once.support", "required");
    String message = only(errors(props), "transforms.drop.type");
    assertTrue(
        message.startsWith(
            "transforms.drop.type must not be a transform that drops records (a Filter, a"
                + " TombstoneHandler) with delivery.guarantee=exactly-once"),
        message);

    props.put("transforms.drop.type", "Filter"); // Connect's alias of the same class
    assertEquals(Set.of("transforms.drop.type"), errors(props).keySet());
    // Confluent's TombstoneHandler drops the record of a row without payload (a tombstone).
    props.put("transforms.drop.type", "io.confluent.connect.transforms.TombstoneHandler");
    assertEquals(Set.of("transforms.drop.type"), errors(props).keySet());

    props.put("transforms", "route"); // drop's settings left behind, no longer listed
    assertEquals(Map.of(), errors(props));
  }

  // Static: every bad value lands on its own key

  static Stream<Arguments> badValues() {
    return BadConfigs.cases();
  }

  @ParameterizedTest(name = "{0}={1}")
  @MethodSource("badValues")
  void badValueIsAnErrorOnItsKey(String key, String value) {
    Map<String, String> props = offline();
    props.put(key, value);

    Map<String, List<String>> errors = errors(props);

    assertTrue(errors.containsKey(key), errors.toString());
    for (String message : errors.get(key)) {
      assertTrue(message.contains(key), message);
      BadConfigs.assertNotEchoed(key, value, message);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"connection.url", "instance.keys"})
  void missingRequiredKeyIsAnErrorOnItsKey(String key) {
    Map<String, String> props = offline();
    props.remove(key);

    Map<String, List<String>> errors = errors(props);

    assertEquals(
        List.of("Missing required configuration \"" + key + "\" which has no default value."),
        errors.get(key));
  }

  @Test
  void renewalNotBelowLeaseIsAnErrorOnRenewalOnly() {
    String url = Postgres.freshDatabase("config_renewal");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    Map<String, String> props = props(url);
    props.put("lease.duration.ms", "10000");
    props.put("lease.renewal.interval.ms", "10000");

    assertEquals(
        "lease.renewal.interval.ms must be less than lease.duration.ms (10000 ms), so leases are"
            + " renewed before they expire",
        only(errors(props), "lease.renewal.interval.ms"));
  }

  @Test
  void socketTimeoutNotAboveStatementTimeoutIsAnErrorOnSocketOnly() {
    String url = Postgres.freshDatabase("config_socket");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    Map<String, String> props = props(url);
    props.put("statement.timeout.ms", "60000");
    props.put("socket.timeout.ms", "60000");

    assertEquals(
        "socket.timeout.ms must be more than statement.timeout.ms (60000 ms), so that the database"
            + " cancels a slow statement before the connection is given up; leave it unset for"
            + " statement.timeout.ms plus 30 seconds",
        only(errors(props), "socket.timeout.ms"));
  }

  @Test
  void backoffMaxBelowInitialIsAnErrorOnMaxOnly() {
    String url = Postgres.freshDatabase("config_backoff");
    migrate(url, "outbox", SchemaMigrator.CURRENT_VERSION);
    Map<String, String> props = props(url);
    props.put("retry.backoff.initial.ms", "2000");
    props.put("retry.backoff.max.ms", "1000");

    assertEquals(
        "retry.backoff.max.ms must be at least retry.backoff.initial.ms (2000 ms)",
        only(errors(props), "retry.backoff.max.ms"));
  }

  @Test
  void crossFieldRulesWaitForTheirKeysToBeValid() {
    Map<String, String> props = offline();
    props.put("lease.duration.ms", "1");
    props.put("lease.renewal.interval.ms", "50000");

    Map<String, List<String>> errors = errors(props);

    assertTrue(errors.containsKey("lease.duration.ms"));
    assertFalse(errors.containsKey("lease.renewal.interval.ms"), errors.toString());
  }
}
