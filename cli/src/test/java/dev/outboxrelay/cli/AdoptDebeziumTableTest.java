package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.DebeziumAdoption;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.util.List;
import org.junit.jupiter.api.Test;

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
}
