package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A change by message id changes one row per id, or nothing: on an adopted Debezium table, {@code
 * --column-message-id aggregateid} (a column many rows share, which the option's checks of names
 * cannot tell from an id column) made a discard of "one message" a discard of every parked row of
 * the aggregate. Each command refuses such an id as a usage error and changes nothing.
 */
class MessageIdColumnTest {
  private static final String PARKED_1 = "6f1c1a52-3c4e-4d7b-9a61-0c2f1b7d9e01";
  private static final String PARKED_2 = "6f1c1a52-3c4e-4d7b-9a61-0c2f1b7d9e02";

  private String url;
  private String before;

  /**
   * Rows of key eu: o-42 has two parked rows, o-43 two pending ones, o-44 a parked and a pending
   * one, o-45 one pending row; a legacy row of Debezium's shares o-45.
   */
  @BeforeEach
  void adoptedTable() throws SQLException {
    url = TestDatabase.fresh("cli_message_id_column");
    try (Connection c = TestDatabase.connect(url);
        Statement s = c.createStatement()) {
      s.execute(AdoptedTableCommandsTest.CREATE_DEBEZIUM_TABLE);
      s.execute(insert("9a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d", "o-45"));
      AdoptedTableCommandsTest.adopt(s);
      s.execute(insert(PARKED_1, "o-42"));
      s.execute(insert(PARKED_2, "o-42"));
      s.execute(insert("6f1c1a52-3c4e-4d7b-9a61-0c2f1b7d9e03", "o-43"));
      s.execute(insert("6f1c1a52-3c4e-4d7b-9a61-0c2f1b7d9e04", "o-43"));
      s.execute(insert("6f1c1a52-3c4e-4d7b-9a61-0c2f1b7d9e05", "o-44"));
      s.execute(insert("6f1c1a52-3c4e-4d7b-9a61-0c2f1b7d9e06", "o-44"));
      s.execute(insert("6f1c1a52-3c4e-4d7b-9a61-0c2f1b7d9e07", "o-45"));
      s.execute(
          "UPDATE outbox SET status = 'FAILED', parked_at = now(),"
              + " last_failure_code = 'POISON_PILL'"
              + " WHERE id IN ('"
              + PARKED_1
              + "', '"
              + PARKED_2
              + "', '6f1c1a52-3c4e-4d7b-9a61-0c2f1b7d9e05')");
    }
    before = table();
  }

  private static String insert(String id, String aggregateId) {
    return "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES ('"
        + id
        + "', 'order', '"
        + aggregateId
        + "', 'OrderPlaced', '{}')";
  }

  /** Every row of the table, whole, as text: compared before and after. */
  private String table() throws SQLException {
    try (Connection c = TestDatabase.connect(url);
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT string_agg(t::text, E'\\n' ORDER BY t::text) FROM outbox t")) {
      rs.next();
      return rs.getString(1);
    }
  }

  private Cli.Result run(String column, String command, String... more) {
    List<String> args =
        new ArrayList<>(List.of(command, "--instance-key", "eu", "--column-message-id", column));
    args.addAll(List.of(more));
    return Cli.against(url).run(args.toArray(String[]::new));
  }

  private void assertRefused(Cli.Result r, String id, int rows) throws SQLException {
    assertEquals(ExitCode.USAGE, r.exitCode(), r::toString);
    assertEquals(
        "error: --column-message-id aggregateid does not identify one row: message id "
            + id
            + " is held by "
            + rows
            + " rows of instance key eu; nothing was changed: give the column that holds each"
            + " row's own id (the connector's column.message.id)\n",
        r.err());
    assertEquals(before, table(), "no row changed");
  }

  /** The review's scenario: one discard deleted every parked row of the aggregate. */
  @Test
  void discardRefusesAnIdThatSeveralParkedRowsHold() throws SQLException {
    assertRefused(run("aggregateid", "discard", "--message-id", "o-42"), "o-42", 2);
    // An id that is one row's comes first: the statement is rolled back whole.
    assertRefused(
        run("aggregateid", "discard", "--message-id", "o-45", "--message-id", "o-42"), "o-42", 2);
  }

  @Test
  void requeueRefusesAnIdThatSeveralRowsHoldEvenWhenOneIsParked() throws SQLException {
    assertRefused(run("aggregateid", "requeue", "--message-id", "o-42"), "o-42", 2);
    // Only one of o-44's rows is parked: the change would touch one row, still not the id's.
    assertRefused(run("aggregateid", "requeue", "--message-id", "o-44", "--json"), "o-44", 2);
  }

  @Test
  void parkRefusesAnIdThatSeveralRowsAwaitingDeliveryHold() throws SQLException {
    assertRefused(run("aggregateid", "park", "--message-id", "o-43", "--in-flight"), "o-43", 2);
  }

  /** Inspect says so too, rather than show one of the rows as if it were the id's. */
  @Test
  void inspectRefusesAnIdThatSeveralRowsHold() throws SQLException {
    assertRefused(run("aggregateid", "inspect", "o-42"), "o-42", 2);
  }

  /** A dry run, which an operator runs first, says so too rather than counting both rows. */
  @Test
  void dryRunsRefuseItToo() throws SQLException {
    assertRefused(run("aggregateid", "discard", "--message-id", "o-42", "--dry-run"), "o-42", 2);
    assertRefused(run("aggregateid", "park", "--message-id", "o-43", "--dry-run"), "o-43", 2);
  }

  /**
   * Only the key's rows count: a legacy row sharing the value is not the key's, and a column that
   * identifies the key's rows (the adopted id, through its unique index over them) works as ever.
   */
  @Test
  void anIdThatOneRowOfTheKeyHoldsIsChanged() throws SQLException {
    Cli.Result park = run("aggregateid", "park", "--message-id", "o-45");
    assertEquals(ExitCode.OK, park.exitCode(), park::toString);

    Cli.Result discard = run("id", "discard", "--message-id", PARKED_1);
    assertEquals(ExitCode.OK, discard.exitCode(), discard::toString);
    assertTrue(discard.out().startsWith("discarded 1 row(s)"), discard::toString);
  }
}
