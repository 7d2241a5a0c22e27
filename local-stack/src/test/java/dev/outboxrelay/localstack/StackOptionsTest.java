package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StackOptionsTest {
  private static final Path ROOT = Path.of("/repo");

  private static StackOptions parse(Map<String, String> env, String... args) {
    return StackOptions.parse(List.of(args), env, ROOT);
  }

  @Test
  void defaultsToUpWithEmbeddedPostgresTheDemoAndFixedPorts() {
    StackOptions options = parse(Map.of());
    assertEquals("up", options.command());
    assertTrue(options.embeddedPostgres());
    assertTrue(options.runDemo());
    assertEquals(ROOT.resolve(".local-stack"), options.stateDir());
    assertEquals(ROOT.resolve("config/local-connector.json"), options.connectorConfig());
    StackPorts ports = StackPorts.resolve(options);
    assertEquals(new StackPorts(15432, 9092, 9093, 8083, 9404), ports);
    assertEquals("127.0.0.1:9092", ports.bootstrapServers());
    assertEquals("http://127.0.0.1:8083", ports.connectUrl());
    assertEquals("http://127.0.0.1:9404/metrics", ports.metricsUrl());
    assertEquals(
        ROOT.resolve("local-stack/target/agents/jmx_prometheus_javaagent.jar"),
        options.metricsAgentJar());
    assertEquals(ROOT.resolve("config/metrics/jmx-exporter.yml"), options.metricsRules());
  }

  /** A Connect URL without a scheme is a usage error naming the option, not a stack trace. */
  @Test
  void theConnectUrlIsAnHttpUrl() {
    for (String bad : List.of("localhost:8083", "ftp://h:21", "http://", "http://a b")) {
      StackException e =
          assertThrows(StackException.class, () -> parse(Map.of(), "demo", "--connect-url=" + bad));
      assertTrue(e.getMessage().startsWith("--connect-url must be an http://"), e.getMessage());
    }
    assertEquals(
        Optional.of("http://h:8083"),
        parse(Map.of(), "demo", "--connect-url=http://h:8083/").connectUrl());
  }

  /**
   * A JDBC URL carrying a password is refused before anything starts: the stack's record and the
   * connector's config would keep it (it was refused only after the demo had migrated the table).
   */
  @Test
  void aJdbcUrlWithAPasswordIsRefusedWhateverItNames() {
    for (List<String> args :
        List.of(
            List.of("up", "--jdbc-url=jdbc:postgresql://db.local/app?password=s3cret"),
            List.of("up", "--no-demo", "--jdbc-url=jdbc:postgresql://app:s3cret@db.local/app"),
            List.of("up", "--no-demo", "--jdbc-url=jdbc:postgresql://app:s3/cret@db.local/app"),
            List.of("up", "--jdbc-url=jdbc:postgresql://db.local/app?pass%77ord=s3cret"),
            List.of(
                "demo", "--connector-jdbc-url=jdbc:postgresql://db.local/app?password=s3cret"))) {
      StackOptions options = parse(Map.of(), args.toArray(String[]::new));
      StackException e = assertThrows(StackException.class, options::requireNoPasswordInJdbcUrls);
      assertTrue(e.getMessage().contains("carries a password"), e.getMessage());
      assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
    }
    parse(Map.of(), "up", "--jdbc-url=jdbc:postgresql://db.local/app")
        .requireNoPasswordInJdbcUrls();
  }

  @Test
  void aFlagWinsOverTheEnvironment() {
    StackOptions options =
        parse(
            Map.of("LOCAL_STACK_KAFKA_PORT", "19092", "LOCAL_STACK_DB_USER", "app"),
            "up",
            "--kafka-port=29092");
    assertEquals(29092, StackPorts.resolve(options).kafka());
    assertEquals("app", options.dbUser());
  }

  @Test
  void anExternalDatabaseReplacesTheEmbeddedOneAndItsPort() {
    StackOptions options =
        parse(
            Map.of(
                "LOCAL_STACK_JDBC_URL", "jdbc:postgresql://db.local:5432/app",
                "LOCAL_STACK_DB_PASSWORD", "s3cret"),
            "status");
    assertFalse(options.embeddedPostgres());
    assertEquals(Optional.of("s3cret"), options.dbPassword());
    assertEquals(0, StackPorts.resolve(options).postgres());
    assertEquals(List.of(), options.warnings());
  }

  @Test
  void theOperatorCliVariablesLeaveTheStackAloneWhenItsOwnAreSet() {
    // README's CLI section exports these; the stack's own variables win, without a warning.
    StackOptions options =
        parse(
            Map.of(
                "OUTBOX_JDBC_URL", "jdbc:postgresql://prod-db:5432/app",
                "OUTBOX_USER", "ops",
                "OUTBOX_PASSWORD", "ops-secret",
                "LOCAL_STACK_JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/dev",
                "LOCAL_STACK_DB_USER", "dev"));
    assertEquals(Optional.of("jdbc:postgresql://127.0.0.1:5432/dev"), options.externalJdbcUrl());
    assertEquals("dev", options.dbUser());
    assertEquals(Optional.empty(), options.dbPassword());
    assertEquals(List.of(), options.warnings());

    StackOptions cliOnly =
        parse(Map.of("OUTBOX_USER", "ops", "OUTBOX_PASSWORD", "ops-secret"), "status");
    assertTrue(cliOnly.embeddedPostgres());
    assertEquals("postgres", cliOnly.dbUser());
    assertEquals(Optional.empty(), cliOnly.dbPassword());
    assertEquals(List.of(), cliOnly.warnings());
  }

  @Test
  void theDeprecatedNamesStillWorkForOneReleaseAndSaySo() {
    StackOptions options =
        parse(
            Map.of(
                "OUTBOX_JDBC_URL", "jdbc:postgresql://db.local:5432/app",
                "OUTBOX_DB_USER", "app",
                "OUTBOX_DB_PASSWORD", "s3cret"));
    assertEquals(Optional.of("jdbc:postgresql://db.local:5432/app"), options.externalJdbcUrl());
    assertEquals("app", options.dbUser());
    assertEquals(Optional.of("s3cret"), options.dbPassword());
    assertEquals(3, options.warnings().size(), options.warnings()::toString);
    String all = String.join("\n", options.warnings());
    for (String[] rename :
        new String[][] {
          {"OUTBOX_JDBC_URL", "LOCAL_STACK_JDBC_URL"},
          {"OUTBOX_DB_USER", "LOCAL_STACK_DB_USER"},
          {"OUTBOX_DB_PASSWORD", "LOCAL_STACK_DB_PASSWORD"}
        }) {
      assertTrue(
          all.contains(
              rename[0]
                  + " is deprecated for the local stack and is read only until the next release;"
                  + " set "
                  + rename[1]
                  + " instead."),
          all);
    }
    assertTrue(
        all.contains(
            "Until then `up --no-demo` and `status` take it as your own PostgreSQL (no embedded"
                + " one starts); the demo (`up` without --no-demo, and `demo`) refuses it."),
        all);
    assertFalse(all.contains("s3cret"), all);
    assertTrue(options.jdbcUrlFromDeprecatedEnv());
  }

  /**
   * README exports OUTBOX_JDBC_URL for the operator CLI: the demo (migrations, demo_orders, rows, a
   * connector publishing orders-eu) must not land in that database because of it.
   */
  @Test
  void theDemoRefusesTheDatabaseOfTheDeprecatedVariable(@TempDir Path state) throws Exception {
    Map<String, String> cliShell =
        Map.of("OUTBOX_JDBC_URL", "jdbc:postgresql://prod-db:5432/app?password=hunter2");
    for (String command : List.of("up", "demo")) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      int exit =
          LocalStack.run(
              new String[] {command, "--state-dir=" + state, "--repo-root=" + state},
              cliShell,
              new PrintStream(out, true, StandardCharsets.UTF_8),
              new PrintStream(err, true, StandardCharsets.UTF_8));
      String all = out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8);
      assertEquals(1, exit, all);
      assertTrue(
          all.contains(
              "local-stack: OUTBOX_JDBC_URL names the database (in this shell, or the running stack"
                  + " was started with it), and the demo does not take its database from"
                  + " it"),
          all);
      assertTrue(all.contains("name it with --jdbc-url=URL (or LOCAL_STACK_JDBC_URL)"), all);
      assertTrue(all.contains("./local-stack.sh up --no-demo"), all);
      assertFalse(all.contains("prod-db") || all.contains("hunter2"), all);
      assertEquals("", out.toString(StandardCharsets.UTF_8), "nothing started: " + all);
    }
    try (var entries = java.nio.file.Files.list(state)) {
      assertEquals(List.of(state.resolve(".lock")), entries.toList(), "nothing started");
    }

    // Everything else stays as it was: services without the demo, status, and the explicit names.
    StackOptions noDemo = parse(cliShell, "up", "--no-demo");
    assertEquals(
        Optional.of("jdbc:postgresql://prod-db:5432/app?password=hunter2"),
        noDemo.externalJdbcUrl());
    assertFalse(noDemo.runDemo());
    assertTrue(parse(cliShell, "status").jdbcUrlFromDeprecatedEnv());
    for (StackOptions explicit :
        List.of(
            parse(cliShell, "demo", "--jdbc-url=jdbc:postgresql://127.0.0.1:5432/dev"),
            parse(
                Map.of(
                    "OUTBOX_JDBC_URL", "jdbc:postgresql://prod-db:5432/app",
                    "LOCAL_STACK_JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/dev"),
                "up"))) {
      assertFalse(explicit.jdbcUrlFromDeprecatedEnv());
      explicit.requireDemoDatabaseNamedExplicitly();
      assertEquals(Optional.of("jdbc:postgresql://127.0.0.1:5432/dev"), explicit.externalJdbcUrl());
    }
    parse(Map.of()).requireDemoDatabaseNamedExplicitly();
  }

  @Test
  void theDemoRefusesTheDatabaseAStackTookFromTheDeprecatedVariable() {
    StackRecord startedWithIt =
        new StackRecord(
            "127.0.0.1:1",
            "http://127.0.0.1:2",
            "",
            "jdbc:postgresql://prod-db:5432/app",
            "postgres",
            false,
            Delivery.AT_LEAST_ONCE,
            true);
    // `up --no-demo` in a shell exporting OUTBOX_JDBC_URL, then `demo` after unsetting it.
    StackException e =
        assertThrows(
            StackException.class,
            () ->
                DemoCommand.requireDatabaseNamedExplicitly(
                    parse(Map.of(), "demo"), Optional.of(startedWithIt)));
    assertTrue(e.getMessage().startsWith("OUTBOX_JDBC_URL names the database"), e.getMessage());

    DemoCommand.requireDatabaseNamedExplicitly(
        parse(Map.of(), "demo", "--jdbc-url=jdbc:postgresql://127.0.0.1:5432/dev"),
        Optional.of(startedWithIt));
    DemoCommand.requireDatabaseNamedExplicitly(parse(Map.of(), "demo"), Optional.empty());
  }

  @Test
  void twoSettingsWithOnePortFailBeforeAnythingStartsAndNameBothSettings() {
    StackException e =
        assertThrows(
            StackException.class,
            () -> StackPorts.resolve(parse(Map.of(), "--kafka-port=9093")).requireFree());
    assertEquals(
        "--kafka-port (LOCAL_STACK_KAFKA_PORT, Kafka broker) and --controller-port"
            + " (LOCAL_STACK_CONTROLLER_PORT, Kafka KRaft controller) are both port 9093: each"
            + " needs a port of its own. Choose different ports (or LOCAL_STACK_PORTS=auto for"
            + " free ones).",
        e.getMessage());

    e =
        assertThrows(
            StackException.class,
            () ->
                StackPorts.resolve(
                        parse(Map.of("LOCAL_STACK_METRICS_PORT", "18083"), "--connect-port=18083"))
                    .requireFree());
    assertTrue(
        e.getMessage()
            .startsWith(
                "--connect-port (LOCAL_STACK_CONNECT_PORT, Connect REST API) and --metrics-port"
                    + " (LOCAL_STACK_METRICS_PORT, Connect worker's Prometheus metrics) are both"
                    + " port 18083"),
        e.getMessage());

    // Checked before any port is probed: the clash is named even when the port is busy.
    e =
        assertThrows(
            StackException.class, () -> new StackPorts(15432, 1, 2, 15432, 3).requireFree());
    assertTrue(e.getMessage().startsWith("--pg-port (LOCAL_STACK_PG_PORT"), e.getMessage());

    // The embedded PostgreSQL's port does not count when the database is your own.
    new StackPorts(0, 9092, 9093, 8083, 9404).requireDistinct();
  }

  @Test
  void upWithTwoSettingsOnOnePortStartsNothing(@TempDir Path state) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit =
        LocalStack.run(
            new String[] {
              "up",
              "--state-dir=" + state,
              "--repo-root=" + state,
              "--ports=auto",
              "--kafka-port=19999",
              "--metrics-port=19999"
            },
            Map.of(),
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(1, exit, out + "\n" + err);
    assertTrue(
        err.toString(StandardCharsets.UTF_8)
            .contains("--kafka-port (LOCAL_STACK_KAFKA_PORT, Kafka broker) and --metrics-port"),
        err.toString(StandardCharsets.UTF_8));
    assertEquals("", out.toString(StandardCharsets.UTF_8));
  }

  @Test
  void autoPortsAreFiveDifferentPorts() {
    StackPorts ports = StackPorts.resolve(parse(Map.of("LOCAL_STACK_PORTS", "auto")));
    assertEquals(
        5,
        new java.util.HashSet<>(
                List.of(
                    ports.postgres(),
                    ports.kafka(),
                    ports.controller(),
                    ports.connect(),
                    ports.metrics()))
            .size());
    ports.requireDistinct();
  }

  @Test
  void deprecationWarningsGoToStandardErrorBeforeTheCommandRuns(@TempDir Path state) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit =
        LocalStack.run(
            new String[] {"status", "--state-dir=" + state},
            Map.of("OUTBOX_DB_USER", "app"),
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(3, exit);
    assertTrue(
        err.toString(StandardCharsets.UTF_8)
            .startsWith("local-stack: warning: OUTBOX_DB_USER is deprecated"),
        err.toString(StandardCharsets.UTF_8));
  }

  @Test
  void passwordsAreNeverTakenFromFlags() {
    StackException e =
        assertThrows(StackException.class, () -> parse(Map.of(), "up", "--db-password=x"));
    assertTrue(e.getMessage().startsWith("unknown option --db-password"));
  }

  @Test
  void autoPortsPicksFreePortsButKeepsExplicitOnes() {
    StackOptions options = parse(Map.of("LOCAL_STACK_PORTS", "auto"), "--connect-port=18083");
    StackPorts ports = StackPorts.resolve(options);
    assertEquals(18083, ports.connect());
    assertNotEquals(9092, ports.kafka());
    assertTrue(Ports.isFree(ports.kafka()));
    assertNotEquals(9404, ports.metrics());
    assertTrue(Ports.isFree(ports.metrics()));
  }

  @Test
  void theMetricsPortIsAPortSettingLikeTheOthers() {
    assertEquals(
        19404,
        StackPorts.resolve(parse(Map.of("LOCAL_STACK_METRICS_PORT", "19404"), "up")).metrics());
    assertEquals(
        29404,
        StackPorts.resolve(
                parse(Map.of("LOCAL_STACK_METRICS_PORT", "19404"), "up", "--metrics-port=29404"))
            .metrics());
    assertEquals(
        "http://127.0.0.1:29404/metrics",
        StackPorts.resolve(parse(Map.of(), "--metrics-port=29404")).metricsUrl());
    assertEquals(
        "--metrics-port must be a port number (1-65535), not 'x'",
        assertThrows(StackException.class, () -> parse(Map.of(), "--metrics-port=x")).getMessage());
    assertTrue(
        StackOptions.USAGE.contains(
            "--metrics-port=N        LOCAL_STACK_METRICS_PORT     (default 9404"),
        StackOptions.USAGE);
  }

  @Test
  void aBusyMetricsPortIsNamedWithItsSetting() throws Exception {
    try (var socket =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
      int busy = socket.getLocalPort();
      StackPorts ports = new StackPorts(0, Ports.anyFree(), Ports.anyFree(), Ports.anyFree(), busy);
      StackException e = assertThrows(StackException.class, ports::requireFree);
      assertTrue(
          e.getMessage()
              .startsWith(
                  "port " + busy + " (Connect worker's Prometheus metrics) is already in use"),
          e.getMessage());
      assertTrue(e.getMessage().contains("LOCAL_STACK_METRICS_PORT=<port>"), e.getMessage());
    }
  }

  /**
   * A stray variable of the shell that up would refuse keeps no command that only reads the stack's
   * record from running: down stops a stack whatever LOCAL_STACK_PG_PORT says. Up names the
   * variable, not a flag the user never typed.
   */
  @Test
  void aBadSettingOfUpKeepsNeitherDownNorStatusNorRunningFromRunning() {
    Map<String, String> stray =
        Map.of("LOCAL_STACK_PG_PORT", "x", "LOCAL_STACK_EXACTLY_ONCE", "maybe");
    for (String command : List.of("down", "status", "running")) {
      assertEquals(command, parse(stray, command).command());
    }
    assertEquals(
        "LOCAL_STACK_PG_PORT must be a port number (1-65535), not 'x'",
        assertThrows(StackException.class, () -> parse(Map.of("LOCAL_STACK_PG_PORT", "x"), "up"))
            .getMessage());
    assertThrows(
        StackException.class, () -> parse(Map.of("LOCAL_STACK_EXACTLY_ONCE", "maybe"), "demo"));
  }

  @Test
  void rejectsWhatItDoesNotKnowWithUsage() {
    assertTrue(
        assertThrows(StackException.class, () -> parse(Map.of(), "start"))
            .getMessage()
            .contains("usage:"));
    assertEquals(
        "--pg-port must be a port number (1-65535), not '70000'",
        assertThrows(StackException.class, () -> parse(Map.of(), "--pg-port=70000")).getMessage());
  }

  @Test
  void exactlyOnceIsASwitchOrAVariableAndOffByDefault() {
    assertEquals(Delivery.AT_LEAST_ONCE, parse(Map.of()).delivery());
    assertEquals(Optional.empty(), parse(Map.of()).deliverySetting(), "demo takes the stack's");
    assertEquals(Delivery.EXACTLY_ONCE, parse(Map.of(), "up", "--exactly-once").delivery());
    assertEquals(Delivery.EXACTLY_ONCE, parse(Map.of(), "--exactly-once").delivery());
    assertEquals(
        Delivery.EXACTLY_ONCE, parse(Map.of("LOCAL_STACK_EXACTLY_ONCE", "true")).delivery());
    assertEquals(
        Optional.of(Delivery.AT_LEAST_ONCE),
        parse(Map.of("LOCAL_STACK_EXACTLY_ONCE", "true"), "demo", "--exactly-once=false")
            .deliverySetting(),
        "a flag wins over the environment");
    // The script asks `running` with the options of `up`: the switch must parse there too.
    assertEquals("running", parse(Map.of(), "running", "--exactly-once").command());
    assertEquals(
        "--exactly-once (LOCAL_STACK_EXACTLY_ONCE) must be true or false, not 'yes'",
        assertThrows(
                StackException.class, () -> parse(Map.of("LOCAL_STACK_EXACTLY_ONCE", "yes"), "up"))
            .getMessage());
    assertTrue(StackOptions.USAGE.contains("--exactly-once          LOCAL_STACK_EXACTLY_ONCE"));
  }

  @Test
  void theStackRecordKeepsTheGuaranteeAndAnOlderRecordRanAtLeastOnce(@TempDir Path dir)
      throws Exception {
    Path file = dir.resolve("stack.properties");
    StackRecord stack =
        new StackRecord(
            "127.0.0.1:1",
            "http://127.0.0.1:2",
            "",
            "jdbc:postgresql://127.0.0.1:3/outbox",
            "postgres",
            true,
            Delivery.EXACTLY_ONCE,
            true);
    stack.write(file);
    assertEquals(stack, StackRecord.read(file).orElseThrow());
    java.nio.file.Files.writeString(file, "connect.url=http://127.0.0.1:2\n");
    assertEquals(Delivery.AT_LEAST_ONCE, StackRecord.read(file).orElseThrow().delivery());
  }

  @Test
  void helpAndNoDemo() {
    assertEquals("help", parse(Map.of(), "--help").command());
    assertFalse(parse(Map.of(), "up", "--no-demo").runDemo());
  }

  @Test
  void theUsageNamesTheStacksOwnVariablesOnly() {
    assertTrue(StackOptions.USAGE.contains("--jdbc-url=URL          LOCAL_STACK_JDBC_URL"));
    assertTrue(StackOptions.USAGE.contains("--db-user=NAME          LOCAL_STACK_DB_USER"));
    assertTrue(StackOptions.USAGE.contains("LOCAL_STACK_DB_PASSWORD"));
  }

  @Test
  void aBusyPortIsNamedWithTheSettingThatMovesIt() throws Exception {
    try (var socket =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
      int busy = socket.getLocalPort();
      StackException e =
          assertThrows(
              StackException.class,
              () ->
                  new StackPorts(0, busy, Ports.anyFree(), Ports.anyFree(), Ports.anyFree())
                      .requireFree());
      assertTrue(e.getMessage().startsWith("port " + busy + " (Kafka broker) is already in use"));
      assertTrue(e.getMessage().contains("LOCAL_STACK_KAFKA_PORT=<port>"));
    }
  }
}
