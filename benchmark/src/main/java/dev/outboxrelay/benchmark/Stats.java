package dev.outboxrelay.benchmark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** Median, min and max of repeated runs; percentiles of latency samples. */
final class Stats {
  private Stats() {}

  record Summary(double median, double min, double max, int n) {
    String format(String pattern) {
      if (n == 0) {
        return "n/a";
      }
      if (n == 1) {
        return pattern.formatted(median);
      }
      return (pattern + " (%s–%s)")
          .formatted(median, pattern.formatted(min), pattern.formatted(max));
    }
  }

  static Summary summarize(List<Double> values) {
    if (values.isEmpty()) {
      return new Summary(Double.NaN, Double.NaN, Double.NaN, 0);
    }
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    return new Summary(median(sorted), sorted.get(0), sorted.get(sorted.size() - 1), sorted.size());
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
