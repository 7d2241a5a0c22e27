package dev.outboxrelay.localstack;

import java.time.Duration;

/**
 * {@code demo}: the demo alone, against services that run elsewhere; docker/docker-compose.yml runs
 * it in a container next to Kafka, Connect and PostgreSQL.
 */
final class DemoCommand {
  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(180);

  private final StackOptions options;
  private final Console console;

  DemoCommand(StackOptions options, Console console) {
    this.options = options;
    this.console = console;
  }

  int run() {
    String jdbcUrl = require(options.externalJdbcUrl().orElse(null), "--jdbc-url");
    String bootstrap = require(options.bootstrapServers().orElse(null), "--bootstrap-servers");
    String connectUrl = require(options.connectUrl().orElse(null), "--connect-url");
    Database database = new Database(jdbcUrl, options.dbUser(), options.dbPassword(), false);
    ConnectRest rest = new ConnectRest(connectUrl);
    console.step("Connect", "waiting for " + connectUrl + "/health");
    Waiter.until(
        "Kafka Connect healthy at " + connectUrl,
        CONNECT_TIMEOUT,
        () -> rest.tryGet("/health").map(ConnectRest.Response::ok).orElse(false),
        () -> {});
    database.requireReachable();
    new OutboxDemo(console, database, rest, bootstrap)
        .run(options.connectorConfig(), options.connectorJdbcUrl().orElse(jdbcUrl));
    return 0;
  }

  private static String require(String value, String flag) {
    if (value == null) {
      throw new StackException("demo needs " + flag + "\n" + StackOptions.USAGE);
    }
    return value;
  }
}
