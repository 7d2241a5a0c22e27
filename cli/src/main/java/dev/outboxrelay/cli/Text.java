package dev.outboxrelay.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.outboxrelay.store.Printable;
import java.time.Duration;
import java.time.Instant;

/** Formatting shared by the commands' human and JSON output. */
public final class Text {
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private Text() {}

  /**
   * A value from a row, safe to print on a terminal ({@link Printable#escape}: control and format
   * characters shown as escapes). Null is shown as "-".
   */
  public static String safe(String value) {
    return value == null ? "-" : Printable.escape(value);
  }

  /** Like {@link #safe(String)}, keeping line breaks and tabs (for a payload shown on request). */
  public static String safeMultiline(String value) {
    StringBuilder out = new StringBuilder(value.length());
    for (String line : value.split("\n", -1)) {
      if (!out.isEmpty()) {
        out.append('\n');
      }
      out.append(safe(line.replace("\t", "    ").replace("\r", "")));
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
}
