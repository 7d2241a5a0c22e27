package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** What the CLI prints of a row's values on a terminal. */
class TextTest {
  @Test
  void controlAndFormatCharactersAreShownAsEscapes() {
    assertEquals("-", Text.safe(null));
    assertEquals("order-1 é ü 注文", Text.safe("order-1 é ü 注文"), "letters stay");
    assertEquals("a\\u001b[2Jb", Text.safe("a\u001b[2Jb"));
    assertEquals("a\\u2028b", Text.safe("a\u2028b"));
    // A right-to-left override would print "id-1\u202Efdp.exe" as "id-1exe.pdf".
    assertEquals("id-1\\u202efdp.exe", Text.safe("id-1\u202Efdp.exe"));
    assertEquals("a\\u2066b\\u2069", Text.safe("a\u2066b\u2069"));
    assertEquals("a\\u200bb", Text.safe("a\u200Bb"), "zero-width space");
    assertEquals("a\\ufeffb", Text.safe("a\uFEFFb"));
  }

  @Test
  void multilineValuesKeepTheirLineBreaksOnly() {
    assertEquals("{\n    \"a\": \"\\u202e\"\n}", Text.safeMultiline("{\n\t\"a\": \"\u202E\"\r\n}"));
  }
}
