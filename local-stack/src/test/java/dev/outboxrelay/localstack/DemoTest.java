package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo's decisions that need no running services: which options it lacks, what it keeps of a
 * registered connector, and which rows it judges. LocalStackIT runs it against a real stack.
 */
class DemoTest {
  @TempDir Path stateDir;

  record Run(int exit, String out, String err) {}

  private Run localStack(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    List<String> all = new ArrayList<>(List.of(args));
    all.add("--repo-root=" + RepoFiles.root());
    all.add("--state-dir=" + stateDir);
    int exit =
        LocalStack.run(
            all.toArray(String[]::new),
            Map.of(),
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Run(
        exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  @Test
  void withoutARunningStackTheDemoNamesEveryMissingOptionAtOnce() {
    Run run = localStack("demo");
    assertEquals(1, run.exit(), run.err());
    assertTrue(
        run.err()
            .contains(
                "local-stack: demo needs --jdbc-url, --bootstrap-servers and --connect-url: no"
                    + " local stack runs in "
                    + stateDir),
        run.err());

    Run some = localStack("demo", "--jdbc-url=jdbc:postgresql://127.0.0.1:1/x");
    assertTrue(
        some.err().contains("demo needs --bootstrap-servers and --connect-url: no local stack"),
        some.err());
  }

  @Test
  void runningAnswersOneAndPrintsNothingWhenNoStackRuns() {
    Run run = localStack("running");
    assertEquals(1, run.exit());
    assertEquals("", run.out() + run.err());
  }

  @Test
  void aRegisteredConnectorKeepsItsTasksMaxAndTheChangesAreNamed() {
    Path file = RepoFiles.file("config/local-connector.json");
    ObjectNode config = ConnectRest.JSON.createObjectNode();
    ConnectorRegistration.prepare(
        file,
        "jdbc:postgresql://127.0.0.1:15432/outbox",
        "postgres",
        Delivery.AT_LEAST_ONCE,
        config);
    ObjectNode registered = config.deepCopy();
    registered.put("name", "outbox-relay-local");
    registered.put("tasks.max", "2");
    registered.put("claim.batch.size", "50");

    String said = ConnectorRegistration.keepTasksMax(registered, config, file);

    assertEquals("2", config.path("tasks.max").asText());
    assertEquals(
        "already registered: keeps its tasks.max=2 (local-connector.json says 1); settings set to"
            + " the file's: claim.batch.size",
        said);
  }

  /**
   * The connector's JDBC URL goes into its config, which Connect stores and shows at GET
   * /connectors/<name>/config: one carrying a password is refused, and the password not repeated.
   */
  @Test
  void aConnectorJdbcUrlCarryingAPasswordIsRefused() {
    Path file = RepoFiles.file("config/local-connector.json");
    for (String url :
        List.of(
            "jdbc:postgresql://h/outbox?user=app&password=s3cret",
            "jdbc:postgresql://h/outbox?sslpassword=s3cret",
            "jdbc:postgresql://app:s3cret@h/outbox")) {
      ObjectNode config = ConnectRest.JSON.createObjectNode();
      StackException e =
          assertThrows(
              StackException.class,
              () ->
                  ConnectorRegistration.prepare(file, url, "app", Delivery.AT_LEAST_ONCE, config));
      assertTrue(e.getMessage().contains("carries a password"), e.getMessage());
      assertTrue(e.getMessage().contains("LOCAL_STACK_DB_PASSWORD"), e.getMessage());
      assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
      assertEquals(0, config.size(), "nothing prepared");
    }
  }

  /**
   * A failure that is not the launcher's own (the migration's, a Kafka client's) is the demo's
   * failure, exit 1 with the services left running, not an unexpected one (exit 2, a stack trace);
   * a password in its message is masked.
   */
  @Test
  void aFailureOfTheMigrationIsTheDemosFailure() {
    String url = "jdbc:postgresql://127.0.0.1:" + Ports.anyFree() + "/outbox?password=s3cret";
    OutboxDemo demo =
        new OutboxDemo(
            new Console(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)),
            new Database(url, "postgres", java.util.Optional.empty(), false),
            new ConnectRest("http://127.0.0.1:1"),
            "127.0.0.1:1",
            Delivery.AT_LEAST_ONCE);

    StackException e =
        assertThrows(
            StackException.class,
            () -> demo.run(RepoFiles.file("config/local-connector.json"), url));
    assertTrue(e.getMessage().startsWith("the demo failed: "), e.getMessage());
    assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
  }

  @Test
  void anUnchangedConnectorIsSaidToBeUnchanged() {
    Path file = RepoFiles.file("config/local-connector.json");
    ObjectNode config = ConnectRest.JSON.createObjectNode();
    ConnectorRegistration.prepare(
        file,
        "jdbc:postgresql://127.0.0.1:15432/outbox",
        "postgres",
        Delivery.AT_LEAST_ONCE,
        config);
    ObjectNode registered = config.deepCopy();
    registered.put("name", "outbox-relay-local");

    assertEquals(
        "already registered: keeps its tasks.max=1; its other settings already equal the file's",
        ConnectorRegistration.keepTasksMax(registered, config, file));
  }

  /** A row as {@link OutboxReport} reads it; a PUBLISHED one from the published log (no owner). */
  private static OutboxReport.Row row(String id, String key, String status, int attempts) {
    boolean published = status.equals("PUBLISHED");
    return new OutboxReport.Row(
        id.hashCode(),
        id,
        key,
        "order-1",
        "OrderPlaced",
        status,
        attempts,
        null,
        published ? 1 : 0,
        published ? "outbox.order" : null,
        published ? 0 : null,
        published ? 7L : null);
  }

  @Test
  void theDemoJudgesItsOwnRowsOnly() {
    List<OutboxReport.Row> table =
        List.of(
            row("legacy", null, "PENDING", 0),
            row("eu-1", "orders-eu", "PUBLISHED", 0),
            row("eu-2", "orders-eu", "PUBLISHED", 0),
            // Relayed by the second connector docs/local-stack.md shows how to register.
            row("us-1", "orders-us", "PUBLISHED", 0),
            row("us-2", "orders-us", "PUBLISHED", 0));

    String result =
        OutboxDemo.outcome(
            table,
            List.of("eu-1", "eu-2"),
            new ArrayList<>(List.of("legacy")),
            Map.of("orders-us", 2L),
            Map.of("orders-us", "outbox-relay-us"));

    assertEquals(
        "ok: 2 owned rows PUBLISHED in Kafka; 1 row of no connector's instance keys (the legacy"
            + " row) untouched; 2 orders-us rows left to connector outbox-relay-us (not checked)",
        result);
  }

  /**
   * What the consumer says of the records: each row once and each aggregate's events in the order
   * written, or the demo fails; a copy is allowed at least once, not exactly once. It counted
   * records before, so a copy stood in for a row, and order was never checked.
   */
  @Test
  void theRecordsMustKeepEachAggregatesOrderAndExactlyOnceArriveOnce() {
    List<DemoRows.Row> owned =
        List.of(
            new DemoRows.Row("p1", "orders-eu", "order-1", "OrderPlaced"),
            new DemoRows.Row("p2", "orders-eu", "order-2", "OrderPlaced"),
            new DemoRows.Row("paid1", "orders-eu", "order-1", "OrderPaid"));

    assertEquals(
        "3 rows arrived, each aggregate's events in the order written, each once",
        DemoConsumer.judge(List.of("p2", "p1", "paid1"), owned, true));
    StackException reordered =
        assertThrows(
            StackException.class,
            () -> DemoConsumer.judge(List.of("paid1", "p1", "p2"), owned, false));
    assertEquals(
        "order-1's OrderPaid arrived before its OrderPlaced: per-aggregate order broken",
        reordered.getMessage());
    List<String> withCopy = List.of("p1", "p2", "p1", "paid1");
    assertEquals(
        "3 rows arrived, each aggregate's events in the order written; 1 of them more than once,"
            + " as at least once allows",
        DemoConsumer.judge(withCopy, owned, false));
    assertThrows(StackException.class, () -> DemoConsumer.judge(withCopy, owned, true));
  }

  @Test
  void withoutASecondConnectorTheOtherKeysRowsMustStayUntouched() {
    List<OutboxReport.Row> table =
        List.of(
            row("legacy", null, "PENDING", 0),
            row("eu-1", "orders-eu", "PUBLISHED", 0),
            row("us-1", "orders-us", "PENDING", 0));
    assertEquals(
        "ok: 1 owned rows PUBLISHED in Kafka; 2 rows of no connector's instance keys (orders-us,"
            + " and the legacy row) untouched",
        OutboxDemo.outcome(table, List.of("eu-1"), List.of("us-1", "legacy"), Map.of(), Map.of()));

    List<OutboxReport.Row> touched =
        List.of(
            row("legacy", null, "PENDING", 0),
            row("eu-1", "orders-eu", "PUBLISHED", 0),
            row("us-1", "orders-us", "PENDING", 1));
    StackException e =
        assertThrows(
            StackException.class,
            () ->
                OutboxDemo.outcome(
                    touched, List.of("eu-1"), List.of("us-1", "legacy"), Map.of(), Map.of()));
    assertEquals(
        "unexpected outcome: 1 of the connector's 1 rows PUBLISHED, 1 of the 2 rows no connector"
            + " owns untouched",
        e.getMessage());
  }

  @Test
  void anOwnedRowThatIsNotPublishedFailsTheDemo() {
    List<OutboxReport.Row> table =
        List.of(row("eu-1", "orders-eu", "PUBLISHED", 0), row("eu-2", "orders-eu", "AMBIGUOUS", 1));
    StackException e =
        assertThrows(
            StackException.class,
            () ->
                OutboxDemo.outcome(table, List.of("eu-1", "eu-2"), List.of(), Map.of(), Map.of()));
    assertFalse(e.getMessage().startsWith("ok"), e.getMessage());
    assertTrue(e.getMessage().contains("1 of the connector's 2 rows PUBLISHED"), e.getMessage());
  }
}
