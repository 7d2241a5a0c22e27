package dev.outboxrelay.cli.operator;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.NamedSql;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.lang.reflect.Field;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** What every operator statement must say, whatever the rows: it is bound to one instance key. */
class OperatorSqlTest {
  /** Read no rows: the statements not bound to a key (a lookup of the table, a setting). */
  private static final List<String> KEYLESS = List.of("tableExists", "limitLockWaits");

  @Test
  void everyStatementThatReadsRowsIsBoundToTheInstanceKey() throws IllegalAccessException {
    for (OperatorSql sql :
        List.of(
            new OperatorSql(OutboxTable.parse("outbox")),
            new OperatorSql(
                OutboxTable.parse("app.outbox"),
                new ColumnMapping(
                    "id", "aggregatetype", "aggregateid", "type", "payload", List.of()),
                false))) {
      Map<String, NamedSql> statements = statements(sql);
      assertTrue(statements.containsKey("lastSeq"), statements::toString);
      assertTrue(
          statements.keySet().stream().anyMatch(k -> k.startsWith("changeBatch.")),
          "the bulk requeue and discard, two maps deep: " + statements.keySet());
      for (Map.Entry<String, NamedSql> e : statements.entrySet()) {
        if (KEYLESS.contains(e.getKey())) {
          assertFalse(e.getValue().names().contains("instance_key"), e.getKey());
        } else {
          assertTrue(
              e.getValue().names().contains("instance_key"),
              e.getKey() + " must be bound to the instance key: " + e.getValue());
          assertTrue(
              occurrences(e.getValue().jdbc(), BY_THE_KEY) > 0,
              e.getKey() + " must select by the instance key: " + e.getValue());
        }
      }
    }
  }

  /**
   * Statements by message id look the requested ids up in other keys' rows too, on purpose: to say
   * OTHER_INSTANCE for an id that is not the key's (nothing else about such a row is read).
   */
  private static final List<String> LOOK_UP_OTHER_KEYS =
      List.of("changeMessageIds", "park", "parkDryRun");

  /**
   * Each read of the table or its published log in a statement is bound to the key, not just one of
   * them: a branch of a UNION (the published log's, say) that lost its condition would show another
   * key's rows while the statement as a whole still named the key.
   */
  @Test
  void everyReadOfTheTableOrTheLogIsBoundToTheInstanceKey() throws IllegalAccessException {
    OutboxTable table = OutboxTable.parse("app.outbox");
    Map<String, NamedSql> statements = statements(new OperatorSql(table));
    int checked = 0;
    for (Map.Entry<String, NamedSql> e : statements.entrySet()) {
      String name = e.getKey();
      if (KEYLESS.contains(name) || LOOK_UP_OTHER_KEYS.contains(name.split("\\.")[0])) {
        continue;
      }
      String jdbc = e.getValue().jdbc();
      int reads =
          occurrences(jdbc, "FROM " + Pattern.quote(table.qualified()) + "\\s")
              + occurrences(jdbc, "FROM " + Pattern.quote(table.qualifiedPublishedLog()) + "\\s");
      int bound = occurrences(jdbc, BY_THE_KEY);
      assertTrue(reads > 0, name + " reads the table or the log: " + jdbc);
      assertTrue(
          bound >= reads,
          name
              + ": "
              + reads
              + " reads of the table or log, "
              + bound
              + " bound to the key: "
              + jdbc);
      checked++;
    }
    assertTrue(checked >= 10, "statements checked: " + checked);
  }

  /** The key as an equality, or as the range spelled for an order by (instance_key, seq). */
  private static final String BY_THE_KEY =
      "instance_key = \\?|instance_key >= \\? AND instance_key <= \\?";

  private static int occurrences(String text, String regex) {
    return (int) Pattern.compile(regex).matcher(text).results().count();
  }

  /** Every statement of {@code sql}, by field name (a map's by field name and key). */
  static Map<String, NamedSql> statements(OperatorSql sql) throws IllegalAccessException {
    Map<String, NamedSql> statements = new LinkedHashMap<>();
    for (Field field : OperatorSql.class.getDeclaredFields()) {
      field.setAccessible(true);
      Object value =
          java.lang.reflect.Modifier.isStatic(field.getModifiers()) ? null : field.get(sql);
      collect(field.getName(), value, statements);
    }
    return statements;
  }

  /** {@code value}'s statements under {@code name}, a map's by key, however deeply nested. */
  private static void collect(String name, Object value, Map<String, NamedSql> statements) {
    if (value instanceof NamedSql statement) {
      statements.put(name, statement);
    } else if (value instanceof Map<?, ?> map) {
      map.forEach((key, v) -> collect(name + "." + key, v, statements));
    }
  }
}
