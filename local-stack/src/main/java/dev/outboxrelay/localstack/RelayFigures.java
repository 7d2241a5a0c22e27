package dev.outboxrelay.localstack;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The headline figures of each connector, from the {@code outbox_relay_*} series that the rules of
 * config/metrics/jmx-exporter.yml make of the tasks' MBeans: counts summed over the connector's
 * tasks, the age of the oldest undelivered row the largest over them (only task 0 measures the
 * backlog and the age; the other tasks export neither).
 */
record RelayFigures(String connector, SortedSet<String> tasks, Map<Figure, Double> values) {

  enum Figure {
    PUBLISHED("outbox_relay_published_total", false),
    CLAIMS_LOST("outbox_relay_claim_lost_total", false),
    RETRIED("outbox_relay_retried_total", false),
    EXHAUSTED("outbox_relay_exhausted_total", false),
    BACKLOG_PENDING("outbox_relay_backlog_pending_records", false),
    BACKLOG_IN_FLIGHT("outbox_relay_backlog_in_flight_records", false),
    BACKLOG_AMBIGUOUS("outbox_relay_backlog_ambiguous_records", false),
    BACKLOG_FAILED("outbox_relay_backlog_failed_records", false),
    BACKLOG_EXHAUSTED("outbox_relay_backlog_exhausted_records", false),
    LAG_MS("outbox_relay_lag_ms", true);

    final String series;
    final boolean largest;

    Figure(String series, boolean largest) {
      this.series = series;
      this.largest = largest;
    }
  }

  /** Every connector that has outbox_relay series, by name. */
  static SortedMap<String, RelayFigures> of(List<PrometheusText.Sample> samples) {
    SortedMap<String, RelayFigures> byConnector = new TreeMap<>();
    for (PrometheusText.Sample sample : samples) {
      if (!sample.name().startsWith("outbox_relay_") || sample.label("connector").isEmpty()) {
        continue;
      }
      RelayFigures figures =
          byConnector.computeIfAbsent(
              sample.label("connector"),
              c -> new RelayFigures(c, new TreeSet<>(), new EnumMap<>(Figure.class)));
      if (!sample.label("task").isEmpty()) { // not a connector's own series (connector_deployed)
        figures.tasks().add(sample.label("task"));
      }
      for (Figure figure : Figure.values()) {
        if (figure.series.equals(sample.name()) && !Double.isNaN(sample.value())) {
          figures.values().merge(figure, sample.value(), figure.largest ? Math::max : Double::sum);
        }
      }
    }
    return byConnector;
  }

  /** The figure, or NaN when no task reported it. */
  double get(Figure figure) {
    return values.getOrDefault(figure, Double.NaN);
  }

  /** Two lines: what the tasks did since they started, and the backlog as task 0 last read it. */
  List<String> lines() {
    List<String> lines = new ArrayList<>();
    lines.add(
        connector
            + " ("
            + tasks.size()
            + (tasks.size() == 1 ? " task" : " tasks")
            + "): published "
            + count(Figure.PUBLISHED)
            + ", claims lost "
            + count(Figure.CLAIMS_LOST)
            + ", retried "
            + count(Figure.RETRIED)
            + ", exhausted "
            + count(Figure.EXHAUSTED));
    lines.add(
        "  backlog: pending "
            + count(Figure.BACKLOG_PENDING)
            + ", in flight "
            + count(Figure.BACKLOG_IN_FLIGHT)
            + ", awaiting retry "
            + count(Figure.BACKLOG_AMBIGUOUS)
            + ", failed "
            + count(Figure.BACKLOG_FAILED)
            + ", exhausted "
            + count(Figure.BACKLOG_EXHAUSTED)
            + "; oldest undelivered row "
            + age(get(Figure.LAG_MS))
            + " (lag)");
    return lines;
  }

  private String count(Figure figure) {
    double value = get(figure);
    if (Double.isNaN(value)) {
      return "?";
    }
    return value == Math.rint(value) && !Double.isInfinite(value)
        ? Long.toString((long) value)
        : String.format(Locale.ROOT, "%.1f", value);
  }

  static String age(double millis) {
    if (Double.isNaN(millis)) {
      return "?";
    }
    if (millis < 1000) {
      return String.format(Locale.ROOT, "%.0f ms", millis);
    }
    double seconds = millis / 1000;
    if (seconds < 120) {
      return String.format(Locale.ROOT, "%.1f s", seconds);
    }
    if (seconds < 2 * 3600) {
      return String.format(Locale.ROOT, "%.0f min", seconds / 60);
    }
    return String.format(Locale.ROOT, "%.1f h", seconds / 3600);
  }
}
