package dev.outboxrelay.config;

import static dev.outboxrelay.config.ConfigValidationTest.errors;
import static dev.outboxrelay.config.ConfigValidationTest.only;
import static dev.outboxrelay.config.ConfigValidationTest.props;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.mapping.RoutingConvention;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.ColumnMapping.HeaderColumn;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.testing.DebeziumOutboxTable;
import dev.outboxrelay.testing.OutboxDb;
import java.sql.Connection;
import java.sql.Statement;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The {@code column.*} settings: each bad one reported by {@code validate()} on its own key, with a
 * message that names the setting and not its value; good ones accepted against a Debezium outbox
 * table adopted in place.
 */
class ColumnMappingValidationTest {
  static OutboxDb adopted;
  static OutboxDb notAdopted;

  @BeforeAll
  static void tables() throws Exception {
    adopted = OutboxDb.fresh("config_adopted");
    new DebeziumOutboxTable(adopted).adopt("orders");
    try (Connection c = adopted.connection();
        Statement st = c.createStatement()) {
      st.execute(
          "CREATE DOMAIN event_time AS timestamptz; CREATE DOMAIN order_time AS event_time;"
              + " ALTER TABLE outbox ADD COLUMN occurred_at timestamp,"
              + " ADD COLUMN occurred_tz event_time, ADD COLUMN ordered_at order_time,"
              + " ADD COLUMN occurred_text text");
    }
    notAdopted = OutboxDb.fresh("config_debezium");
    new DebeziumOutboxTable(notAdopted);
  }

  @AfterAll
  static void close() {
    adopted.close();
    notAdopted.close();
  }

  private static Map<String, String> debezium(OutboxDb db) {
    Map<String, String> props = props(db.url());
    props.putAll(DebeziumOutboxTable.COLUMN_SETTINGS);
    props.put("routing.convention", "debezium");
    props.put("payload.format", "string");
    props.put("column.additional.placement", "type:header:eventType,aggregatetype:header:kind");
    return props;
  }

  @Test
  void anAdoptedTableWithItsColumnsNamedIsValid() {
    assertEquals(Map.of(), errors(debezium(adopted)));
  }

  @Test
  void aMappedColumnTheTableLacksIsReportedOnItsKey() {
    Map<String, String> props = debezium(adopted);
    props.put("column.aggregate.id", "aggregate_idx");

    String message = only(errors(props), "column.aggregate.id");
    assertEquals(
        "column.aggregate.id names a column that outbox.table does not have: set it to the column"
            + " that holds this field",
        message);
  }

  @Test
  void theRelaysOwnNameWhereTheTableHasAnotherIsReportedOnTheTable() {
    Map<String, String> props = debezium(adopted);
    props.remove("column.message.id");

    String message = only(errors(props), "outbox.table");
    assertTrue(message.startsWith("outbox.table lacks 1 of the 25 columns"), message);
    assertTrue(message.contains("message_id"), message);
  }

  @Test
  void aDebeziumTableNotYetAdoptedLacksTheRelaysState() {
    String message = only(errors(debezium(notAdopted)), "outbox.table");
    assertTrue(message.startsWith("outbox.table lacks 20 of the 25 columns"), message);
  }

  /**
   * A nullable aggregate id column is accepted in either guarantee: a row without an aggregate id
   * hashes like an empty one, so it is in one share and one exactly-once bucket (the store tests
   * show it claimed there), and goes as a keyless record.
   */
  @Test
  void aNullableAggregateIdColumnIsAcceptedInEitherGuarantee() throws Exception {
    try (OutboxDb db = OutboxDb.fresh("config_aggregate_nullable")) {
      new DebeziumOutboxTable(db).adopt("orders");
      try (var c = db.connection();
          var s = c.createStatement()) {
        s.execute("ALTER TABLE outbox ALTER COLUMN aggregateid DROP NOT NULL");
      }
      Map<String, String> props = debezium(db);
      assertEquals(Map.of(), errors(props));

      props.put("delivery.guarantee", "exactly-once");
      props.put("exactly.once.support", "required");
      assertEquals(Map.of(), errors(props));
    }
  }

  /**
   * The adoption script's indexes are built one by one while the application writes; one whose
   * failed build was dropped and not run again is named (the table's own primary key, on Debezium's
   * id, is not the unique index on seq that the relay reads).
   */
  @Test
  void anAdoptedTableMissingAnIndexOfTheScriptIsReportedOnTheTable() throws Exception {
    try (OutboxDb db = OutboxDb.fresh("config_adopted_index")) {
      new DebeziumOutboxTable(db).adopt("orders");
      try (var c = db.connection();
          var s = c.createStatement()) {
        s.execute("DROP INDEX outbox_seq_key");
        s.execute("DROP INDEX outbox_due_aggregate_idx");
      }
      String message = only(errors(debezium(db)), "outbox.table");
      assertTrue(
          message.startsWith(
              "outbox.table lacks indexes the relay reads: a unique index on seq (outcome writes"
                  + " and claims find rows by it), outbox_due_aggregate_idx (ordered claims);"
                  + " without them"),
          message);
    }
  }

  /** A row without a message id would fail every claim of its task, with nothing to park. */
  @Test
  void aNullableMessageIdColumnIsReportedOnItsKey() throws Exception {
    try (OutboxDb db = OutboxDb.fresh("config_message_id_nullable")) {
      new DebeziumOutboxTable(db).adopt("orders");
      try (var c = db.connection();
          var s = c.createStatement()) {
        s.execute("ALTER TABLE outbox ALTER COLUMN id DROP NOT NULL");
      }
      assertEquals(
          "the message id column id of outbox.table allows NULL: a row without a message id cannot"
              + " be relayed, and its claim would fail the task; add ALTER TABLE ... ADD CONSTRAINT"
              + " ... CHECK (instance_key IS NULL OR id IS NOT NULL) NOT VALID (reads no row, so it"
              + " holds the table's lock for a moment only), or declare the column NOT NULL",
          only(errors(debezium(db)), "column.message.id"));

      try (var c = db.connection();
          var s = c.createStatement()) {
        s.execute(
            "ALTER TABLE outbox ADD CONSTRAINT outbox_id_check"
                + " CHECK (instance_key IS NULL OR id IS NOT NULL) NOT VALID");
      }
      assertEquals(Map.of(), errors(debezium(db)), "the relay's rows keep an id");

      try (var c = db.connection();
          var s = c.createStatement()) {
        s.execute("ALTER TABLE outbox DROP CONSTRAINT outbox_id_check");
        s.execute("ALTER TABLE outbox ADD CONSTRAINT outbox_id_check CHECK (id IS NOT NULL)");
      }
      assertEquals(Map.of(), errors(debezium(db)), "every row keeps an id");

      try (var c = db.connection();
          var s = c.createStatement()) {
        s.execute("ALTER TABLE outbox DROP CONSTRAINT outbox_id_check");
        s.execute("ALTER TABLE outbox ALTER COLUMN id SET NOT NULL");
      }
      assertEquals(Map.of(), errors(debezium(db)), "NOT NULL");
    }
  }

  /**
   * A column of the relay's own name is read without a cast: of another type than text, varchar or
   * char, every claim (a bigint aggregate_id: 22P02) or every publish (a uuid message_id: 42883)
   * failed the task, each restart sending its rows again. Reported on its key, with the remedy.
   */
  @Test
  void aColumnOfTheRelaysOwnNameThatIsNotTextIsReportedOnItsKey() throws Exception {
    try (OutboxDb db = OutboxDb.fresh("config_uncast_type")) {
      ConfigValidationTest.migrate(db.url(), "outbox", SchemaMigrator.CURRENT_VERSION);
      assertEquals(Map.of(), errors(props(db.url())), "the relay's own table");
      try (var c = db.connection();
          var s = c.createStatement()) {
        s.execute("CREATE DOMAIN order_ref AS varchar(64)");
        s.execute("ALTER TABLE outbox ALTER COLUMN aggregate_id TYPE order_ref");
        s.execute("CREATE TYPE event_kind AS ENUM ('OrderPlaced')");
        s.execute("ALTER TABLE outbox ALTER COLUMN event_type TYPE event_kind USING 'OrderPlaced'");
      }
      assertEquals(
          Map.of(),
          errors(props(db.url())),
          "a domain over varchar compares as text; an event type is only read");
      try (var c = db.connection();
          var s = c.createStatement()) {
        s.execute("ALTER TABLE outbox ALTER COLUMN aggregate_id TYPE bigint USING 0");
      }
      assertEquals(
          "column aggregate_id is of type bigint, and a column of the relay's own name is read as"
              + " it is: make it text (ALTER TABLE \"outbox\" ALTER COLUMN aggregate_id TYPE text), or"
              + " rename it and name it by column.aggregate.id, which reads it as its text",
          only(errors(props(db.url())), "column.aggregate.id"));
    }
  }

  @Test
  void aNotNullPayloadColumnIsAccepted() throws Exception {
    // Since schema version 9 publishing moves the row out instead of clearing its payload.
    try (OutboxDb db = OutboxDb.fresh("config_payload_not_null")) {
      new DebeziumOutboxTable(db).adopt("orders");
      try (var c = db.connection();
          var s = c.createStatement()) {
        s.execute("ALTER TABLE outbox ALTER COLUMN payload SET NOT NULL");
      }
      assertEquals(Map.of(), errors(debezium(db)));
    }
  }

  @Test
  void aPlacedColumnTheTableLacksIsReportedOnThePlacement() {
    Map<String, String> props = debezium(adopted);
    props.put("column.additional.placement", "type:header:eventType,tracingspancontext:header");

    assertEquals(
        "column.additional.placement entry 2 names a column that outbox.table does not have",
        only(errors(props), "column.additional.placement"));
  }

  @Test
  void aPlacementUnderAReservedHeaderNameIsRefused() {
    Map<String, String> props = debezium(adopted);
    props.put("column.additional.placement", "aggregatetype:header:id");
    assertTrue(
        only(errors(props), "column.additional.placement")
            .startsWith(
                "column.additional.placement entry 1 names a header the relay sets itself"));

    props.put("column.additional.placement", "aggregatetype:header:eventType");
    assertTrue(
        only(errors(props), "column.additional.placement")
            .startsWith(
                "column.additional.placement entry 1 names a header the relay sets itself"));

    props.put("column.additional.placement", "type:header:outbox.event_type");
    props.put("routing.convention", "outbox-relay");
    assertTrue(
        only(errors(props), "column.additional.placement")
            .startsWith(
                "column.additional.placement entry 1 names a header the relay sets itself"));
  }

  @Test
  void onlyTheHeaderPlacementIsSupported() {
    Map<String, String> props = debezium(adopted);
    props.put("column.additional.placement", "type:header:eventType,aggregateid:envelope:key");

    assertEquals(
        "column.additional.placement entry 2 has placement 'envelope': only 'header' is supported"
            + " (the relay sends the payload as the value, with no envelope, and the producer"
            + " partitions by key)",
        only(errors(props), "column.additional.placement"));
  }

  @Test
  void theMigrationsAreNotForATableReadUnderOtherNames() {
    Map<String, String> props = debezium(adopted);
    props.put("schema.migrate.on.start", "true");

    Map<String, List<String>> errors = errors(props);
    assertTrue(
        errors
            .get("column.message.id")
            .get(0)
            .startsWith(
                "column.message.id names a column other than the relay's own (message_id), which"
                    + " a table created or migrated by schema.migrate.on.start=true does not have"),
        errors::toString);
    assertFalse(errors.containsKey("column.payload"), "payload is the relay's own name");
  }

  /**
   * The event's time (the record timestamp) may come from a timestamp or timestamptz column of the
   * application's, a domain over one too; a column the table lacks or of another type would fail
   * every claim, and one read under send_time would change nothing: each reported on the key.
   */
  @Test
  void anEventTimestampColumnMustBeATimestampTheTableHas() {
    Map<String, String> props = debezium(adopted);
    for (String column : List.of("occurred_at", "occurred_tz", "ordered_at", "created_at")) {
      props.put("column.event.timestamp", column);
      assertEquals(Map.of(), errors(props), column);
      assertEquals(column, new OutboxSourceConfig(props).columnMapping().eventTimestamp());
    }

    props.put("column.event.timestamp", "occurred_text");
    assertEquals(
        "column.event.timestamp names a column of type text: the event's time must be a"
            + " timestamptz, or a timestamp (read as UTC)",
        only(errors(props), "column.event.timestamp"));

    props.put("column.event.timestamp", "occurred");
    assertEquals(
        "column.event.timestamp names a column that outbox.table does not have: set it to the"
            + " column that holds the event's time",
        only(errors(props), "column.event.timestamp"));

    props.put("column.event.timestamp", "occurred_at");
    props.put("record.timestamp", "send_time");
    assertEquals(
        "column.event.timestamp is read only under record.timestamp=created_at, and"
            + " record.timestamp is send_time: remove one of them",
        only(errors(props), "column.event.timestamp"));
  }

  /** A table the task would create has the relay's columns only. */
  @Test
  void anEventTimestampColumnOfATableNotYetCreatedIsReported() {
    Map<String, String> props = props(notAdopted.url());
    props.put("outbox.table", "relay_outbox");
    props.put("schema.migrate.on.start", "true");
    props.put("column.event.timestamp", "occurred_at");

    assertEquals(
        "column.event.timestamp names a column that outbox.table, which the task would create,"
            + " would not have: set it to the column that holds the event's time",
        only(errors(props), "column.event.timestamp"));

    // Nor a column of the application's placed as a header: every claim failed on 42703.
    props.remove("column.event.timestamp");
    props.put("column.additional.placement", "tenant_id:header,aggregate_type:header");
    assertEquals(
        "column.additional.placement entry 1 names a column that outbox.table, which the task"
            + " would create, would not have",
        only(errors(props), "column.additional.placement"));
  }

  @Test
  void aColumnNameIsAnUnquotedIdentifier() {
    Map<String, String> props = debezium(adopted);
    props.put("column.message.id", "Id\"; DROP TABLE outbox; --");

    String message = only(errors(props), "column.message.id");
    assertEquals("column.message.id must be " + ColumnMapping.COLUMN_RULE, message);
  }

  @Test
  void theConventionsEventTypeHeaderIsSentOnceAndOtherPlacementsInOrder() {
    Map<String, String> props = new HashMap<>(debezium(adopted));
    OutboxSourceConfig config = new OutboxSourceConfig(props);

    assertEquals(
        new ColumnMapping(
            "id",
            "aggregatetype",
            "aggregateid",
            "type",
            "payload",
            List.of(new HeaderColumn("aggregatetype", "kind"))),
        config.columnMapping());
    assertEquals(RoutingConvention.DEBEZIUM, config.routingConvention());

    props.put("column.additional.placement", "type:header:eventType,type:header:eventType");
    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertTrue(
        e.getMessage().contains("entry 2 names a header an earlier entry names"), e::getMessage);
  }
}
