package dev.outboxrelay.benchmark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** Median, min and max of repeated runs; percentiles of latency samples. */
final class Stats {
  private Stats() {}

  /**
   * Of {@code n} measured values; {@code missing} runs measured nothing (NaN: a reading that
   * failed), which the formatted cell says.
   */
  record Summary(double median, double min, double max, int n, int missing) {
    Summary(double median, double min, double max, int n) {
      this(median, min, max, n, 0);
    }

    String format(String pattern) {
      String unmeasured = missing == 0 ? "" : " [" + missing + " run(s) not measured]";
      if (n == 0) {
        return "n/a" + unmeasured;
      }
      if (n == 1) {
        return pattern.formatted(median) + unmeasured;
      }
      return (pattern + " (%s–%s)")
              .formatted(median, pattern.formatted(min), pattern.formatted(max))
          + unmeasured;
    }
  }

  /**
   * Median, min and max of the measured values: a NaN (a reading that failed) is left out and
   * counted as missing. Sorted in, NaN went last and shifted the median with no mark.
   */
  static Summary summarize(List<Double> values) {
    List<Double> sorted = new ArrayList<>();
    for (Double v : values) {
      if (!v.isNaN()) {
        sorted.add(v);
      }
    }
    int missing = values.size() - sorted.size();
    if (sorted.isEmpty()) {
      return new Summary(Double.NaN, Double.NaN, Double.NaN, 0, missing);
    }
    Collections.sort(sorted);
    return new Summary(
        median(sorted), sorted.get(0), sorted.get(sorted.size() - 1), sorted.size(), missing);
  }

  static double median(List<Double> sorted) {
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  /** Nearest-rank percentile of sorted values, {@code p} in [0, 100]. */
  static long percentile(long[] sorted, double p) {
    if (sorted.length == 0) {
      return -1;
    }
    int rank = (int) Math.ceil(p / 100.0 * sorted.length);
    return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
  }
}
