package dev.outboxrelay.localstack;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Just enough of the Prometheus text exposition format to read samples back: {@code name{label="
 * value",...} value [timestamp]}, with {@code #} lines (HELP, TYPE) skipped. A line this parser
 * does not understand is skipped too: {@code status} reads what it can and never fails on a scrape.
 */
final class PrometheusText {
  private PrometheusText() {}

  record Sample(String name, Map<String, String> labels, double value) {
    String label(String name) {
      return labels.getOrDefault(name, "");
    }
  }

  static List<Sample> parse(String text) {
    List<Sample> samples = new ArrayList<>();
    for (String line : text.split("\n")) {
      String trimmed = line.strip();
      if (trimmed.isEmpty() || trimmed.startsWith("#")) {
        continue;
      }
      Sample sample = sample(trimmed);
      if (sample != null) {
        samples.add(sample);
      }
    }
    return samples;
  }

  /** One sample line, or null when it is not one. */
  private static Sample sample(String line) {
    int i = 0;
    int n = line.length();
    while (i < n && line.charAt(i) != '{' && !Character.isWhitespace(line.charAt(i))) {
      i++;
    }
    String name = line.substring(0, i);
    if (name.isEmpty()) {
      return null;
    }
    Map<String, String> labels = new LinkedHashMap<>();
    if (i < n && line.charAt(i) == '{') {
      i = labels(line, i + 1, labels);
      if (i < 0) {
        return null;
      }
    }
    String[] rest = line.substring(i).trim().split("\\s+");
    if (rest.length == 0 || rest[0].isEmpty()) {
      return null;
    }
    try {
      return new Sample(name, Map.copyOf(labels), value(rest[0]));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /**
   * Reads {@code a="x",b="y"}} from {@code start} (just after the brace) into {@code labels};
   * returns the index after the closing brace, or -1 when the labels are malformed.
   */
  private static int labels(String line, int start, Map<String, String> labels) {
    int i = start;
    int n = line.length();
    while (true) {
      while (i < n && (line.charAt(i) == ',' || line.charAt(i) == ' ')) {
        i++;
      }
      if (i < n && line.charAt(i) == '}') {
        return i + 1;
      }
      int eq = line.indexOf('=', i);
      if (eq < 0 || eq + 1 >= n || line.charAt(eq + 1) != '"') {
        return -1;
      }
      String label = line.substring(i, eq).trim();
      StringBuilder value = new StringBuilder();
      i = eq + 2;
      while (i < n && line.charAt(i) != '"') {
        char c = line.charAt(i);
        if (c == '\\' && i + 1 < n) {
          char escaped = line.charAt(++i);
          value.append(escaped == 'n' ? '\n' : escaped);
        } else {
          value.append(c);
        }
        i++;
      }
      if (i >= n) {
        return -1;
      }
      labels.put(label, value.toString());
      i++; // the closing quote
    }
  }

  private static double value(String token) {
    return switch (token) {
      case "NaN" -> Double.NaN;
      case "+Inf", "Inf" -> Double.POSITIVE_INFINITY;
      case "-Inf" -> Double.NEGATIVE_INFINITY;
      default -> Double.parseDouble(token);
    };
  }
}
