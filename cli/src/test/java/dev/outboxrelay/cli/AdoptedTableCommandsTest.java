package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.DebeziumAdoption;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The data commands on a Debezium outbox table adopted in place, its message fields named with
 * {@code --column-*} as the connector's {@code column.*} settings name them: status, list, inspect
 * and requeue see the relay's rows only, never Debezium's legacy rows.
 */
class AdoptedTableCommandsTest {
  private static final String PARKED = "6f1c1a52-3c4e-4d7b-9a61-0c2f1b7d9e01";
  private static final String PENDING = "0b8e7a4d-2f19-4c1e-8d3a-5e6f7a8b9c0d";
  private static final String LEGACY = "9a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d";
  private static final String PUBLISHED = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f";
  private static final String[] COLUMNS = {
    "--column-message-id", "id",
    "--column-aggregate-type", "aggregatetype",
    "--column-aggregate-id", "aggregateid",
    "--column-event-type", "type",
    "--column-payload", "payload"
  };

  static String url;

  /** The outbox table of Debezium's outbox event router, as an application has it. */
  static final String CREATE_DEBEZIUM_TABLE =
      "CREATE TABLE outbox (id uuid NOT NULL, aggregatetype varchar(255) NOT NULL,"
          + " aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload jsonb)";

  /** Runs the adoption script's statements on that table, for instance key eu. */
  static void adopt(Statement s) throws SQLException {
    DebeziumAdoption adoption =
        new DebeziumAdoption(
            OutboxTable.parse("outbox"),
            "eu",
            new ColumnMapping("id", "aggregatetype", "aggregateid", "type", "payload", List.of()),
            List.of());
    for (String statement : adoption.statements()) {
      s.execute(statement);
    }
  }

  @BeforeAll
  static void adoptedTable() throws SQLException {
    url = TestDatabase.fresh("cli_adopted");
    try (Connection c = TestDatabase.connect(url);
        Statement s = c.createStatement()) {
      s.execute(CREATE_DEBEZIUM_TABLE);
      s.execute(insert(LEGACY, "OrderCreated"));
      adopt(s);
      s.execute(insert(PARKED, "OrderPaid"));
      s.execute(insert(PENDING, "OrderShipped"));
      s.execute(
          "UPDATE outbox SET status = 'EXHAUSTED', attempts = 3, parked_at = now(),"
              + " last_failure_code = 'BROKER_TIMEOUT' WHERE id = '"
              + PARKED
              + "'");
      // Published as the relay publishes (schema version 9): moved into the published log, its
      // message fields as text.
      s.execute(insert(PUBLISHED, "OrderPlaced"));
      s.execute(publish(PUBLISHED));
    }
  }

  /** Publishes the row as the relay does (schema version 9): moved into the published log. */
  static String publish(String id) {
    return "WITH moved AS (DELETE FROM outbox WHERE id = '"
        + id
        + "' RETURNING *) INSERT INTO outbox_published (seq, message_id, instance_key,"
        + " aggregate_type, aggregate_id, event_type, correlation_id, created_at, attempts,"
        + " abandoned_claims, lease_token, published_at, kafka_topic, kafka_partition,"
        + " kafka_offset) SELECT seq, id::text, instance_key, aggregatetype::text,"
        + " aggregateid::text, type::text, correlation_id, created_at, 1, 0, 1, now(),"
        + " 'outbox.order', 0, 5 FROM moved";
  }

  private static String insert(String id, String type) {
    return "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES ('"
        + id
        + "', 'order', 'o-1', '"
        + type
        + "', '{\"total\": 12}')";
  }

  private static Cli.Result run(String command, String... more) {
    List<String> args = new ArrayList<>(List.of(command, "--instance-key", "eu"));
    args.addAll(List.of(COLUMNS));
    args.addAll(List.of(more));
    return Cli.against(url).run(args.toArray(String[]::new));
  }

  @Test
  void statusCountsTheRelaysRowsAndNamesTheOldestParkedOne() {
    Cli.Result r = run("status", "--json");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    JsonNode json = r.json();
    assertEquals(3, json.get("total").asLong(), "Debezium's row is not counted: " + r);
    assertEquals(1, json.get("counts").get("PUBLISHED").asLong(), r::toString);
    assertEquals(PARKED, json.get("oldest_exhausted").get("message_id").asText());
  }

  @Test
  void listAndInspectReadTheDebeziumColumns() {
    Cli.Result list = run("list", "--status", "EXHAUSTED", "--json");
    assertEquals(ExitCode.OK, list.exitCode(), list::toString);
    JsonNode row = list.json().get(0);
    assertEquals(PARKED, row.get("message_id").asText());
    assertEquals("o-1", row.get("aggregate_id").asText());
    assertEquals("OrderPaid", row.get("event_type").asText());

    Cli.Result inspect = run("inspect", PENDING, "--payload");
    assertEquals(ExitCode.OK, inspect.exitCode(), inspect::toString);
    assertTrue(inspect.hasLine("status +PENDING"), inspect::toString);
    assertTrue(inspect.hasLine("payload size +13 bytes"), inspect::toString);
    assertTrue(inspect.out().contains("{\"total\": 12}"), inspect::toString);

    Cli.Result legacy = run("inspect", LEGACY);
    assertEquals(
        ExitCode.NOTHING_MATCHED, legacy.exitCode(), "a legacy row is not the key's: " + legacy);
  }

  @Test
  void listAndInspectFindThePublishedLogsEntryAlongsideTheDebeziumColumns() {
    Cli.Result list = run("list", "--status", "PUBLISHED", "--json");
    assertEquals(ExitCode.OK, list.exitCode(), list::toString);
    assertEquals(1, list.json().size(), list::toString);
    JsonNode row = list.json().get(0);
    assertEquals(PUBLISHED, row.get("message_id").asText());
    assertEquals("OrderPlaced", row.get("event_type").asText());
    assertEquals(5, row.get("kafka_offset").asLong());

    // With the payload: the table's jsonb payload and the log's missing one are one column.
    Cli.Result inspect = run("inspect", PUBLISHED, "--payload", "--json");
    assertEquals(ExitCode.OK, inspect.exitCode(), inspect::toString);
    assertEquals("PUBLISHED", inspect.json().get("status").asText());
    assertTrue(inspect.json().get("payload_utf8").isNull(), inspect::toString);

    Cli.Result requeue = run("requeue", "--message-id", PUBLISHED);
    assertEquals(ExitCode.NOTHING_MATCHED, requeue.exitCode(), requeue::toString);
    assertTrue(requeue.hasLine(PUBLISHED + " +NOT_PARKED +PUBLISHED"), requeue::toString);
  }

  @Test
  void requeueByIdSendsTheParkedRowAgain() {
    Cli.Result parked = run("inspect", PARKED, "--json");
    assertFalse(parked.json().get("parked_at").isNull(), parked::toString);

    Cli.Result r = run("requeue", "--message-id", PARKED);

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    Cli.Result inspect = run("inspect", PARKED, "--json");
    assertEquals("PENDING", inspect.json().get("status").asText(), inspect::toString);
    // Back among the rows awaiting delivery: the relay's claim requires parked_at IS NULL.
    assertTrue(inspect.json().get("parked_at").isNull(), inspect::toString);
    assertEquals(0, inspect.json().get("attempts").asInt(), inspect::toString);
  }

  /**
   * On an adopted table message ids are unique among the relay's rows only: a legacy row may share
   * one. Requeue by id reports the key's own row, once, and tells nothing of the legacy one.
   */
  @Test
  void requeueByIdReportsTheKeysRowOnceBesideALegacyRowOfTheSameId() throws SQLException {
    insertLegacy(PENDING, "o-9");

    Cli.Result r = run("requeue", "--message-id", PENDING);

    assertEquals(ExitCode.NOTHING_MATCHED, r.exitCode(), r::toString);
    assertEquals(1, r.out().lines().filter(line -> line.contains(PENDING)).count(), r::toString);
    assertTrue(r.hasLine(PENDING + " +NOT_PARKED +PENDING"), r::toString);

    // A legacy row sharing the id of the key's published-log entry: the entry is the key's row.
    insertLegacy(PUBLISHED, "o-8");
    Cli.Result published = run("requeue", "--message-id", PUBLISHED);
    assertTrue(published.hasLine(PUBLISHED + " +NOT_PARKED +PUBLISHED"), published::toString);
  }

  /** Discard finds rows by the mapped id too, and never touches one of Debezium's legacy rows. */
  @Test
  void discardLeavesALegacyRowAlone() throws SQLException {
    Cli.Result r = run("discard", "--message-id", LEGACY, "--json");

    assertEquals(ExitCode.NOTHING_MATCHED, r.exitCode(), r::toString);
    assertEquals("OTHER_INSTANCE", r.json().get("not_discarded").get(0).get("reason").asText());
    try (Connection c = TestDatabase.connect(url);
        Statement s = c.createStatement();
        java.sql.ResultSet rs =
            s.executeQuery("SELECT count(*) FROM outbox WHERE id = '" + LEGACY + "'")) {
      rs.next();
      assertEquals(1, rs.getInt(1), "the legacy row is still there");
    }
  }

  /** Park finds the key's rows by the mapped id (a dry run: the table is shared by the tests). */
  @Test
  void parkFindsTheKeysRowByTheMappedIdAndLeavesALegacyRowAlone() {
    Cli.Result r =
        run("park", "--message-id", PENDING, "--message-id", LEGACY, "--dry-run", "--json");

    assertEquals(ExitCode.PARTIAL, r.exitCode(), r::toString); // the legacy row's id
    assertEquals(1, r.json().get("would_park").asLong(), r::toString);
    assertEquals("OTHER_INSTANCE", r.json().get("not_parked").get(0).get("reason").asText());
  }

  /** A row without an instance key, as Debezium's rows before the adoption; ids may repeat. */
  private static void insertLegacy(String id, String aggregateId) throws SQLException {
    try (Connection c = TestDatabase.connect(url);
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      s.execute("ALTER TABLE outbox DROP CONSTRAINT outbox_instance_key_required");
      s.execute(
          "INSERT INTO outbox (id, aggregatetype, aggregateid, type, instance_key) VALUES ('"
              + id
              + "', 'order', '"
              + aggregateId
              + "', 'OrderCreated', NULL)");
      s.execute(
          "ALTER TABLE outbox ADD CONSTRAINT outbox_instance_key_required"
              + " CHECK (instance_key IS NOT NULL) NOT VALID");
      c.commit();
    }
  }

  @Test
  void aColumnOptionThatIsNoColumnNameIsAUsageError() {
    Cli.Result r =
        Cli.against(url)
            .run("status", "--instance-key", "eu", "--column-message-id", "id; DROP TABLE x");
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertEquals("error: --column-message-id must be " + ColumnMapping.COLUMN_RULE + "\n", r.err());
  }

  /** The message id read from the aggregate type column: a discard of every row of the type. */
  @Test
  void aMessageIdColumnThatAnotherFieldReadsIsAUsageError() {
    Cli.Result r =
        Cli.against(url)
            .run(
                "discard",
                "--instance-key",
                "eu",
                "--message-id",
                "order",
                "--column-message-id",
                "aggregatetype",
                "--column-aggregate-type",
                "aggregatetype");
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertEquals(
        "error: --column-message-id is the aggregate type column too (aggregatetype): many rows"
            + " share its value\n",
        r.err());
  }

  /** The message id read from instance_key would make a discard by message id one of the key. */
  @Test
  void aColumnOptionNamingAnotherOfTheRelaysColumnsIsAUsageError() {
    Cli.Result r =
        Cli.against(url)
            .run(
                "discard",
                "--instance-key",
                "eu",
                "--message-id",
                "eu",
                "--column-message-id",
                "instance_key");
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertEquals(
        "error: --column-message-id names the relay's own column instance_key, which holds the"
            + " row's instance_key, not its message_id\n",
        r.err());
  }
}
