package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.cli.operator.OperatorStatements;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.NamedSql;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * On a Debezium table adopted in place, a park, requeue or discard by message id finds the key's
 * rows through the message id index, which covers the rows of an instance key only; Debezium's
 * history (legacy rows, often millions) is looked at only for an id that neither such a row nor the
 * published log has. It was read whole once per requested id, inside the statement that holds the
 * changed rows' locks.
 */
class AdoptedTablePlanTest {
  private static final String KEYED = "0b8e7a4d-2f19-4c1e-8d3a-5e6f7a8b9c0d";
  private static final String PUBLISHED = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f";

  @Test
  void idsOfTheKeyAreFoundWithoutReadingTheLegacyRows() throws SQLException {
    String url = TestDatabase.fresh("adopted_plan");
    try (Connection c = TestDatabase.connect(url);
        Statement s = c.createStatement()) {
      s.execute(AdoptedTableCommandsTest.CREATE_DEBEZIUM_TABLE);
      s.execute(
          "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)"
              + " SELECT gen_random_uuid(), 'order', 'o-' || g, 'OrderCreated', '{}'"
              + " FROM generate_series(1, 20000) g");
      AdoptedTableCommandsTest.adopt(s);
      s.execute(
          "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES ('"
              + KEYED
              + "', 'order', 'o-1', 'OrderShipped', '{}')");
      s.execute(
          "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES ('"
              + PUBLISHED
              + "', 'order', 'o-2', 'OrderPlaced', '{}')");
      s.execute(AdoptedTableCommandsTest.publish(PUBLISHED));
      s.execute("ANALYZE outbox");

      NamedSql park =
          OperatorStatements.parkDryRun(
              OutboxTable.parse("outbox"),
              new ColumnMapping(
                  "id", "aggregatetype", "aggregateid", "type", "payload", List.of()));
      String plan = explain(c, park);

      assertTrue(plan.contains("outbox_message_id_key"), plan);
      assertFalse(
          plan.lines().anyMatch(l -> l.contains("Seq Scan on outbox") && !l.contains("never")),
          "a legacy row is looked for only for an id no row of a key has: " + plan);
    }
  }

  private static String explain(Connection c, NamedSql statement) throws SQLException {
    StringBuilder plan = new StringBuilder();
    try (PreparedStatement ps =
        c.prepareStatement("EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) " + statement.jdbc())) {
      statement
          .bind(ps)
          .setString("instance_key", "eu")
          .setArray("statuses", c.createArrayOf("text", new String[] {"PENDING", "AMBIGUOUS"}))
          .setArray("message_ids", c.createArrayOf("text", new String[] {KEYED, PUBLISHED}));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          plan.append(rs.getString(1)).append('\n');
        }
      }
    }
    return plan.toString();
  }
}
