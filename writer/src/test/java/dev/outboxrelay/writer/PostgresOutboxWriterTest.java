package dev.outboxrelay.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What the writer does to the caller's connection, recorded call by call on a JDBC proxy: nothing
 * at all when its input is invalid, and only prepare, bind, execute and close its own statement
 * otherwise: never commit, roll back, change auto-commit or close the caller's connection. Against
 * a real database: {@link PostgresOutboxWriterDatabaseTest}.
 */
class PostgresOutboxWriterTest {
  private static final String COLUMNS =
      "message_id, instance_key, aggregate_type, aggregate_id, event_type, topic, payload,"
          + " headers, correlation_id, deliver_before";

  private static final String EXPECTED_SQL =
      "INSERT INTO \"app\".\"outbox\" ("
          + COLUMNS
          + ") SELECT * FROM (VALUES (CAST(? AS text), CAST(? AS text), CAST(? AS text),"
          + " CAST(? AS text), CAST(? AS text), CAST(? AS text), CAST(? AS bytea),"
          + " CAST(? AS jsonb), CAST(? AS text), CAST(? AS timestamptz))) AS v ("
          + COLUMNS
          + ") WHERE NOT EXISTS (SELECT 1 FROM \"app\".\"outbox_published\" p"
          + " WHERE p.message_id = v.message_id)"
          + " ON CONFLICT (message_id) DO NOTHING";

  /** Every JDBC call the writer makes, as "method(arguments)", connection and statement alike. */
  private final List<String> calls = new ArrayList<>();

  /** The calls on the connection alone. */
  private final List<String> connectionCalls = new ArrayList<>();

  /** What each INSERT answers, in turn; the last one again once they run out. */
  private final java.util.Deque<Integer> updateCounts = new java.util.ArrayDeque<>(List.of(1));

  /** What the check after an insert that wrote nothing answers: another key's, this key's. */
  private boolean takenElsewhere;

  private boolean ownId;
  private boolean autoCommit;

  /** What the INSERT throws, if anything. */
  private SQLException insertFails;

  /** Thrown by the abort statement in place of the server's answer, while set. */
  private SQLException abortFails;

  /** Thrown by the statement that checks the abort, in place of the server's answer, while set. */
  private SQLException checkFails;

  /** Thrown by the connection when the abort statement is prepared (a wrapper's own), while set. */
  private RuntimeException abortPrepareFails;

  /**
   * Refused by the constructor alone, when the writer is created (as the class promises): before
   * any connection exists, so none is touched.
   */
  @Test
  void aBlankOrInvalidInstanceKeyIsRejectedWhenTheWriterIsCreated() {
    for (String key :
        new String[] {
          null,
          "",
          "   ",
          "\t",
          " eu",
          "eu ",
          "e\nu",
          "eu,us",
          "x".repeat(201),
          "eu\uD800",
          "\uDC00eu",
          "orders\u200B", // a zero-width space
          "\uFEFForders", // a byte order mark
          "or\u202Eders", // a right-to-left override
          "eu\u2028us", // a line separator
          "orders\u00A0", // a no-break space, which strip() keeps
          "\u202Forders", // a narrow no-break space
          "orders\u00A0eu",
          "orders\u3000eu", // an ideographic space
          "eu\uFE0F" // a variation selector
        }) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> new PostgresOutboxWriter("outbox", key),
              () -> "instance key [" + key + "]");
      assertTrue(e.getMessage().startsWith("instance key "), e.getMessage());
    }
    // A pair is one character, and a key may hold it.
    assertEquals("eu-\uD83C\uDF0D", InstanceKeys.requireValid("eu-\uD83C\uDF0D"));
  }

  @Test
  void anInvalidTableNameIsRejectedWhenTheWriterIsCreated() {
    for (String table :
        new String[] {"", "Outbox", "a.b.c", "outbox; DROP TABLE x", "\"outbox\""}) {
      assertThrows(
          IllegalArgumentException.class, () -> new PostgresOutboxWriter(table, "eu"), table);
    }
  }

  @Test
  void aMissingMessageOrConnectionIsRejectedBeforeTheConnectionIsTouched() {
    PostgresOutboxWriter writer = new PostgresOutboxWriter("outbox", "eu");
    Connection connection = recordingConnection();
    assertThrows(NullPointerException.class, () -> writer.enqueue(connection, null));
    assertThrows(NullPointerException.class, () -> writer.enqueue(null, message()));
    assertEquals(List.of(), calls);
  }

  /**
   * In auto-commit mode the row would commit on its own, apart from the business change: the dual
   * write an outbox exists to prevent. Refused before any statement.
   */
  @Test
  void aConnectionInAutoCommitModeIsRefusedBeforeAnyStatement() {
    autoCommit = true;
    IllegalStateException e = enqueueFails(IllegalStateException.class);
    assertTrue(e.getMessage().contains("auto-commit"), e.getMessage());
    assertEquals(List.of(), calls);
  }

  @Test
  void enqueueBindsEveryColumnOnItsOwnStatementAndLeavesTheTransactionToTheCaller()
      throws Exception {
    PostgresOutboxWriter writer = new PostgresOutboxWriter("app.outbox", "orders-eu");
    Instant deadline = Instant.parse("2030-01-02T03:04:05Z");
    OutboxMessage message =
        OutboxMessage.builder()
            .messageId("m-1")
            .aggregateType("order")
            .aggregateId("o-42")
            .eventType("OrderPlaced")
            .topic("orders")
            .payload("{}".getBytes(StandardCharsets.UTF_8))
            .header("tenant", "acme")
            .correlationId("c-7")
            .deliverBefore(deadline)
            .build();

    assertEquals(EnqueueResult.ENQUEUED, writer.enqueue(recordingConnection(), message));

    assertEquals(
        List.of(
            "prepareStatement(" + EXPECTED_SQL + ")",
            "setString(1, m-1)",
            "setString(2, orders-eu)",
            "setString(3, order)",
            "setString(4, o-42)",
            "setString(5, OrderPlaced)",
            "setString(6, orders)",
            "setBytes(7, [123, 125])",
            "setString(8, {\"tenant\":\"acme\"})",
            "setString(9, c-7)",
            "setObject(10, " + OffsetDateTime.ofInstant(deadline, ZoneOffset.UTC) + ")",
            "executeUpdate()",
            "close()"),
        calls);
    assertTheTransactionIsTheCallers();
  }

  @Test
  void absentOptionalFieldsAreBoundAsNull() throws Exception {
    PostgresOutboxWriter writer = new PostgresOutboxWriter("outbox", "eu");
    OutboxMessage message =
        OutboxMessage.builder()
            .messageId("m-2")
            .aggregateType("order")
            .aggregateId("o-1")
            .eventType("OrderPlaced")
            .build();

    writer.enqueue(recordingConnection(), message);

    assertEquals(
        List.of(
            "setString(6, null)",
            "setBytes(7, null)",
            "setString(8, null)",
            "setString(9, null)",
            "setNull(10, " + Types.TIMESTAMP_WITH_TIMEZONE + ")"),
        calls.subList(6, 11));
    assertTheTransactionIsTheCallers();
  }

  @Test
  void noRowInsertedMeansTheMessageIdExisted() throws Exception {
    updateCounts.clear();
    updateCounts.add(0);
    ownId = true;
    assertEquals(
        EnqueueResult.DUPLICATE,
        new PostgresOutboxWriter("outbox", "eu").enqueue(recordingConnection(), message()));
    assertTheTransactionIsTheCallers();
  }

  @Test
  void noRowInsertedBecauseAnotherKeyHasTheIdIsNoDuplicate() {
    updateCounts.clear();
    updateCounts.add(0);
    takenElsewhere = true;
    OutboxMessage message = message();
    MessageIdTakenException e =
        assertThrows(
            MessageIdTakenException.class,
            () -> new PostgresOutboxWriter("outbox", "eu").enqueue(recordingConnection(), message));
    assertEquals("23000", e.getSQLState());
    assertEquals(message.messageId(), e.messageId());
    // Aborted on the server, as PostgreSQL aborts a transaction on its own errors, so that a
    // commit rolls back; the writer neither rolls back nor commits.
    assertAborted();
    assertTheTransactionIsTheCallers();
    // The check binds the id and the writer's key, for the table and the log, twice each.
    int prepared = 0;
    for (int i = 0; i < calls.size(); i++) {
      prepared = calls.get(i).startsWith("prepareStatement(SELECT EXISTS") ? i : prepared;
    }
    List<String> check =
        calls.subList(
            prepared, calls.indexOf("prepareStatement(" + PostgresOutboxWriter.ABORT_SQL + ")"));
    assertTrue(check.get(0).startsWith("prepareStatement(SELECT EXISTS"), check::toString);
    for (int i = 1; i <= 8; i += 2) {
      assertTrue(
          check.contains("setString(" + i + ", " + message.messageId() + ")"), check::toString);
      assertTrue(check.contains("setString(" + (i + 1) + ", eu)"), check::toString);
    }
  }

  /**
   * The id was freed between the insert and the check (retention, READ COMMITTED): insert again.
   */
  @Test
  void anIdNobodyHoldsAnyMoreIsInsertedAgain() throws Exception {
    updateCounts.clear();
    updateCounts.addAll(List.of(0, 1));
    assertEquals(
        EnqueueResult.ENQUEUED,
        new PostgresOutboxWriter("outbox", "eu").enqueue(recordingConnection(), message()));
    assertEquals(2, calls.stream().filter(c -> c.equals("executeUpdate()")).count());
    assertTheTransactionIsTheCallers();
  }

  @Test
  void anIdNeitherWrittenNorFoundThreeTimesIsNoRetry() {
    updateCounts.clear();
    updateCounts.add(0);
    SQLException e = enqueueFails(SQLException.class);
    assertEquals("55000", e.getSQLState(), "a retry of the transaction would do the same");
    assertEquals(3, calls.stream().filter(c -> c.equals("executeUpdate()")).count());
    // Aborted, so that a commit cannot keep the business change without its message; the caller
    // retries the transaction: the writer rolls nothing back itself.
    assertAborted();
    assertTheTransactionIsTheCallers();
  }

  /**
   * The driver's own error is thrown as it is, after the abort: a driver that keeps the transaction
   * open after a failed statement (pgjdbc's autosave=always rolls back to its savepoint) would
   * otherwise let a commit keep the business change without its message.
   */
  @Test
  void aDriverErrorOfTheInsertAbortsTheTransactionAndIsThrownAsItIs() {
    insertFails = new SQLException("canceling statement due to lock timeout", "55P03");
    SQLException e = enqueueFails(SQLException.class);
    assertSame(insertFails, e);
    assertEquals(0, e.getSuppressed().length);
    assertAborted();
    assertTheTransactionIsTheCallers();
  }

  /**
   * An abort that fails without an SQLState (a wrapper's "connection closed", say) is attached to
   * the failure thrown, which stays the caller's to see: it was lost to a NullPointerException.
   */
  @Test
  void anAbortFailingWithoutAnSqlStateIsAttachedToTheFailure() {
    insertFails = new SQLException("canceling statement due to lock timeout", "55P03");
    abortFails = new SQLException("connection handle already closed");
    SQLException e = enqueueFails(SQLException.class);
    assertSame(insertFails, e);
    assertEquals(1, e.getSuppressed().length);
    assertSame(abortFails, e.getSuppressed()[0]);
  }

  /**
   * The statement that checks the abort fails without telling whether the transaction is aborted (a
   * cancel): taken for open, so that the caller rolls back, the check's failure attached. After a
   * lost connection (class 08) the transaction is gone with it, and the failure is thrown as it is.
   */
  @Test
  void aCheckThatCannotTellIsTakenForAnOpenTransaction() {
    insertFails = new SQLException("canceling statement due to lock timeout", "55P03");
    checkFails = new SQLException("canceling statement due to user request", "57014");
    TransactionStillOpenException open = enqueueFails(TransactionStillOpenException.class);
    assertSame(insertFails, open.getCause());
    assertSame(checkFails, open.getSuppressed()[0]);

    calls.clear();
    checkFails = new SQLException("An I/O error occurred while sending to the backend", "08006");
    SQLException e = enqueueFails(SQLException.class);
    assertSame(insertFails, e);
    assertSame(checkFails, e.getSuppressed()[0]);
  }

  /** A wrapper's own unchecked failure while aborting is thrown, the enqueue's failure in it. */
  @Test
  void aWrappersUncheckedFailureWhileAbortingKeepsTheFailure() {
    insertFails = new SQLException("canceling statement due to lock timeout", "55P03");
    abortPrepareFails = new IllegalStateException("connection proxy closed");
    IllegalStateException thrown = enqueueFails(IllegalStateException.class);
    assertSame(abortPrepareFails, thrown);
    assertSame(insertFails, thrown.getSuppressed()[0]);
  }

  /**
   * The writer's own errors name the message id escaped ({@link Printable}), as the relay's log
   * lines do: an id with a line break cannot forge a line of the application's log, nor an escape
   * sequence rewrite a terminal. {@link MessageIdTakenException#messageId()} keeps the id as given.
   */
  @Test
  void theWritersErrorsNameTheMessageIdEscaped() {
    String forged = "o-1\r\nERROR forged";
    updateCounts.clear();
    updateCounts.add(0);
    takenElsewhere = true;
    MessageIdTakenException taken =
        assertThrows(
            MessageIdTakenException.class,
            () ->
                new PostgresOutboxWriter("outbox", "eu")
                    .enqueue(recordingConnection(), message(forged)));
    assertTrue(
        taken.getMessage().startsWith("outbox message id o-1\\u000d\\u000aERROR forged is "),
        taken::getMessage);
    assertEquals(forged, taken.messageId());

    takenElsewhere = false;
    SQLException retry =
        assertThrows(
            SQLException.class,
            () ->
                new PostgresOutboxWriter("outbox", "eu")
                    .enqueue(recordingConnection(), message("\u001b[2J\u001b[31mo-2")));
    assertEquals("55000", retry.getSQLState());
    assertTrue(
        retry
            .getMessage()
            .startsWith(
                "outbox message id \\u001b[2J\\u001b[31mo-2 was neither written nor found, 3 times"),
        retry::getMessage);
  }

  @Test
  void theWriterTellsItsTableAndInstanceKey() {
    PostgresOutboxWriter writer = new PostgresOutboxWriter("app.outbox", "eu");
    assertEquals(OutboxTableName.parse("app.outbox"), writer.table());
    assertEquals("eu", writer.instanceKey());
    assertEquals("PostgresOutboxWriter[table=app.outbox, instanceKey=eu]", writer.toString());
  }

  private static OutboxMessage message() {
    return message(null);
  }

  /** A message with this id, or a random one for null. */
  private static OutboxMessage message(String messageId) {
    return OutboxMessage.builder()
        .messageId(messageId)
        .aggregateType("order")
        .aggregateId("o-1")
        .eventType("OrderPlaced")
        .build();
  }

  /** The failure of an enqueue of {@link #message()} on {@link #recordingConnection()}. */
  private <T extends Throwable> T enqueueFails(Class<T> type) {
    return assertThrows(
        type,
        () -> new PostgresOutboxWriter("outbox", "eu").enqueue(recordingConnection(), message()));
  }

  /**
   * A connection that records every call; {@code prepareStatement} returns a statement that records
   * too. Any other method of either records and returns null, which would fail the writer loudly.
   */
  private Connection recordingConnection() {
    PreparedStatement statement =
        (PreparedStatement)
            Proxy.newProxyInstance(
                getClass().getClassLoader(),
                new Class<?>[] {PreparedStatement.class},
                (proxy, method, args) -> {
                  calls.add(call(method.getName(), args));
                  return switch (method.getName()) {
                    case "executeUpdate" -> {
                      if (insertFails != null) {
                        throw insertFails;
                      }
                      yield updateCounts.size() > 1 ? updateCounts.poll() : updateCounts.peek();
                    }
                    case "executeQuery" -> answer(takenElsewhere, ownId);
                    case "execute" -> {
                      // As the server answers the abort, and any statement after it.
                      if (calls.contains(
                          "prepareStatement(" + PostgresOutboxWriter.ABORT_SQL + ")")) {
                        boolean abort =
                            calls
                                .get(calls.size() - 2)
                                .equals("prepareStatement(" + PostgresOutboxWriter.ABORT_SQL + ")");
                        if (abort && abortFails != null) {
                          throw abortFails;
                        }
                        if (!abort && checkFails != null) {
                          throw checkFails;
                        }
                        throw new SQLException(
                            abort ? "aborted" : "in failed", abort ? "23000" : "25P02");
                      }
                      yield false;
                    }
                    default -> null;
                  };
                });
    return (Connection)
        Proxy.newProxyInstance(
            getClass().getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              if (method.getName().equals("getAutoCommit")) {
                return autoCommit; // a read, which changes nothing: not recorded
              }
              if (method.getName().equals("isWrapperFor")) {
                return false; // not pgjdbc's: no autosave to suspend; a read, not recorded
              }
              calls.add(call(method.getName(), args));
              connectionCalls.add(call(method.getName(), args));
              if (abortPrepareFails != null
                  && args != null
                  && PostgresOutboxWriter.ABORT_SQL.equals(args[0])) {
                throw abortPrepareFails;
              }
              return method.getName().equals("prepareStatement") ? statement : null;
            });
  }

  /**
   * The abort statement prepared and run, then, on this driver the writer cannot inspect, one
   * statement that finds the transaction aborted: the writer's error comes after them.
   */
  private void assertAborted() {
    int at = calls.indexOf("prepareStatement(" + PostgresOutboxWriter.ABORT_SQL + ")");
    assertTrue(at >= 0, calls::toString);
    assertEquals(
        List.of("execute()", "close()", "prepareStatement(SELECT 1)", "execute()", "close()"),
        calls.subList(at + 1, calls.size()));
  }

  /**
   * The writer only prepared statements on the caller's connection, whatever it returned or threw:
   * no commit, rollback, auto-commit change, close or anything else that touches the transaction.
   * And it closed every statement it prepared.
   */
  private void assertTheTransactionIsTheCallers() {
    assertEquals(
        List.of(),
        connectionCalls.stream().filter(c -> !c.startsWith("prepareStatement(")).toList(),
        "calls on the caller's connection other than prepareStatement");
    assertEquals(
        connectionCalls.size(),
        calls.stream().filter(c -> c.equals("close()")).count(),
        () -> "every statement closed, the connection never: " + calls);
  }

  /** A result of one row of two boolean columns. */
  private ResultSet answer(boolean first, boolean second) {
    boolean[] read = {false};
    return (ResultSet)
        Proxy.newProxyInstance(
            getClass().getClassLoader(),
            new Class<?>[] {ResultSet.class},
            (proxy, method, args) ->
                switch (method.getName()) {
                  case "next" -> !read[0] && (read[0] = true);
                  case "getBoolean" -> (int) args[0] == 1 ? first : second;
                  default -> null;
                });
  }

  private static String call(String method, Object[] args) {
    if (args == null) {
      return method + "()";
    }
    List<String> shown = new ArrayList<>();
    for (Object arg : args) {
      shown.add(arg instanceof byte[] bytes ? Arrays.toString(bytes) : String.valueOf(arg));
    }
    return method + "(" + String.join(", ", shown) + ")";
  }
}
