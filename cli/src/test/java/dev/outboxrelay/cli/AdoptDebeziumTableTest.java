package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.DebeziumAdoption;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** adopt-debezium-table prints the connector's adoption script for the table it is given. */
class AdoptDebeziumTableTest {
  @Test
  void printsTheAdoptionScriptWithoutADatabase() {
    Cli.Result r =
        new Cli()
            .run(
                "adopt-debezium-table",
                "--table",
                "app.outbox",
                "--instance-key",
                "orders",
                "--id-column",
                "event_id",
                "--grant-to",
                "order_service");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    String expected =
        new DebeziumAdoption(
                OutboxTable.parse("app.outbox"),
                "orders",
                new ColumnMapping(
                    "event_id",
                    "aggregate_type",
                    "aggregateid",
                    "event_type",
                    "payload",
                    List.of()),
                List.of("order_service"))
            .script(
                "outbox-relay-cli adopt-debezium-table --table app.outbox --id-column event_id"
                    + " --aggregate-id-column aggregateid");
    assertEquals(expected, r.out());
    assertTrue(r.out().contains("ALTER COLUMN instance_key SET DEFAULT 'orders'"), r::toString);
    assertTrue(r.out().contains("ON \"app\".\"outbox\" ((\"event_id\"::text))"), r::toString);
    assertTrue(r.out().contains("TO \"order_service\";"), r::toString);
  }

  @Test
  void aColumnOrRoleItCannotQuoteIsAUsageError() {
    Cli.Result column =
        new Cli().run("adopt-debezium-table", "--instance-key", "orders", "--id-column", "Id;x");
    assertEquals(ExitCode.USAGE, column.exitCode(), column::toString);
    assertEquals("error: --id-column must be " + ColumnMapping.COLUMN_RULE + "\n", column.err());

    Cli.Result role =
        new Cli().run("adopt-debezium-table", "--instance-key", "orders", "--grant-to", "a\"b");
    assertEquals(ExitCode.USAGE, role.exitCode(), role::toString);
    assertTrue(role.err().startsWith("error: --grant-to: "), role::toString);

    Cli.Result noKey = new Cli().run("adopt-debezium-table");
    assertEquals(ExitCode.USAGE, noKey.exitCode(), noKey::toString);
  }

  /**
   * An adopted table has no schema history: later versions come from {@code schema-sql
   * --after-version 10}. They apply to a table adopted by this release (which has version 12's
   * index of parked rows and version 13's of due rows already) and to one adopted by an earlier
   * release (version 7's indexes).
   */
  @ParameterizedTest(name = "adopted by an earlier release: {0}")
  @ValueSource(booleans = {false, true})
  void laterSchemaVersionsApplyToAnAdoptedTable(boolean adoptedEarlier) throws SQLException {
    String url = TestDatabase.fresh("cli_adopted_later");
    try (Connection c = TestDatabase.connect(url);
        Statement s = c.createStatement()) {
      s.execute(AdoptedTableCommandsTest.CREATE_DEBEZIUM_TABLE);
      AdoptedTableCommandsTest.adopt(s);
      if (adoptedEarlier) { // the indexes the adoption script built before schema version 12
        s.execute("DROP INDEX outbox_parked_cid_idx");
        s.execute(
            "CREATE INDEX outbox_parked_rows_idx ON outbox (instance_key, correlation_id)"
                + " WHERE parked_at IS NOT NULL");
        s.execute("DROP INDEX outbox_due_key_seq_idx");
        s.execute(
            "CREATE INDEX outbox_due_seq_idx ON outbox (seq)"
                + " WHERE published_at IS NULL AND parked_at IS NULL AND instance_key IS NOT NULL");
      }

      Cli.Result script = new Cli().run("schema-sql", "--after-version", "10");
      assertEquals(ExitCode.OK, script.exitCode(), script::toString);
      s.execute(script.out());

      try (ResultSet rs =
          s.executeQuery(
              "SELECT string_agg(c.relname || ' ' || i.indisvalid, ',' ORDER BY c.relname)"
                  + " FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                  + " WHERE i.indrelid = 'outbox'::regclass"
                  + " AND (c.relname LIKE 'outbox_parked%' OR c.relname LIKE 'outbox_due%')")) {
        rs.next();
        assertEquals(
            "outbox_due_aggregate_idx true,outbox_due_key_seq_idx true,outbox_parked_cid_idx true",
            rs.getString(1));
      }
    }
  }
}
