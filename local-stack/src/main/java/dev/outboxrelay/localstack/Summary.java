package dev.outboxrelay.localstack;

import java.nio.file.Path;

/** Where everything is, printed by {@code up} and {@code status}. */
final class Summary {
  static final String DASHBOARD = "config/metrics/grafana-dashboard.json";
  static final String RULES = "config/metrics/jmx-exporter.yml";

  private Summary() {}

  static void print(Console console, StackRecord stack, StateDir state, Path repoRoot) {
    String logs = relative(repoRoot, state.logs());
    console.blank();
    console.line("Local stack (all on loopback):");
    console.line("  Delivery         " + stack.delivery().describe());
    console.line("  Connect REST     " + stack.connectUrl());
    // Quoted: zsh (macOS's shell) takes an unquoted '?' for a glob and runs nothing.
    console.line(
        "                   curl -s '" + stack.connectUrl() + "/connectors?expand=status'");
    if (stack.hasMetrics()) {
      console.line(
          "  Metrics          " + stack.metricsUrl() + "  (Prometheus, the Connect worker)");
      console.line("                   curl -s " + stack.metricsUrl() + " | grep '^outbox_relay_'");
      console.line("  Dashboard        " + DASHBOARD + "  (Grafana, over " + RULES + ")");
    }
    console.line("  Kafka bootstrap  " + stack.bootstrapServers());
    console.line(
        "  PostgreSQL       "
            + Redaction.jdbcUrl(stack.jdbcUrl())
            + "  (user "
            + stack.dbUser()
            + (stack.embedded() ? ", no password, embedded)" : ", your own server)"));
    console.line(
        "  Logs             "
            + logs
            + "/{"
            + (stack.embedded() ? "postgres," : "")
            + "kafka,connect,launcher}.log");
    console.line(
        "  Effective config "
            + relative(repoRoot, state.connectDir().resolve("worker.properties"))
            + ", "
            + relative(repoRoot, state.kafkaDir().resolve("server.properties")));
    console.line("  Read the topic   " + consoleConsumer(repoRoot, state, stack));
    console.line("  Status / stop    ./local-stack.sh status   ./local-stack.sh down");
  }

  /** Kafka's own console consumer, on the classpath the build wrote. */
  static String consoleConsumer(Path repoRoot, StateDir state, StackRecord stack) {
    return "CLASSPATH=\"$(cat local-stack/target/kafka.classpath)\" java"
        + " -Dlog4j2.configurationFile="
        + relative(repoRoot, state.root().resolve("config/tools-log4j2.xml"))
        + " org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "
        + stack.bootstrapServers()
        + " --topic outbox.order --from-beginning --formatter-property print.key=true"
        + (stack.delivery().exactlyOnce() ? " --isolation-level " + Delivery.READ_COMMITTED : "");
  }

  static String relative(Path root, Path path) {
    return path.startsWith(root) ? root.relativize(path).toString() : path.toString();
  }
}
