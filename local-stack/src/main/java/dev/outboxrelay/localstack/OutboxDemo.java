package dev.outboxrelay.localstack;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The demo: schema with a legacy row, the connector registered for {@code orders-eu}, rows for
 * {@code orders-eu} and {@code orders-us}, and then the proof, read back from Kafka and from the
 * table: the owned rows arrive in order and turn PUBLISHED, while the rows of the instance key no
 * connector owns and the legacy row stay exactly as written.
 */
final class OutboxDemo {
  private static final Duration ARRIVAL_TIMEOUT = Duration.ofSeconds(60);

  private final Console console;
  private final Database database;
  private final ConnectRest rest;
  private final String bootstrapServers;

  OutboxDemo(Console console, Database database, ConnectRest rest, String bootstrapServers) {
    this.console = console;
    this.database = database;
    this.rest = rest;
    this.bootstrapServers = bootstrapServers;
  }

  /**
   * @param connectorJdbcUrl the database as the Connect worker reaches it (differs from the
   *     launcher's view under docker compose)
   */
  void run(Path connectorConfig, String connectorJdbcUrl) {
    DataSource dataSource = database.dataSource();
    Optional<String> legacy = new DemoSchema(dataSource, console).prepare();
    ConnectorRegistration.Registered connector =
        new ConnectorRegistration(rest, console)
            .register(connectorConfig, connectorJdbcUrl, database.user());

    String runId = UUID.randomUUID().toString().substring(0, 8);
    List<DemoRows.Row> rows = new DemoRows(dataSource, runId).write();
    List<String> owned = idsWhere(rows, r -> connector.instanceKeys().contains(r.instanceKey()));
    List<String> notOwned =
        idsWhere(rows, r -> !connector.instanceKeys().contains(r.instanceKey()));
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

    new DemoConsumer(bootstrapServers, console).await(runId, owned.size(), ARRIVAL_TIMEOUT);
    OutboxReport report = new OutboxReport(dataSource);
    report.awaitPublished(owned, ARRIVAL_TIMEOUT);

    List<String> shown = new ArrayList<>();
    legacy.ifPresent(shown::add);
    rows.forEach(r -> shown.add(r.messageId()));
    List<OutboxReport.Row> table = report.rows(shown);
    console.step("Outbox", "the rows, read back from the outbox table:");
    OutboxReport.table(table).forEach(console::detail);
    verify(table, owned.size(), notOwned.size() + legacy.map(l -> 1).orElse(0));
  }

  private void verify(List<OutboxReport.Row> table, int owned, int others) {
    long published = table.stream().filter(r -> "PUBLISHED".equals(r.status())).count();
    long untouched = table.stream().filter(OutboxReport.Row::untouched).count();
    if (published != owned || untouched != others) {
      throw new StackException(
          "unexpected outcome: "
              + published
              + " PUBLISHED (expected "
              + owned
              + "), "
              + untouched
              + " untouched (expected "
              + others
              + ")");
    }
    console.step(
        "Result",
        "ok: "
            + published
            + " owned rows PUBLISHED in Kafka; "
            + untouched
            + " rows of no connector's instance keys (orders-us, and the legacy row) untouched");
  }

  private static List<String> idsWhere(
      List<DemoRows.Row> rows, java.util.function.Predicate<DemoRows.Row> filter) {
    return rows.stream().filter(filter).map(DemoRows.Row::messageId).toList();
  }

  private static long count(List<DemoRows.Row> rows, String instanceKey) {
    return rows.stream().filter(r -> r.instanceKey().equals(instanceKey)).count();
  }
}
