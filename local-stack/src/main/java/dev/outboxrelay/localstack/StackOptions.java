package dev.outboxrelay.localstack;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * What the user asked for: the command, and settings from {@code --flags} or environment variables
 * (a flag wins). Secrets come from the environment only, never from flags, which {@code ps} shows.
 *
 * <p>Every environment variable of the local stack starts with {@code LOCAL_STACK_}; {@code
 * OUTBOX_JDBC_URL}, {@code OUTBOX_USER} and {@code OUTBOX_PASSWORD} belong to the operator CLI. The
 * stack's former names {@code OUTBOX_JDBC_URL}, {@code OUTBOX_DB_USER} and {@code
 * OUTBOX_DB_PASSWORD} still work in this release, each with a warning in {@link #warnings()}.
 *
 * @param jdbcUrlFromDeprecatedEnv {@code externalJdbcUrl} came from the deprecated {@code
 *     OUTBOX_JDBC_URL}, which the demo refuses (see {@link #requireDemoDatabaseNamedExplicitly()})
 * @param dbUserSetting the database user as given; {@link #dbUser()} applies the default
 * @param deliverySetting {@code --exactly-once} as given; {@link #delivery()} applies the default,
 *     and {@code demo} takes the running stack's when it is not given
 * @param warnings what the user should change (deprecated variables), printed before the command
 */
record StackOptions(
    String command,
    Path repoRoot,
    Path stateDir,
    boolean autoPorts,
    Map<String, Integer> requestedPorts,
    Optional<String> externalJdbcUrl,
    boolean jdbcUrlFromDeprecatedEnv,
    Optional<String> dbUserSetting,
    Optional<String> dbPassword,
    boolean runDemo,
    Path connectorConfig,
    Optional<String> bootstrapServers,
    Optional<String> connectUrl,
    Optional<String> connectorJdbcUrl,
    Optional<Delivery> deliverySetting,
    List<String> warnings) {

  static final String JDBC_URL_ENV = "LOCAL_STACK_JDBC_URL";
  static final String DB_USER_ENV = "LOCAL_STACK_DB_USER";
  static final String DB_PASSWORD_ENV = "LOCAL_STACK_DB_PASSWORD";
  static final String EXACTLY_ONCE_ENV = "LOCAL_STACK_EXACTLY_ONCE";

  /** The names of this release's predecessors: read, with a warning, for one release. */
  static final Map<String, String> DEPRECATED_ENV =
      Map.of(
          JDBC_URL_ENV, "OUTBOX_JDBC_URL",
          DB_USER_ENV, "OUTBOX_DB_USER",
          DB_PASSWORD_ENV, "OUTBOX_DB_PASSWORD");

  static final String DEPRECATED_JDBC_URL_ENV = DEPRECATED_ENV.get(JDBC_URL_ENV);

  static final String DEFAULT_DB_USER = "postgres";

  static final String PG_PORT = "pg-port";
  static final String KAFKA_PORT = "kafka-port";
  static final String CONTROLLER_PORT = "controller-port";
  static final String CONNECT_PORT = "connect-port";
  static final String METRICS_PORT = "metrics-port";

  /** Each port setting: its flag, environment variable and default. */
  static final Map<String, PortSetting> PORTS =
      Map.of(
          PG_PORT, new PortSetting("LOCAL_STACK_PG_PORT", 15432, "embedded PostgreSQL"),
          KAFKA_PORT, new PortSetting("LOCAL_STACK_KAFKA_PORT", 9092, "Kafka broker"),
          CONTROLLER_PORT,
              new PortSetting("LOCAL_STACK_CONTROLLER_PORT", 9093, "Kafka KRaft controller"),
          CONNECT_PORT, new PortSetting("LOCAL_STACK_CONNECT_PORT", 8083, "Connect REST API"),
          METRICS_PORT,
              new PortSetting(
                  "LOCAL_STACK_METRICS_PORT", 9404, "Connect worker's Prometheus metrics"));

  record PortSetting(String envVar, int defaultPort, String purpose) {}

  static final List<String> COMMANDS = List.of("up", "down", "status", "demo", "running", "help");

  static final String USAGE =
      """
      usage: ./local-stack.sh [up|down|status|demo|running|help] [options]

        up       build the plugin, start PostgreSQL, a Kafka broker and a Connect worker, register
                 the connector and run the demo; the stack keeps running (default)
        down     stop the stack started by `up`
        status   show what runs, the connectors' states, their headline metrics and the outbox
                 rows; exits 1 when a process is down, a connector or task FAILED, or
                 the worker's REST API does not answer (still starting)
        demo     run only the demo: against the running local stack, or against the services
                 the demo-only options name (used by docker/docker-compose.yml)
        running  exit with 0 when the local stack runs, 1 when not; prints nothing (for scripts)

      options (most also as an environment variable):
        --jdbc-url=URL          LOCAL_STACK_JDBC_URL     use this PostgreSQL instead of the embedded one
        --db-user=NAME          LOCAL_STACK_DB_USER      its user (default postgres)
                                LOCAL_STACK_DB_PASSWORD  its password (environment only, never a flag)
                                (OUTBOX_JDBC_URL, OUTBOX_DB_USER, OUTBOX_DB_PASSWORD: deprecated
                                names of these three, still read in this release, with a warning;
                                the demo refuses a database named by OUTBOX_JDBC_URL)
        --ports=auto            LOCAL_STACK_PORTS    pick free ports instead of the defaults
        --pg-port=N             LOCAL_STACK_PG_PORT          (default 15432)
        --kafka-port=N          LOCAL_STACK_KAFKA_PORT       (default 9092)
        --controller-port=N     LOCAL_STACK_CONTROLLER_PORT  (default 9093)
        --connect-port=N        LOCAL_STACK_CONNECT_PORT     (default 8083)
        --metrics-port=N        LOCAL_STACK_METRICS_PORT     (default 9404; the worker's /metrics)
        --exactly-once          LOCAL_STACK_EXACTLY_ONCE=true
                                run exactly-once: the worker with exactly.once.source.support=
                                enabled, the connector with delivery.guarantee=exactly-once and
                                exactly.once.support=required, the demo reading read_committed
        --no-demo                                    start the services only
        --connector-config=FILE                      connector to register (config/local-connector.json)
        --no-build              (script only)        do not run mvn package first
        --state-dir=DIR         LOCAL_STACK_HOME     the stack's data, logs and record (default
                                                     .local-stack in the checkout)
        --repo-root=DIR         LOCAL_STACK_ROOT     the checkout the launcher runs from (default the
                                                     current directory; this script builds and runs
                                                     its own: run the other checkout's script)
      demo only (each defaults to the running local stack's):
        --bootstrap-servers=HOST:PORT  --connect-url=URL  --connector-jdbc-url=URL (as Connect sees it)
      """;

  static StackOptions parse(List<String> args, Map<String, String> env, Path workingDir) {
    String command = "up";
    Map<String, String> flags = new LinkedHashMap<>();
    for (int i = 0; i < args.size(); i++) {
      String arg = args.get(i);
      if (i == 0 && !arg.startsWith("-")) {
        command = arg.toLowerCase(Locale.ROOT);
        if (!COMMANDS.contains(command)) {
          throw new StackException("unknown command '" + arg + "'\n" + USAGE);
        }
      } else if (arg.equals("-h") || arg.equals("--help")) {
        command = "help";
      } else if (arg.startsWith("--")) {
        int eq = arg.indexOf('=');
        String name = eq < 0 ? arg.substring(2) : arg.substring(2, eq);
        flags.put(name, eq < 0 ? "true" : arg.substring(eq + 1));
      } else {
        throw new StackException("unexpected argument '" + arg + "'\n" + USAGE);
      }
    }
    return fromFlags(command, flags, env, workingDir);
  }

  private static StackOptions fromFlags(
      String command, Map<String, String> flags, Map<String, String> env, Path workingDir) {
    Settings s = new Settings(flags, env);
    Path root = s.get("repo-root", "LOCAL_STACK_ROOT").map(Path::of).orElse(workingDir);
    root = root.toAbsolutePath().normalize();
    Path stateDir =
        s.get("state-dir", "LOCAL_STACK_HOME")
            .map(Path::of)
            .orElse(root.resolve(".local-stack"))
            .toAbsolutePath()
            .normalize();
    boolean autoPorts =
        s.get("ports", "LOCAL_STACK_PORTS").map(v -> v.equalsIgnoreCase("auto")).orElse(false);
    // Only up and demo start something on these settings: down, status and running read the
    // stack's record, and a stray variable of the shell (LOCAL_STACK_PG_PORT=x) must not keep them
    // from stopping or looking at a stack.
    boolean starts = command.equals("up") || command.equals("demo");
    Map<String, Integer> ports = new LinkedHashMap<>();
    PORTS.forEach(
        (flag, setting) ->
            s.get(flag, setting.envVar())
                .ifPresent(
                    v -> {
                      String source = flags.containsKey(flag) ? "--" + flag : setting.envVar();
                      try {
                        ports.put(flag, port(source, v));
                      } catch (StackException e) {
                        if (starts) {
                          throw e;
                        }
                      }
                    }));
    Path connectorConfig =
        s.get("connector-config", null)
            .map(Path::of)
            .orElse(root.resolve("config/local-connector.json"));
    Optional<String> jdbcUrl = s.get("jdbc-url", JDBC_URL_ENV);
    StackOptions options =
        new StackOptions(
            command,
            root,
            stateDir,
            autoPorts,
            Map.copyOf(ports),
            jdbcUrl,
            jdbcUrl.isPresent() && s.deprecatedUsed.contains(DEPRECATED_JDBC_URL_ENV),
            s.get("db-user", DB_USER_ENV),
            s.secret(DB_PASSWORD_ENV),
            !flags.containsKey("no-demo"),
            connectorConfig.isAbsolute() ? connectorConfig : root.resolve(connectorConfig),
            s.get("bootstrap-servers", null),
            s.get("connect-url", null).map(StackOptions::connectUrl),
            s.get("connector-jdbc-url", null),
            s.get("exactly-once", EXACTLY_ONCE_ENV)
                .flatMap(v -> starts ? Optional.of(delivery(v)) : leniently(() -> delivery(v))),
            List.copyOf(s.warnings));
    s.rejectUnknown();
    return options;
  }

  /**
   * {@code parse}'s value, or empty where it refuses the setting (a command that does not use it).
   */
  private static <T> Optional<T> leniently(java.util.function.Supplier<T> parse) {
    try {
      return Optional.of(parse.get());
    } catch (StackException e) {
      return Optional.empty();
    }
  }

  /**
   * {@code --connect-url}: an http or https URL with a host (without a scheme the HTTP client
   * refused it with a stack trace).
   */
  private static String connectUrl(String value) {
    String url = value.trim();
    try {
      java.net.URI uri = java.net.URI.create(url);
      String scheme = uri.getScheme();
      if (("http".equalsIgnoreCase(scheme) || "https".equalsIgnoreCase(scheme))
          && uri.getHost() != null) {
        return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
      }
    } catch (IllegalArgumentException e) {
      // reported below, without the parser's message
    }
    throw new StackException(
        "--connect-url must be an http:// or https:// URL with a host, such as"
            + " http://127.0.0.1:8083");
  }

  /**
   * The delivery guarantee: as given, else at-least-once (Connect's and the connector's default).
   */
  Delivery delivery() {
    return deliverySetting.orElse(Delivery.AT_LEAST_ONCE);
  }

  /**
   * {@code --exactly-once} alone is {@code true}; the variable takes {@code true} or {@code false}.
   */
  private static Delivery delivery(String value) {
    if (value.equalsIgnoreCase("true")) {
      return Delivery.EXACTLY_ONCE;
    }
    if (value.equalsIgnoreCase("false")) {
      return Delivery.AT_LEAST_ONCE;
    }
    throw new StackException(
        "--exactly-once (" + EXACTLY_ONCE_ENV + ") must be true or false, not '" + value + "'");
  }

  /** The database user: as given, else {@value #DEFAULT_DB_USER}. */
  String dbUser() {
    return dbUserSetting.orElse(DEFAULT_DB_USER);
  }

  static String deprecationWarning(String deprecated, String replacement) {
    String warning =
        deprecated
            + " is deprecated for the local stack and is read only until the next release; set "
            + replacement
            + " instead.";
    if (deprecated.equals(DEPRECATED_JDBC_URL_ENV)) {
      warning +=
          " Until then `up --no-demo` and `status` take it as your own PostgreSQL (no embedded"
              + " one starts); the demo (`up` without --no-demo, and `demo`) refuses it."
              + " OUTBOX_JDBC_URL is the operator CLI's variable: if you set it for the CLI,"
              + " unset it in this shell.";
    }
    return warning;
  }

  /**
   * The demo writes to its database (the connector's migrations, demo_orders, orders-eu and
   * orders-us rows) and registers a connector that publishes that table's orders-eu rows: it never
   * takes the database from {@code OUTBOX_JDBC_URL}, the operator CLI's variable (and the stack's
   * deprecated name), which may well name a real database. Throws when the URL came from there.
   */
  void requireDemoDatabaseNamedExplicitly() {
    if (jdbcUrlFromDeprecatedEnv) {
      throw demoRefusesDeprecatedJdbcUrl();
    }
  }

  /**
   * No JDBC URL given carries a password: the stack's record on disk keeps the URL, and the
   * connector's config, which Connect shows through its REST API, would too. Checked before
   * anything starts or writes to the database (it was refused only once the demo had migrated the
   * table, and with --no-demo never). The password goes in {@value #DB_PASSWORD_ENV}.
   */
  void requireNoPasswordInJdbcUrls() {
    for (Optional<String> url : List.of(externalJdbcUrl, connectorJdbcUrl)) {
      if (url.isPresent() && Redaction.carriesPassword(url.get())) {
        throw new StackException(
            "a JDBC URL given (--jdbc-url, --connector-jdbc-url, "
                + JDBC_URL_ENV
                + " or "
                + DEPRECATED_JDBC_URL_ENV
                + ") carries a password, which the stack's record and the connector's config would"
                + " keep: remove it from the URL and set "
                + DB_PASSWORD_ENV
                + " instead");
      }
    }
  }

  /** Why the demo does not run on the database {@code OUTBOX_JDBC_URL} names, and what to do. */
  static StackException demoRefusesDeprecatedJdbcUrl() {
    return new StackException(
        DEPRECATED_JDBC_URL_ENV
            + " names the database (in this shell, or the running stack was started with it), and"
            + " the demo does not take its database from it: the demo would migrate"
            + " the outbox table there, create demo_orders, write orders-eu and orders-us rows and"
            + " register a connector that publishes every orders-eu row of that table. "
            + DEPRECATED_JDBC_URL_ENV
            + " is the operator CLI's variable (and the local stack's deprecated name for "
            + JDBC_URL_ENV
            + ").\n  For the embedded PostgreSQL: unset "
            + DEPRECATED_JDBC_URL_ENV
            + " in this shell (and stop a stack started with it: ./local-stack.sh down)."
            + "\n  For the demo on that database on purpose: name it with --jdbc-url=URL (or "
            + JDBC_URL_ENV
            + ")."
            + "\n  For the services on it without the demo: ./local-stack.sh up --no-demo.");
  }

  /**
   * The port for {@code flag}: as requested, else (when auto) a free one that is none of {@code
   * taken}, else the default.
   */
  int port(String flag, java.util.Set<Integer> taken) {
    Integer requested = requestedPorts.get(flag);
    if (requested != null) {
      return requested;
    }
    if (!autoPorts) {
      return PORTS.get(flag).defaultPort();
    }
    int port = Ports.anyFree();
    while (taken.contains(port)) {
      port = Ports.anyFree();
    }
    return port;
  }

  boolean embeddedPostgres() {
    return externalJdbcUrl.isEmpty();
  }

  Path pluginDir() {
    return repoRoot.resolve("connector/target/plugin");
  }

  Path kafkaClasspathFile() {
    return repoRoot.resolve("local-stack/target/kafka.classpath");
  }

  Path workerConfigTemplate() {
    return repoRoot.resolve("config/connect-worker.properties");
  }

  /** The Prometheus JMX exporter agent the build copies (local-stack/pom.xml, metrics-agent). */
  Path metricsAgentJar() {
    return repoRoot.resolve("local-stack/target/agents/jmx_prometheus_javaagent.jar");
  }

  /** The exporter's rules for the relay's metrics, shared with docker/ and manifests/. */
  Path metricsRules() {
    return repoRoot.resolve(Summary.RULES);
  }

  /** {@code source}: the flag ({@code --pg-port}) or the variable the value came from. */
  private static int port(String source, String value) {
    try {
      int port = Integer.parseInt(value.trim());
      if (port < 1 || port > 65535) {
        throw new NumberFormatException();
      }
      return port;
    } catch (NumberFormatException e) {
      throw new StackException(source + " must be a port number (1-65535), not '" + value + "'");
    }
  }

  /**
   * Flags first, then environment variables, then a variable's deprecated name (with a warning);
   * remembers which flags were used.
   */
  private static final class Settings {
    private static final List<String> SWITCHES = List.of("no-demo", "no-build");
    private final Map<String, String> flags;
    private final Map<String, String> env;
    private final java.util.Set<String> used = new java.util.HashSet<>(SWITCHES);
    private final List<String> warnings = new ArrayList<>();
    private final java.util.Set<String> deprecatedUsed = new java.util.HashSet<>();

    Settings(Map<String, String> flags, Map<String, String> env) {
      this.flags = flags;
      this.env = env;
    }

    Optional<String> get(String flag, String envVar) {
      used.add(flag);
      String value = flags.get(flag);
      if (value == null && envVar != null) {
        value = fromEnv(envVar);
      }
      return value == null || value.isBlank() ? Optional.empty() : Optional.of(value.trim());
    }

    /** From the environment only, as it is (a password may have spaces at either end). */
    Optional<String> secret(String envVar) {
      String value = fromEnv(envVar);
      return value == null || value.isEmpty() ? Optional.empty() : Optional.of(value);
    }

    private String fromEnv(String envVar) {
      String value = env.get(envVar);
      String deprecated = DEPRECATED_ENV.get(envVar);
      if ((value == null || value.isBlank()) && deprecated != null) {
        value = env.get(deprecated);
        if (value != null && !value.isBlank()) {
          deprecatedUsed.add(deprecated);
          warnings.add(deprecationWarning(deprecated, envVar));
        }
      }
      return value;
    }

    void rejectUnknown() {
      for (String flag : flags.keySet()) {
        if (!used.contains(flag)) {
          throw new StackException("unknown option --" + flag + "\n" + USAGE);
        }
      }
    }
  }
}
