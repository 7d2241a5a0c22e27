package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.outboxrelay.writer.Printable;
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
    // Unicode tags (outside the Basic Multilingual Plane) are invisible too; an emoji stays.
    assertEquals(
        "id-1\\udb40\\udc01\\udb40\\udc41 😀", Text.safe("id-1\uDB40\uDC01\uDB40\uDC41 😀"));
    assertEquals("a\\ud83db", Text.safe("a\uD83Db"), "an unpaired surrogate");
    // Invisible, though not format characters: variation selectors, CGJ, Hangul fillers.
    assertEquals(
        "id\\ufe0f\\u034f\\u3164\\udb40\\udd00", Text.safe("id\uFE0F\u034F\u3164\uDB40\uDD00"));
  }

  /**
   * A backslash is doubled before anything is escaped: an id holding ESC and one holding the six
   * characters of its escape print differently, and each printed form stands for one value.
   */
  @Test
  void backslashesAreDoubledSoThatEscapesAreUnambiguous() {
    String esc = "id-\u001b";
    String sixChars = "id-\\u001b";
    assertEquals("id-\\u001b", Text.safe(esc));
    assertEquals("id-\\\\u001b", Text.safe(sixChars));
    assertNotEquals(Text.safe(esc), Text.safe(sixChars));
    assertEquals("C:\\\\dir\\\\", Text.safe("C:\\dir\\"));
    assertEquals("a\\\\\\u202e", Text.safe("a\\\u202E"), "a backslash, then an override");
    assertEquals("a\\\\u0020", Text.safe("a\\u0020"));
    assertNotEquals(Text.safe("a "), Text.safe("a\\u0020"));
  }

  /** A terminal shows nothing of a space at a value's end (or start): it is shown as an escape. */
  @Test
  void spacesAtAValuesStartOrEndAreShownAsEscapes() {
    assertEquals("a\\u0020", Text.safe("a "));
    assertEquals("a\\u0020\\u0020", Text.safe("a  "));
    assertEquals("\\u0020a", Text.safe(" a"));
    assertEquals("\\u0020", Text.safe(" "));
    assertEquals("a\\u00a0", Text.safe("a\u00A0"), "a no-break space");
    assertEquals("\\u3000a", Text.safe("\u3000a"), "an ideographic space");
    assertEquals("order 1 b", Text.safe("order 1 b"), "spaces inside stay");
    assertEquals("a \\u001b", Text.safe("a \u001b"), "not at the end once ESC is escaped");
    assertEquals("", Text.safe(""));
  }

  /** A payload is shown for reading: JSON keeps its backslashes and its indentation. */
  @Test
  void multilineValuesKeepTheirLineBreaksOnly() {
    assertEquals("{\n    \"a\": \"\\u202e\"\n}", Text.safeMultiline("{\n\t\"a\": \"\u202E\"\r\n}"));
    assertEquals(
        "{\n  \"a\": \"x\\\"y\\\\u001b \" \n}",
        Text.safeMultiline("{\n  \"a\": \"x\\\"y\\\\u001b \" \n}"));
  }

  /**
   * --json escapes the characters the human output escapes (JSON itself allows all but U+0000 to
   * U+001F raw), in field names too, and stays JSON that parses back to the same strings.
   */
  @Test
  void jsonEscapesControlAndFormatCharactersAndParsesBack() throws Exception {
    String value =
        "id-1\u202Efdp.exe \u009B2J \u0085 \u007F \u2028 \u200B \uFEFF \u001B é 注文 😀 \uDB40\uDC41";
    String name = "trace\u202E";
    ObjectNode node = Text.json().createObjectNode();
    node.put("value", value);
    node.put(name, "x");

    String json = Text.toJson(node);

    assertTrue(json.contains("id-1\\u202Efdp.exe \\u009B2J"), json);
    assertTrue(json.contains("\\u0085 \\u007F \\u2028 \\u200B \\uFEFF \\u001B"), json);
    assertTrue(json.contains("\"trace\\u202E\""), json);
    assertTrue(json.contains(" é 注文 \\uD83D\\uDE00 \\uDB40\\uDC41\""), "letters stay: " + json);
    for (char c :
        new char[] {'\u202E', '\u009B', '\u0085', '\u007F', '\u2028', '\u200B', '\uDB40'}) {
      assertFalse(json.indexOf(c) >= 0, () -> "raw U+" + Integer.toHexString(c) + ": " + json);
    }
    JsonNode back = new ObjectMapper().readTree(json);
    assertEquals(value, back.get("value").asText());
    assertEquals("x", back.get(name).asText());
  }

  /** JSON escapes exactly the chars Printable escapes, besides JSON's own quote and backslash. */
  @Test
  void jsonEscapesTheSameCharactersAsTheHumanOutput() {
    for (int c = Character.MIN_VALUE; c <= Character.MAX_VALUE; c++) {
      if (c == '"' || c == '\\') {
        continue;
      }
      String one = String.valueOf((char) c);
      String json = Text.toJson(one);
      boolean escaped = !json.equals("\"" + one + "\"");
      assertEquals(
          !Printable.escape(one).equals(one), escaped, "U+" + Integer.toHexString(c) + ": " + json);
    }
  }
}
