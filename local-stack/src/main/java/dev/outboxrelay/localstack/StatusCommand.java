package dev.outboxrelay.localstack;

import com.fasterxml.jackson.databind.JsonNode;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * {@code status}: what runs, the connectors' states, their headline metrics (from the worker's
 * Prometheus endpoint), and the outbox rows by owner and status. Exits 0 when every process of the
 * stack runs and no connector or task it lists has FAILED, 1 otherwise, the worker's REST API not
 * answering included (a script's health check reads the exit code), 3 when no stack is recorded.
 */
final class StatusCommand {
  private static final String FAILED = "FAILED";

  private final StackOptions options;
  private final Console console;

  StatusCommand(StackOptions options, Console console) {
    this.options = options;
    this.console = console;
  }

  int run() {
    StateDir state = new StateDir(options.stateDir());
    Optional<StackRecord> record = StackRecord.read(state.stackFile());
    Map<Component, Long> running = StackProcesses.running(state);
    if (record.isEmpty()) {
      if (running.isEmpty()) {
        console.line("No local stack is running (start one with ./local-stack.sh up).");
        return 3;
      }
      // Starting (the record is written once Connect is ready), or a launcher that died: the
      // processes it left hold their ports.
      console.line(
          "No local stack is recorded as running, but some of its processes run (starting, or left"
              + " by a launcher that ended early):");
      running.forEach(
          (component, pid) ->
              console.line(
                  String.format(Locale.ROOT, "  %-11s running (pid %d)", component.title(), pid)));
      console.line("Stop them with ./local-stack.sh down.");
      return 1;
    }
    StackRecord stack = record.get();
    for (Component component : Component.values()) {
      if (component == Component.POSTGRES && !stack.embedded()) {
        continue;
      }
      Long pid = running.get(component);
      console.line(
          String.format(
              Locale.ROOT,
              "  %-11s %s",
              component.title(),
              pid == null ? "NOT RUNNING" : "running (pid " + pid + ")"));
    }
    console.line(String.format(Locale.ROOT, "  %-11s %s", "Delivery", stack.delivery().describe()));
    boolean connectorsHealthy =
        running.containsKey(Component.CONNECT)
            && printConnectors(new ConnectRest(stack.connectUrl()));
    printMetrics(stack);
    printOutbox(
        new Database(stack.jdbcUrl(), stack.dbUser(), options.dbPassword(), stack.embedded()));
    Summary.print(console, stack, state, options.repoRoot());
    return running.size() == (stack.embedded() ? 3 : 2) && connectorsHealthy ? 0 : 1;
  }

  /**
   * Whether the worker's REST API answered and no connector or task it lists has FAILED (PAUSED,
   * UNASSIGNED and RESTARTING are an operator's choice or pass on their own).
   */
  private boolean printConnectors(ConnectRest rest) {
    Optional<ConnectRest.Response> answer = rest.tryGet("/connectors?expand=status&expand=info");
    if (answer.isEmpty() || !answer.get().ok()) {
      // The worker runs but its REST API does not answer (starting, or stuck): one line, and on.
      console.line(
          "  Connectors: not read ("
              + (answer.isEmpty()
                  ? "the worker's REST API does not answer"
                  : "the worker's REST API answered " + answer.get().status())
              + "; see "
              + options.stateDir().resolve("logs")
              + ")");
      return false;
    }
    JsonNode connectors = answer.get().json();
    console.line("  Connectors:" + (connectors.isEmpty() ? " none" : ""));
    boolean failed = false;
    for (Map.Entry<String, JsonNode> entry : connectors.properties()) {
      JsonNode status = entry.getValue().path("status");
      failed |= FAILED.equals(status.path("connector").path("state").asText());
      StringBuilder tasks = new StringBuilder();
      for (JsonNode task : status.path("tasks")) {
        tasks.append(" task ").append(task.path("id").asText()).append('=');
        tasks.append(task.path("state").asText());
        failed |= FAILED.equals(task.path("state").asText());
      }
      // A connector that sets its guarantee says which; one that does not runs the default.
      String guarantee =
          entry.getValue().path("info").path("config").path(Delivery.GUARANTEE).asText("");
      console.line(
          "    "
              + entry.getKey()
              + ": "
              + status.path("connector").path("state").asText()
              + tasks
              + (guarantee.isEmpty() ? "" : " (" + Delivery.GUARANTEE + "=" + guarantee + ")"));
    }
    if (failed) {
      console.line(
          "    A connector or task FAILED: its reason is in GET "
              + rest.baseUrl()
              + "/connectors/NAME/status (\"trace\") and in "
              + options.stateDir().resolve("logs")
              + "; restart it with POST .../connectors/NAME/restart?includeTasks=true&onlyFailed=true");
    }
    return !failed;
  }

  /** The headline figures per connector; one line, and no failure, when they cannot be read. */
  private void printMetrics(StackRecord stack) {
    if (!stack.hasMetrics()) {
      console.line(
          "  Metrics: this stack was started without a metrics endpoint"
              + " (./local-stack.sh down, then up, to get one)");
      return;
    }
    MetricsEndpoint endpoint = new MetricsEndpoint(stack.metricsUrl());
    MetricsEndpoint.Scrape scrape = endpoint.scrape();
    if (!scrape.ok()) {
      console.line("  Metrics: not reachable at " + endpoint.url() + " (" + scrape.failure() + ")");
      return;
    }
    Map<String, RelayFigures> figures = scrape.figures();
    if (figures.isEmpty()) {
      console.line(
          "  Metrics: "
              + endpoint.url()
              + " has no outbox_relay series (no task of the relay is running)");
      return;
    }
    console.line("  Metrics (" + endpoint.url() + ", all tasks of each connector):");
    for (RelayFigures connector : figures.values()) {
      connector.lines().forEach(line -> console.line("    " + line));
    }
    console.line(
        "    (backlog and lag as task 0 last read them: every metrics.backlog.interval.ms,"
            + " 5 s on this stack)");
  }

  /**
   * The rows by owner and status: the table's, and the published log's entries as PUBLISHED (schema
   * version 9; an older table has no log yet, and its published rows are in the table).
   */
  private void printOutbox(Database database) {
    String rows =
        "SELECT coalesce(instance_key, '(none: legacy)') AS owner, status FROM "
            + DemoSchema.TABLE.qualified();
    try (Connection c = database.dataSource().getConnection()) {
      if (exists(c, DemoSchema.TABLE.qualifiedPublishedLog())) {
        rows +=
            " UNION ALL SELECT instance_key, 'PUBLISHED' FROM "
                + DemoSchema.TABLE.qualifiedPublishedLog();
      }
      printOutbox(
          c, "SELECT owner, status, count(*) FROM (" + rows + ") r GROUP BY 1, 2 ORDER BY 1, 2");
    } catch (SQLException e) {
      console.line(
          "42P01".equals(e.getSQLState())
              ? "  Outbox rows: no outbox table yet (the demo creates it)"
              : "  Outbox rows: not readable (SQLState " + e.getSQLState() + ")");
    }
  }

  private static boolean exists(Connection c, String qualifiedName) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
      ps.setString(1, qualifiedName);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  private void printOutbox(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      console.line("  Outbox rows (instance_key, status, count):");
      while (rs.next()) {
        console.line(
            String.format(
                Locale.ROOT,
                "    %-16s %-10s %d",
                rs.getString(1),
                rs.getString(2),
                rs.getLong(3)));
      }
    }
  }
}
