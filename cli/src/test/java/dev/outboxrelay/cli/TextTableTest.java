package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The human output's tables: padding between columns, never a change to a cell's own text. */
class TextTableTest {
  @Test
  void columnsAreLeftAlignedAndALineEndsAfterItsLastNonEmptyCell() {
    String table =
        new TextTable("ID", "STATUS", "NOTE").row("a", "PENDING", "").row("bb", "", "x").render();

    assertEquals("ID  STATUS   NOTE\na   PENDING\nbb           x\n", table);
  }

  /** Only padding is dropped at a line's end: "a " is not shown as "a". */
  @Test
  void aLastCellKeepsItsOwnTrailingSpaces() {
    String keyValue =
        TextTable.keyValue().row("message id", "a ").row("status", "PENDING").render();

    assertEquals("message id  a \nstatus      PENDING\n", keyValue);
  }

  /** A value from a row shows its trailing space as an escape, and the columns stay aligned. */
  @Test
  void anEscapedTrailingSpaceKeepsTheColumnsAligned() {
    String table =
        new TextTable("MESSAGE ID", "REASON")
            .row(Text.safe("a "), Text.safe("POISON_PILL "))
            .row(Text.safe("a"), Text.safe("POISON_PILL"))
            .render();

    assertEquals(
        "MESSAGE ID  REASON\n" + "a\\u0020     POISON_PILL\\u0020\n" + "a           POISON_PILL\n",
        table);
  }
}
