package dev.outboxrelay.localstack;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * {@code demo}: the demo alone. Against the running local stack it needs no options: the addresses
 * come from the stack's record in the state directory. Against services that run elsewhere
 * (docker/docker-compose.yml runs it in a container next to Kafka, Connect and PostgreSQL) the
 * options name them; an option always wins over the record.
 */
final class DemoCommand {
  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(180);

  private final StackOptions options;
  private final Console console;

  DemoCommand(StackOptions options, Console console) {
    this.options = options;
    this.console = console;
  }

  /**
   * The demo's database must not come from {@code OUTBOX_JDBC_URL}: neither this shell's nor the
   * one a running stack was started with ({@code up --no-demo}), unless a URL is given now.
   */
  static void requireDatabaseNamedExplicitly(StackOptions options, Optional<StackRecord> stack) {
    options.requireDemoDatabaseNamedExplicitly();
    options.requireNoPasswordInJdbcUrls();
    if (options.externalJdbcUrl().isEmpty()
        && stack.map(StackRecord::jdbcUrlFromDeprecatedEnv).orElse(false)) {
      throw StackOptions.demoRefusesDeprecatedJdbcUrl();
    }
  }

  int run() {
    StateDir state = new StateDir(options.stateDir());
    Optional<StackRecord> stack = StackProcesses.runningStack(state);
    requireDatabaseNamedExplicitly(options, stack);
    Optional<String> jdbcUrl = options.externalJdbcUrl().or(() -> stack.map(StackRecord::jdbcUrl));
    Optional<String> bootstrap =
        options.bootstrapServers().or(() -> stack.map(StackRecord::bootstrapServers));
    Optional<String> connectUrl = options.connectUrl().or(() -> stack.map(StackRecord::connectUrl));
    requireAll(state, jdbcUrl, bootstrap, connectUrl);
    stack.ifPresent(
        s ->
            console.step(
                "Stack",
                "the local stack running in "
                    + Summary.relative(options.repoRoot(), state.root())
                    + (options.externalJdbcUrl().isPresent()
                            || options.bootstrapServers().isPresent()
                            || options.connectUrl().isPresent()
                        ? " (where no option says otherwise)"
                        : "")));
    // The record's user belongs to the record's database; a database given here has its own.
    String user =
        options
            .dbUserSetting()
            .or(
                () ->
                    options.externalJdbcUrl().isEmpty()
                        ? stack.map(StackRecord::dbUser)
                        : Optional.empty())
            .orElse(StackOptions.DEFAULT_DB_USER);
    boolean embedded =
        options.externalJdbcUrl().isEmpty() && stack.map(StackRecord::embedded).orElse(false);
    Database database = new Database(jdbcUrl.orElseThrow(), user, options.dbPassword(), embedded);
    ConnectRest rest = new ConnectRest(connectUrl.orElseThrow());
    console.step("Connect", "waiting for " + rest.baseUrl() + "/health");
    Waiter.until(
        "Kafka Connect healthy at " + rest.baseUrl(),
        CONNECT_TIMEOUT,
        () -> rest.tryGet("/health").map(ConnectRest.Response::ok).orElse(false),
        () -> {});
    database.requireReachable();
    // --exactly-once wins; else the running stack's guarantee; else the default.
    Delivery delivery =
        options
            .deliverySetting()
            .or(() -> stack.map(StackRecord::delivery))
            .orElse(Delivery.AT_LEAST_ONCE);
    new OutboxDemo(console, database, rest, bootstrap.orElseThrow(), delivery)
        .run(options.connectorConfig(), options.connectorJdbcUrl().orElse(jdbcUrl.orElseThrow()));
    return 0;
  }

  /** One error that names every missing option at once. */
  private static void requireAll(
      StateDir state,
      Optional<String> jdbcUrl,
      Optional<String> bootstrap,
      Optional<String> connectUrl) {
    List<String> missing = new ArrayList<>();
    if (jdbcUrl.isEmpty()) {
      missing.add("--jdbc-url");
    }
    if (bootstrap.isEmpty()) {
      missing.add("--bootstrap-servers");
    }
    if (connectUrl.isEmpty()) {
      missing.add("--connect-url");
    }
    if (missing.isEmpty()) {
      return;
    }
    String list =
        missing.size() == 1
            ? missing.get(0)
            : String.join(", ", missing.subList(0, missing.size() - 1))
                + " and "
                + missing.get(missing.size() - 1);
    throw new StackException(
        "demo needs "
            + list
            + ": no local stack runs in "
            + state.root()
            + " to take them from (start one with ./local-stack.sh up, or name the services)\n"
            + StackOptions.USAGE);
  }
}
