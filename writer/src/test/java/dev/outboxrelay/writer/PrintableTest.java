package dev.outboxrelay.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.junit.jupiter.api.Test;

/**
 * The one escaping rule of the writer's messages, the connector's log lines and the CLI's output:
 * what could forge a line, rewrite a terminal, reorder text or make two ids look alike is written
 * as {@code \\uXXXX}; everything else is kept, the value itself when nothing needs escaping.
 */
class PrintableTest {
  @Test
  void controlCharactersAreEscaped() {
    assertEquals("o-1\\u000d\\u000aERROR forged", Printable.escape("o-1\r\nERROR forged"));
    assertEquals("\\u001b[31mred\\u001b[0m", Printable.escape("\u001b[31mred\u001b[0m"));
    assertEquals(
        "a\\u0000b\\u007f\\u0085\\u2028\\u2029", Printable.escape("a\0b\u007f\u0085\u2028\u2029"));
  }

  @Test
  void formatAndInvisibleCharactersAreEscaped() {
    assertEquals("id\\u202edi\\u202c", Printable.escape("id\u202edi\u202c")); // bidi override
    assertEquals("a\\u200bb\\ufeff", Printable.escape("a\u200bb\ufeff")); // zero width, BOM
    assertEquals("a\\ufe0f\\u034f\\u3164", Printable.escape("a\ufe0f\u034f\u3164"));
    // A Unicode tag (outside the BMP) as its two UTF-16 units.
    assertEquals("a\\udb40\\udc41", Printable.escape("a\uDB40\uDC41"));
  }

  @Test
  void anUnpairedSurrogateIsEscapedAndAPairIsKept() {
    assertEquals("a\\ud800b", Printable.escape("a\uD800b"));
    assertEquals("\\udc00", Printable.escape("\uDC00"));
    assertEquals("eu-\uD83C\uDF0D", Printable.escape("eu-\uD83C\uDF0D"));
  }

  @Test
  void aPrintableValueIsReturnedAsItIsAndNullStaysNull() {
    String plain = "o-42:placed äöü 注文 \\u001b";
    assertSame(plain, Printable.escape(plain));
    assertNull(Printable.escape(null));
  }
}
