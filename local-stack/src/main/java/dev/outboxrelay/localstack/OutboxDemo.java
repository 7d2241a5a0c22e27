package dev.outboxrelay.localstack;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The demo: schema with a legacy row, the connector registered for {@code orders-eu}, rows for
 * {@code orders-eu} and {@code orders-us}, and then the proof, read back from Kafka and from the
 * table and its published log: the owned rows arrive in order and turn PUBLISHED (moved into the
 * published log), while the rows of the instance key no connector owns and the legacy row stay
 * exactly as written. Only the demo's own rows are judged: rows of a key that another registered
 * connector owns are left to it.
 */
final class OutboxDemo {
  private static final Duration ARRIVAL_TIMEOUT = Duration.ofSeconds(60);

  private final Console console;
  private final Database database;
  private final ConnectRest rest;
  private final String bootstrapServers;
  private final Delivery delivery;

  OutboxDemo(
      Console console,
      Database database,
      ConnectRest rest,
      String bootstrapServers,
      Delivery delivery) {
    this.console = console;
    this.database = database;
    this.rest = rest;
    this.bootstrapServers = bootstrapServers;
    this.delivery = delivery;
  }

  /**
   * @param connectorJdbcUrl the database as the Connect worker reaches it (differs from the
   *     launcher's view under docker compose)
   */
  void run(Path connectorConfig, String connectorJdbcUrl) {
    try {
      runSteps(connectorConfig, connectorJdbcUrl);
    } catch (StackException e) {
      throw e;
    } catch (RuntimeException e) {
      // A migration refused (no CREATE privilege, a newer schema), a Kafka client's error: said
      // as the demo's failure (exit 1, the services left running), not a stack trace (exit 2).
      // Flyway's messages may quote the JDBC URL: a password in it is masked.
      throw new StackException(
          "the demo failed: "
              + e.getClass().getSimpleName()
              + ": "
              + Redaction.text(String.valueOf(e.getMessage())),
          e);
    }
  }

  private void runSteps(Path connectorConfig, String connectorJdbcUrl) {
    DataSource dataSource = database.dataSource();
    Optional<String> legacy = new DemoSchema(dataSource, console).prepare();
    ConnectorRegistration.Registered connector =
        new ConnectorRegistration(rest, console)
            .register(connectorConfig, connectorJdbcUrl, database.user(), delivery);
    Set<String> ownKeys = Set.copyOf(connector.instanceKeys());

    String runId = UUID.randomUUID().toString().substring(0, 8);
    List<DemoRows.Row> rows = new DemoRows(dataSource, runId).write();
    console.step(
        "Outbox",
        "wrote "
            + rows.size()
            + " rows (run "
            + runId
            + "): "
            + count(rows, DemoRows.OWNED_KEY)
            + " for "
            + DemoRows.OWNED_KEY
            + " with PostgresOutboxWriter, each in one transaction with demo_orders; "
            + count(rows, DemoRows.OTHER_KEY)
            + " for "
            + DemoRows.OTHER_KEY
            + " with plain SQL");

    // Other connectors on this worker may own some of the demo's keys (docs/local-stack.md shows
    // how to register one for orders-us): their rows are theirs, and the demo does not judge them.
    Map<String, String> otherOwners = otherOwners(rest, connector.name());
    List<String> owned = idsWhere(rows, r -> ownKeys.contains(r.instanceKey()));
    List<String> unowned =
        idsWhere(
            rows,
            r -> !ownKeys.contains(r.instanceKey()) && !otherOwners.containsKey(r.instanceKey()));
    legacy.ifPresent(unowned::add);
    Map<String, Long> ofOthers = new TreeMap<>();
    rows.stream()
        .filter(r -> !ownKeys.contains(r.instanceKey()))
        .filter(r -> otherOwners.containsKey(r.instanceKey()))
        .forEach(r -> ofOthers.merge(r.instanceKey(), 1L, Long::sum));

    String arrived =
        new DemoConsumer(bootstrapServers, delivery, console)
            .await(
                runId,
                ownKeys,
                rows.stream().filter(r -> ownKeys.contains(r.instanceKey())).toList(),
                ARRIVAL_TIMEOUT);
    console.step("Kafka", arrived);
    OutboxReport report = new OutboxReport(dataSource);
    report.awaitPublished(owned, ARRIVAL_TIMEOUT);

    List<String> shown = new ArrayList<>();
    legacy.ifPresent(shown::add);
    rows.forEach(r -> shown.add(r.messageId()));
    List<OutboxReport.Row> table = report.rows(shown);
    console.step("Outbox", "the rows, read back from the outbox table and its published log:");
    OutboxReport.table(table).forEach(console::detail);
    console.step("Result", outcome(table, owned, unowned, ofOthers, otherOwners));
  }

  /**
   * Checks the demo's own rows only: its connector's rows are PUBLISHED, and the rows nobody owns
   * (no connector's instance keys, and the legacy row) are untouched. Rows of keys that another
   * connector owns are counted, not judged. Returns the result line; throws when a check fails.
   */
  static String outcome(
      List<OutboxReport.Row> table,
      List<String> owned,
      List<String> unowned,
      Map<String, Long> ofOthers,
      Map<String, String> otherOwners) {
    Map<String, OutboxReport.Row> byId = new HashMap<>();
    table.forEach(r -> byId.put(r.messageId(), r));
    long published =
        owned.stream()
            .map(byId::get)
            .filter(r -> r != null && "PUBLISHED".equals(r.status()))
            .count();
    long untouched =
        unowned.stream().map(byId::get).filter(r -> r != null && r.untouched()).count();
    if (published != owned.size() || untouched != unowned.size()) {
      throw new StackException(
          "unexpected outcome: "
              + published
              + " of the connector's "
              + owned.size()
              + " rows PUBLISHED, "
              + untouched
              + " of the "
              + unowned.size()
              + " rows no connector owns untouched");
    }
    Set<String> unownedKeys = new TreeSet<>();
    boolean legacyRow = false;
    for (String id : unowned) {
      String key = byId.get(id).instanceKey();
      if (key == null) {
        legacyRow = true;
      } else {
        unownedKeys.add(key);
      }
    }
    List<String> what = new ArrayList<>(unownedKeys);
    if (legacyRow) {
      what.add(what.isEmpty() ? "the legacy row" : "and the legacy row");
    }
    StringBuilder result =
        new StringBuilder("ok: ").append(published).append(" owned rows PUBLISHED in Kafka; ");
    result.append(untouched).append(untouched == 1 ? " row" : " rows");
    result.append(" of no connector's instance keys");
    if (!what.isEmpty()) {
      result.append(" (").append(String.join(", ", what)).append(")");
    }
    result.append(" untouched");
    ofOthers.forEach(
        (key, n) ->
            result
                .append("; ")
                .append(n)
                .append(' ')
                .append(key)
                .append(n == 1 ? " row" : " rows")
                .append(" left to connector ")
                .append(otherOwners.get(key))
                .append(" (not checked)"));
    return result.toString();
  }

  /**
   * Instance key to connector name, for every other outbox connector registered on the worker
   * (whatever its state: a paused or failed connector still owns its keys).
   */
  static Map<String, String> otherOwners(ConnectRest rest, String self) {
    Map<String, String> owners = new TreeMap<>();
    JsonNode connectors = rest.get("/connectors?expand=info");
    for (Map.Entry<String, JsonNode> entry : connectors.properties()) {
      JsonNode config = entry.getValue().path("info").path("config");
      String connectorClass = config.path("connector.class").asText("");
      if (entry.getKey().equals(self)
          || !(connectorClass.equals(ConnectWorker.CONNECTOR_CLASS)
              || connectorClass.equals("OutboxSourceConnector"))) {
        continue;
      }
      for (String key : config.path("instance.keys").asText("").split(",")) {
        if (!key.isBlank()) {
          owners.putIfAbsent(key.trim(), entry.getKey());
        }
      }
    }
    return owners;
  }

  private static List<String> idsWhere(
      List<DemoRows.Row> rows, java.util.function.Predicate<DemoRows.Row> filter) {
    return rows.stream()
        .filter(filter)
        .map(DemoRows.Row::messageId)
        .collect(java.util.stream.Collectors.toCollection(ArrayList::new));
  }

  private static long count(List<DemoRows.Row> rows, String instanceKey) {
    return rows.stream().filter(r -> r.instanceKey().equals(instanceKey)).count();
  }
}
