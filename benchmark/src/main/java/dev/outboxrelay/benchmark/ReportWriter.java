package dev.outboxrelay.benchmark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/** Renders {@link Results} as Markdown: medians with (min–max) over runs, and the targets. */
final class ReportWriter {
  private final Results r;
  private final StringBuilder out = new StringBuilder();

  ReportWriter(Results results) {
    this.r = results;
  }

  String markdown() {
    line("# outbox-relay benchmark report");
    line("");
    line(
        "Medians over %d run(s), (min–max) in brackets. Load average (1 min) at start %.2f, at end %.2f."
            .formatted(r.options.runs, r.loadAtStart, r.loadAtEnd));
    line("");
    line("## Machine and settings");
    line("");
    r.machine.forEach((k, v) -> line("- %s: %s".formatted(k, v)));
    r.postgres.forEach((k, v) -> line("- postgres %s: %s".formatted(k, v)));
    line(
        "- workload: %d aggregates, ≈%d-byte JSON payloads, one topic with %d partitions"
            .formatted(r.options.aggregates, r.options.payloadBytes, r.options.partitions));
    line("");
    throughput();
    latency();
    scale();
    memory();
    targets();
    return out.toString();
  }

  private void throughput() {
    if (r.limits.isEmpty() && r.drains.isEmpty()) {
      return;
    }
    line("## Throughput (backlog drain)");
    line("");
    line("| configuration | rows | rows/s | seconds | duplicates | order violations | load avg |");
    line("|---|---:|---:|---:|---:|---:|---:|");
    r.limits.forEach(
        (label, runs) ->
            line(
                "| %s | %d | %s | %s | – | – | %s |"
                    .formatted(
                        label,
                        r.options.rows,
                        fmt(runs, DatabaseLimit.Result::rowsPerSecond, "%.0f"),
                        fmt(runs, DatabaseLimit.Result::seconds, "%.1f"),
                        fmt(runs, DatabaseLimit.Result::load, "%.2f"))));
    r.drains.forEach(
        (label, runs) ->
            line(
                "| %s | %d | %s | %s | %s | %s | %s |"
                    .formatted(
                        label,
                        r.drainConfigs.get(label).rows(),
                        fmt(runs, Drain.Result::rowsPerSecond, "%.0f"),
                        fmt(runs, Drain.Result::seconds, "%.1f"),
                        fmt(runs, x -> x.duplicates(), "%.0f"),
                        fmt(runs, x -> x.orderViolations(), "%.0f"),
                        fmt(runs, Drain.Result::loadAverage, "%.2f"))));
    line("");
    line(
        "Time runs from resuming the connector until every row has been read from Kafka and none"
            + " is left PENDING, AMBIGUOUS or IN_FLIGHT. Order violations count rows read after a"
            + " later row of the same aggregate (only meaningful with ordering on).");
    line("");
  }

  private void latency() {
    if (r.latency.isEmpty()) {
      return;
    }
    line(
        "## Commit-to-consumer latency (connector defaults, tasks.max=%d)"
            .formatted(r.options.latencyTasks));
    line("");
    line(
        "| rate | insert notification | measured rows | achieved rows/s | p50 ms | p99 ms | p99.9 ms | max ms | insert+commit p50 / p99 ms | load avg |");
    line("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    r.latency.forEach((rate, runs) -> latencyRow(rate, "on (default)", runs));
    r.latencyNotifyOff.forEach((rate, runs) -> latencyRow(rate, "off", runs));
    line("");
  }

  private void latencyRow(int rate, String notify, List<Latency.Result> runs) {
    line(
        "| %d/s | %s | %d | %s | %s | %s | %s | %s | %s / %s | %s |"
            .formatted(
                rate,
                notify,
                runs.get(0).rows(),
                fmt(runs, Latency.Result::achievedRate, "%.0f"),
                fmt(runs, x -> x.p50Micros() / 1e3, "%.1f"),
                fmt(runs, x -> x.p99Micros() / 1e3, "%.1f"),
                fmt(runs, x -> x.p999Micros() / 1e3, "%.1f"),
                fmt(runs, x -> x.maxMicros() / 1e3, "%.1f"),
                fmt(runs, x -> x.insertP50Micros() / 1e3, "%.1f"),
                fmt(runs, x -> x.insertP99Micros() / 1e3, "%.1f"),
                fmt(runs, Latency.Result::loadAverage, "%.2f")));
  }

  private void scale() {
    if (r.scale.isEmpty()) {
      return;
    }
    line(
        "## Claim time vs retained PUBLISHED rows (%d pending rows, claim of %d, %d claims each)"
            .formatted(r.options.scalePending, r.options.batchSize, r.options.scaleClaims));
    line("");
    line(
        "| retained PUBLISHED rows | table size MiB | ordered claim ms median (p10–p90) | unordered claim ms median (p10–p90) | backlog metrics query ms | load avg |");
    line("|---:|---:|---:|---:|---:|---:|");
    for (ClaimScale.Result s : r.scale) {
      line(
          "| %d | %.0f | %.2f (%.2f–%.2f) | %.2f (%.2f–%.2f) | %.1f | %.2f |"
              .formatted(
                  s.retained(),
                  s.tableBytes() / 1048576.0,
                  s.ordered().medianMs(),
                  s.ordered().p10Ms(),
                  s.ordered().p90Ms(),
                  s.unordered().medianMs(),
                  s.unordered().p10Ms(),
                  s.unordered().p90Ms(),
                  s.backlogMetricsMs(),
                  s.loadAverage()));
    }
    line("");
  }

  private void memory() {
    if (r.memory == null) {
      return;
    }
    MemoryRun.Result m = r.memory;
    line("## Memory while draining %d rows (tasks.max=2, defaults)".formatted(m.rows()));
    line("");
    line(
        "Live heap of the whole JVM (broker, worker, consumer, relay) after a full GC: %.0f MiB idle"
                .formatted(m.baselineBytes() / 1048576.0)
            + " before the drain, at most %.0f MiB over %d samples during it (+%.0f MiB). Drain: %.0f rows/s in %.1f s, load %.2f."
                .formatted(
                    m.peakBytes() / 1048576.0,
                    m.samples(),
                    (m.peakBytes() - m.baselineBytes()) / 1048576.0,
                    m.drain().rowsPerSecond(),
                    m.drain().seconds(),
                    m.loadAverage()));
    line("");
  }

  private void targets() {
    line("## Targets");
    line("");
    List<String> lines = new ArrayList<>();
    Double limit =
        median(r.limits.get(Results.LIMIT_CONFIGS.get(0).label()), x -> x.rowsPerSecond());
    Double drain = median(r.drains.get(r.defaultDrainLabel()), Drain.Result::rowsPerSecond);
    Double naive = median(r.drains.get(Results.NAIVE), Drain.Result::rowsPerSecond);
    if (limit != null && drain != null) {
      lines.add(
          verdict(
              drain / limit >= 0.6,
              "defaults drain at %.0f%% of the database limit (target ≥ 60%%): %.0f vs %.0f rows/s"
                  .formatted(100 * drain / limit, drain, limit)));
    }
    if (naive != null && drain != null) {
      lines.add(
          verdict(
              drain / naive >= 10,
              "defaults drain %.1f× the naive relay (target ≥ 10×): %.0f vs %.0f rows/s"
                  .formatted(drain / naive, drain, naive)));
    }
    List<Latency.Result> slow = r.latency.get(500);
    if (slow != null) {
      double p99 = median(slow, x -> x.p99Micros() / 1e3);
      lines.add(verdict(p99 <= 50, "p99 at 500 rows/s %.1f ms (target ≤ 50 ms)".formatted(p99)));
    }
    if (r.scale.size() == 2) {
      ClaimScale.Result empty = r.scale.get(0);
      ClaimScale.Result full = r.scale.get(1);
      double ordered = full.ordered().medianMs() / empty.ordered().medianMs();
      double unordered = full.unordered().medianMs() / empty.unordered().medianMs();
      lines.add(
          verdict(
              ordered <= 1.25,
              "ordered claim with %d retained rows %.2f× the empty table (target ≤ 1.25×)"
                  .formatted(full.retained(), ordered)));
      lines.add(
          verdict(
              unordered <= 1.25,
              "unordered claim with %d retained rows %.2f× the empty table (target ≤ 1.25×)"
                  .formatted(full.retained(), unordered)));
    }
    lines.forEach(l -> line("- " + l));
    line("");
  }

  private static String verdict(boolean met, String text) {
    return (met ? "MET: " : "MISSED: ") + text;
  }

  private static <T> Double median(List<T> runs, ToDoubleFunction<T> f) {
    if (runs == null || runs.isEmpty()) {
      return null;
    }
    return Stats.summarize(runs.stream().map(x -> f.applyAsDouble(x)).toList()).median();
  }

  private static <T> String fmt(List<T> runs, ToDoubleFunction<T> f, String pattern) {
    return Stats.summarize(runs.stream().map(x -> f.applyAsDouble(x)).toList()).format(pattern);
  }

  private void line(String s) {
    out.append(s).append('\n');
  }

  static String table(Map<String, String> m) {
    StringBuilder b = new StringBuilder();
    m.forEach((k, v) -> b.append(k).append('=').append(v).append(' '));
    return b.toString().trim();
  }
}
