package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Derived names: unchanged wherever they worked (existing databases hold them), shortened
 * deterministically where they did not. The database side is in LongestTableNameTest.
 */
class OutboxTableTest {
  private static String name(String prefix, int length) {
    return prefix + "x".repeat(length - prefix.length());
  }

  @Test
  void namesThatFitAreAsTheyAlwaysWere() {
    OutboxTable plain = OutboxTable.parse("outbox");
    assertEquals("outbox_relay", plain.notifyChannel());
    assertEquals("outbox_schema_history", plain.historyTable());
    assertEquals("\"outbox_instance_key_guard\"", plain.qualifiedFunction());
    assertEquals("\"outbox_notify_inserted\"", plain.qualifiedNotifyFunction());
    assertEquals("\"outbox_active_idx\"", plain.qualifiedIndex("active_idx"));

    OutboxTable qualified = OutboxTable.parse("app.outbox");
    assertEquals("app_outbox_relay", qualified.notifyChannel());
    assertEquals("outbox_schema_history", qualified.historyTable());
    assertEquals("\"app\".\"outbox_notify_inserted\"", qualified.qualifiedNotifyFunction());
    assertEquals("\"app\".\"outbox_active_idx\"", qualified.qualifiedIndex("active_idx"));
  }

  @Test
  void aChannelIsKeptUpTo63BytesAndShortenedWithAHashBeyond() {
    String table = name("t", 48);
    String fits = name("s", 8) + "." + table; // s_t_relay: 8 + 1 + 48 + 6 = 63
    assertEquals(fits.replace('.', '_') + "_relay", OutboxTable.parse(fits).notifyChannel());

    String channel = OutboxTable.parse(name("s", 9) + "." + table).notifyChannel();
    assertEquals(63, channel.length());
    assertTrue(channel.matches(name("s", 9) + "_t[x]{43}_[0-9a-f]{8}"), channel);
    assertEquals(channel, OutboxTable.parse(name("s", 9) + "." + table).notifyChannel());
  }

  @Test
  void longTablesThatShareTheKeptPrefixGetDifferentChannels() {
    String schema = name("s", 48);
    String a = OutboxTable.parse(schema + "." + name("orders_", 48)).notifyChannel();
    String b = OutboxTable.parse(schema + "." + name("orders_", 47) + "y").notifyChannel();
    assertEquals(a.substring(0, 54), b.substring(0, 54));
    assertNotEquals(a, b);
  }

  @Test
  void theHistoryTableKeepsEveryNameFlywayCouldUse() {
    // Up to 61 bytes Flyway's <history>_pk and <history>_s_idx stay distinct after PostgreSQL's
    // cut.
    String t46 = name("t", 46);
    assertEquals(t46 + "_schema_history", OutboxTable.parse(t46).historyTable());
    for (int length : new int[] {47, 48}) {
      String history = OutboxTable.parse(name("t", length)).historyTable();
      assertEquals(57, history.length(), history);
      assertTrue(history.matches("t[x]{46,47}__?[0-9a-f]{8}"), history);
    }
    assertNotEquals(
        OutboxTable.parse(name("t", 47) + "a").historyTable(),
        OutboxTable.parse(name("t", 47) + "b").historyTable());
  }

  @Test
  void objectNamesAreCutAsPostgresCutsThem() {
    String table = name("t", 48);
    OutboxTable outbox = OutboxTable.parse("app." + table);
    assertEquals(table + "_parked_idx", outbox.objectName("parked_idx"));
    assertEquals(table + "_instance_key_g", outbox.objectName("instance_key_guard"));
    assertEquals("\"app\".\"" + table + "_instance_key_g\"", outbox.qualifiedFunction());
    assertEquals("\"app\".\"" + table + "_notify_inserte\"", outbox.qualifiedNotifyFunction());
  }
}
