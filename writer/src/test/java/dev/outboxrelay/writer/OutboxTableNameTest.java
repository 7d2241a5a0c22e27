package dev.outboxrelay.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** Only plain identifiers reach SQL, always quoted. */
class OutboxTableNameTest {

  @Test
  void aTableOrSchemaQualifiedTableIsQuoted() {
    OutboxTableName plain = OutboxTableName.parse("outbox");
    assertNull(plain.schema());
    assertEquals("outbox", plain.name());
    assertEquals("\"outbox\"", plain.qualified());
    assertEquals("outbox", plain.toString());

    OutboxTableName qualified = OutboxTableName.parse("app.orders_outbox_2");
    assertEquals("app", qualified.schema());
    assertEquals("orders_outbox_2", qualified.name());
    assertEquals("\"app\".\"orders_outbox_2\"", qualified.qualified());
    assertEquals("app.orders_outbox_2", qualified.toString());

    assertEquals(OutboxTableName.parse("app.outbox"), OutboxTableName.parse("app.outbox"));
    assertEquals(
        OutboxTableName.parse("app.outbox").hashCode(),
        OutboxTableName.parse("app.outbox").hashCode());
    assertNotEquals(OutboxTableName.parse("outbox"), OutboxTableName.parse("app.outbox"));
  }

  @Test
  void thePublishedLogIsTheTableNameWithPublishedInTheSameSchema() {
    assertEquals("\"outbox_published\"", OutboxTableName.parse("outbox").publishedLogQualified());
    assertEquals(
        "\"app\".\"orders_outbox_2_published\"",
        OutboxTableName.parse("app.orders_outbox_2").publishedLogQualified());
    String longest = "x".repeat(48);
    assertEquals(
        "\"" + longest + "_published\"", OutboxTableName.parse(longest).publishedLogQualified());
  }

  @Test
  void anythingButLowerCaseIdentifiersOfAtMost48CharactersIsRejected() {
    OutboxTableName.parse("_" + "x".repeat(47));
    for (String invalid :
        new String[] {
          "",
          ".",
          "app.",
          ".outbox",
          "a.b.c",
          "Outbox",
          "1outbox",
          "out-box",
          "out box",
          "\"outbox\"",
          "outbox;drop table x",
          "x".repeat(49),
          "app." + "x".repeat(49),
        }) {
      assertThrows(IllegalArgumentException.class, () -> OutboxTableName.parse(invalid), invalid);
    }
    assertThrows(NullPointerException.class, () -> OutboxTableName.parse(null));
  }
}
