package dev.outboxrelay.cli;

import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.outboxrelay.writer.Printable;
import java.time.Duration;
import java.time.Instant;
import java.util.BitSet;

/** Formatting shared by the commands' human and JSON output. */
public final class Text {
  /**
   * The JSON output's mapper: strings (values and field names alike) have the characters {@link
   * Printable#escape} escapes written as JSON {@code \\uXXXX} escapes, so that a value read from a
   * row cannot reorder or rewrite a terminal showing the JSON; it parses back to the same string.
   * Decimals are written out plain, as PostgreSQL writes a jsonb number ({@code 0.0000001}, not a
   * BigDecimal's {@code 1E-7}), so that a header's number keeps the row's text.
   */
  private static final ObjectMapper JSON =
      new ObjectMapper(
              new JsonFactoryBuilder()
                  .characterEscapes(new PrintableEscapes())
                  .enable(StreamWriteFeature.WRITE_BIGDECIMAL_AS_PLAIN)
                  .build())
          .enable(SerializationFeature.INDENT_OUTPUT);

  private Text() {}

  /**
   * A value from a row, safe to print on a terminal and unambiguous. A backslash is shown doubled,
   * then control and format characters as {@code \\uXXXX} escapes ({@link Printable#escape}), and a
   * space character (U+0020, U+00A0, ...) at the value's start or end, which a terminal shows as
   * nothing, as an escape too ("a " as {@code a\\u0020}). A single backslash so always begins an
   * escape, and each printed form stands for exactly one value: ESC and the six characters of its
   * escape print differently. Null is shown as "-".
   */
  public static String safe(String value) {
    return value == null ? "-" : edgeSpaces(Printable.escape(value.replace("\\", "\\\\")));
  }

  /** {@code escaped} with the space characters at its start and end written as escapes. */
  private static String edgeSpaces(String escaped) {
    int start = 0;
    int end = escaped.length();
    while (start < end && Character.getType(escaped.charAt(start)) == Character.SPACE_SEPARATOR) {
      start++;
    }
    while (end > start && Character.getType(escaped.charAt(end - 1)) == Character.SPACE_SEPARATOR) {
      end--;
    }
    if (start == 0 && end == escaped.length()) {
      return escaped;
    }
    StringBuilder out = new StringBuilder(escaped.length() + 6 * (escaped.length() - end + start));
    for (int i = 0; i < start; i++) {
      out.append(String.format("\\u%04x", (int) escaped.charAt(i)));
    }
    out.append(escaped, start, end);
    for (int i = end; i < escaped.length(); i++) {
      out.append(String.format("\\u%04x", (int) escaped.charAt(i)));
    }
    return out.toString();
  }

  /**
   * A payload or headers shown on request, for reading, not copying: line breaks kept, tabs as four
   * spaces, carriage returns dropped and other control and format characters escaped ({@link
   * Printable#escape}); backslashes and spaces are left as they are, so that JSON reads as JSON.
   * {@code --json} has the exact text.
   */
  public static String safeMultiline(String value) {
    StringBuilder out = new StringBuilder(value.length());
    for (String line : value.split("\n", -1)) {
      if (!out.isEmpty()) {
        out.append('\n');
      }
      out.append(Printable.escape(line.replace("\t", "    ").replace("\r", "")));
    }
    return out.toString();
  }

  public static String instant(Instant instant) {
    return instant == null ? "-" : instant.toString();
  }

  /** "2d 3h", "4m 10s", "850ms": the two largest units, enough to judge an age at a glance. */
  public static String duration(Duration duration) {
    long millis = Math.max(0, duration.toMillis());
    if (millis < 1000) {
      return millis + "ms";
    }
    long seconds = millis / 1000;
    long days = seconds / 86_400;
    long hours = seconds % 86_400 / 3600;
    long minutes = seconds % 3600 / 60;
    long secs = seconds % 60;
    if (days > 0) {
      return days + "d " + hours + "h";
    }
    if (hours > 0) {
      return hours + "h " + minutes + "m";
    }
    if (minutes > 0) {
      return minutes + "m " + secs + "s";
    }
    return secs + "s";
  }

  public static ObjectMapper json() {
    return JSON;
  }

  public static String toJson(Object value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot render JSON", e);
    }
  }

  /**
   * JSON's own escapes, plus a {@code \\uXXXX} escape for each character {@link Printable#escape}
   * escapes: control characters (DEL and U+0080 to U+009F too, which JSON allows raw), U+2028,
   * U+2029 and format characters (bidirectional overrides, zero-width characters), decided by
   * Printable itself so that both outputs escape the same set. Jackson asks one UTF-16 unit at a
   * time, so every character outside the Basic Multilingual Plane is escaped (as its surrogate
   * pair; an emoji too): a unit alone cannot tell a Unicode tag from an emoji, and the JSON parses
   * back to the same string either way.
   */
  static final class PrintableEscapes extends CharacterEscapes {
    private static final long serialVersionUID = 1L;

    /** The UTF-16 chars Printable escapes alone (every surrogate, as unpaired), decided once. */
    private static final BitSet ESCAPED = new BitSet(Character.MAX_VALUE + 1);

    static {
      for (int c = Character.MIN_VALUE; c <= Character.MAX_VALUE; c++) {
        String one = String.valueOf((char) c);
        if (!Printable.escape(one).equals(one)) {
          ESCAPED.set(c);
        }
      }
    }

    private final int[] ascii;

    PrintableEscapes() {
      ascii = standardAsciiEscapesForJSON();
      for (int c = 0; c < ascii.length; c++) {
        if (ascii[c] == 0 && ESCAPED.get(c)) {
          ascii[c] = ESCAPE_STANDARD; // DEL: \\u007F, as Jackson writes its own escapes
        }
      }
    }

    @Override
    public int[] getEscapeCodesForAscii() {
      return ascii;
    }

    @Override
    public SerializableString getEscapeSequence(int ch) {
      if (ch < 0 || ch > Character.MAX_VALUE || !ESCAPED.get(ch)) {
        return null;
      }
      // Upper-case hex digits, as in Jackson's own escapes (\\u001B).
      return new SerializedString(String.format("\\u%04X", ch));
    }
  }
}
