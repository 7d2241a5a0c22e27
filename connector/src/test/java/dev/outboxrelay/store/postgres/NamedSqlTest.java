package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** Named parameters: where a colon is one, and binding by name. The statements run elsewhere. */
class NamedSqlTest {

  @Test
  void namesBecomePositionalParametersInTheirOrder() {
    NamedSql sql = NamedSql.parse("SELECT * FROM t WHERE a = :first AND b_2 = :second_2");
    assertEquals("SELECT * FROM t WHERE a = ? AND b_2 = ?", sql.jdbc());
    assertEquals(List.of("first", "second_2"), List.copyOf(sql.names()));
    assertArrayEquals(new int[] {1}, sql.positions("first"));
    assertArrayEquals(new int[] {2}, sql.positions("second_2"));
  }

  @Test
  void aRepeatedNameHasEveryOneOfItsPositions() {
    NamedSql sql = NamedSql.parse("SELECT :a, :b, :a, (:a + :b)");
    assertEquals("SELECT ?, ?, ?, (? + ?)", sql.jdbc());
    assertArrayEquals(new int[] {1, 3, 4}, sql.positions("a"));
    assertArrayEquals(new int[] {2, 5}, sql.positions("b"));
  }

  @Test
  void castsAreNotParameters() {
    NamedSql sql = NamedSql.parse("SELECT headers::text, :n::bigint, CAST(:m AS int)::text");
    assertEquals("SELECT headers::text, ?::bigint, CAST(? AS int)::text", sql.jdbc());
    assertEquals(List.of("n", "m"), List.copyOf(sql.names()));
  }

  @Test
  void quotedTextIsNotParsed() {
    String sql =
        "SELECT ':a', 'it''s :b', \"col:c\", \"a\"\":d\", E'\\':e', date'x:f', :g, e'', :h";
    NamedSql parsed = NamedSql.parse(sql);
    assertEquals(List.of("g", "h"), List.copyOf(parsed.names()));
    assertEquals(
        "SELECT ':a', 'it''s :b', \"col:c\", \"a\"\":d\", E'\\':e', date'x:f', ?, e'', ?",
        parsed.jdbc());
  }

  @Test
  void commentsAreNotParsed() {
    String sql =
        "SELECT 1 -- not :a, nor ? nor 'quoted\n"
            + ", :b /* not :c /* nested :d */ still not :e ' */, :f";
    NamedSql parsed = NamedSql.parse(sql);
    assertEquals(List.of("b", "f"), List.copyOf(parsed.names()));
    assertEquals(
        "SELECT 1 -- not :a, nor ? nor 'quoted\n, ? /* not :c /* nested :d */ still not :e ' */, ?",
        parsed.jdbc());
  }

  @Test
  void aColonNotFollowedByANameIsText() {
    NamedSql sql = NamedSql.parse("SELECT a[1:2], x := 1, ':' || :name, :");
    assertEquals("SELECT a[1:2], x := 1, ':' || ?, :", sql.jdbc());
    assertEquals(List.of("name"), List.copyOf(sql.names()));
  }

  @Test
  void positionalParametersAndDollarQuotesAreRefused() {
    assertTrue(message(() -> NamedSql.parse("SELECT ?")).contains("positional ?"));
    assertTrue(message(() -> NamedSql.parse("SELECT data ? 'key'")).contains("positional ?"));
    assertTrue(message(() -> NamedSql.parse("SELECT $$:a$$")).contains("dollar"));
  }

  @Test
  void unterminatedQuotesAndCommentsAreRefused() {
    assertTrue(message(() -> NamedSql.parse("SELECT 'open :a")).contains("unterminated"));
    assertTrue(message(() -> NamedSql.parse("SELECT \"open")).contains("unterminated"));
    assertTrue(message(() -> NamedSql.parse("SELECT /* /* */ :a")).contains("unterminated"));
  }

  @Test
  void aValueBoundOnceLandsAtEveryPosition() throws SQLException {
    Map<Integer, Object> values = new TreeMap<>();
    NamedSql sql = NamedSql.parse("SELECT :owner, :n, :owner, :when, :owner");
    PreparedStatement ps = recording(values);
    PreparedStatement ready =
        sql.bind(ps)
            .setString("owner", "relay-1")
            .setInt("n", 7)
            .setObject("when", null, Types.TIMESTAMP_WITH_TIMEZONE)
            .ready();
    assertSame(ps, ready);
    assertEquals(
        Map.of(
            1,
            "relay-1",
            2,
            7,
            3,
            "relay-1",
            4,
            "NULL " + Types.TIMESTAMP_WITH_TIMEZONE,
            5,
            "relay-1"),
        values);
  }

  @Test
  void aMissingBindingIsAnErrorNamingTheParameter() throws SQLException {
    NamedSql sql = NamedSql.parse("SELECT :owner, :limit, :lease_ms");
    NamedSql.Binder binder = sql.bind(recording(new TreeMap<>())).setString("owner", "relay-1");
    String message = message(binder::ready);
    assertTrue(message.contains(":limit") && message.contains(":lease_ms"), message);
    assertTrue(!message.contains(":owner"), message);
    assertThrows(IllegalStateException.class, binder::executeQuery);
    assertThrows(IllegalStateException.class, binder::executeUpdate);
  }

  @Test
  void anUnknownNameIsAnError() {
    NamedSql sql = NamedSql.parse("SELECT :owner");
    NamedSql.Binder binder = sql.bind(recording(new TreeMap<>()));
    assertTrue(message(() -> binder.setString("ownr", "x")).contains(":ownr"));
    assertThrows(IllegalArgumentException.class, () -> sql.positions("ownr"));
  }

  @Test
  void aNameBoundTwiceIsAnError() throws SQLException {
    NamedSql.Binder binder =
        NamedSql.parse("SELECT :owner").bind(recording(new TreeMap<>())).setString("owner", "a");
    assertTrue(message(() -> binder.setString("owner", "b")).contains(":owner"));
  }

  @Test
  void everyStatementOfTheStoreParses() {
    OutboxSql sql = new OutboxSql(OutboxTable.parse("app.outbox"));
    assertEquals(
        List.of(
            "now",
            "max_attempts",
            "durable",
            "owner", // the claim's lock, in its clock,
            "instance_keys",
            "payload_read_limit",
            "limit",
            "read_room",
            "lease_ms",
            "epoch",
            "claim_batch",
            "headers_read_limit"),
        List.copyOf(sql.claimOrdered.oneKey().names()));
    assertEquals(
        List.of(
            "now",
            "max_attempts",
            "durable",
            "owner", // the claim's lock, in its clock,
            "instance_keys",
            "payload_read_limit",
            "slots",
            "slots_minus_slot",
            "limit",
            "read_room",
            "lease_ms",
            "epoch",
            "claim_batch",
            "headers_read_limit"),
        List.copyOf(sql.claimOrderedWithAffinity.oneKey().names()));
    assertArrayEquals(new int[] {9, 11}, sql.claimOrderedWithAffinity.oneKey().positions("slots"));
    // With several keys the quota reads the share first.
    assertArrayEquals(
        new int[] {7, 9, 16, 18}, sql.claimOrderedWithAffinity.severalKeys().positions("slots"));
    assertEquals(
        List.of(
            "now",
            "max_attempts",
            "durable",
            "owner", // the claim's lock, in its clock,
            "instance_keys",
            "payload_read_limit",
            "buckets",
            "tasks",
            "tasks_minus_task",
            "limit",
            "read_room",
            "lease_ms",
            "epoch",
            "claim_batch",
            "headers_read_limit"),
        List.copyOf(sql.claimOrderedInShare.oneKey().names()));
    assertEquals(
        List.of(
            "now",
            "committed_keys",
            "committed_buckets",
            "committed_epochs",
            "committed_batches",
            "committed_seqs",
            "own_owners",
            "epoch",
            "expired_only",
            "buckets",
            "tasks",
            "tasks_minus_task",
            "instance_key",
            "after_seq",
            "page_rows",
            "max_attempts"),
        List.copyOf(sql.recoverInShare.names()));
    assertEquals(
        List.of(
            "now",
            "max_attempts",
            "durable",
            "owner",
            "suspects",
            "instance_keys",
            "lease_ms",
            "epoch",
            "claim_batch",
            "payload_read_limit",
            "headers_read_limit"),
        List.copyOf(sql.claimSuspectOrdered.names()));
    assertEquals(
        List.of(
            "now",
            "owner",
            "instance_keys",
            "max_attempts",
            "lease_ms",
            "payload_read_limit",
            "headers_read_limit"),
        List.copyOf(sql.claimAbandonedOrdered.names()));
    assertArrayEquals(
        new int[] {5, 6, 8, 11, 12}, sql.claimAbandonedOrdered.positions("max_attempts"));
  }

  private static String message(Executable action) {
    RuntimeException e = assertThrows(RuntimeException.class, action::run);
    return e.getMessage();
  }

  @FunctionalInterface
  private interface Executable {
    void run() throws Exception;
  }

  /** A statement that records what is bound where; anything else is not expected here. */
  private static PreparedStatement recording(Map<Integer, Object> values) {
    return (PreparedStatement)
        Proxy.newProxyInstance(
            NamedSqlTest.class.getClassLoader(),
            new Class<?>[] {PreparedStatement.class},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "setString", "setInt", "setObject" -> values.put((Integer) args[0], args[1]);
                case "setNull" -> values.put((Integer) args[0], "NULL " + args[1]);
                case "executeQuery", "executeUpdate" -> throw new AssertionError("not bound");
                default -> throw new UnsupportedOperationException(method.getName());
              }
              return null;
            });
  }
}
