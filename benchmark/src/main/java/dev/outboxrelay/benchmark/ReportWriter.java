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
    exactlyOnce();
    latency();
    scale();
    memory();
    targets();
    return out.toString();
  }

  private void throughput() {
    if (r.limits.isEmpty() && r.drains.isEmpty() && r.minimal.isEmpty() && r.debezium.isEmpty()) {
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
    r.minimal.forEach(
        (label, runs) ->
            line(
                "| %s | %d | %s | %s | – | – | %s |"
                    .formatted(
                        label,
                        r.options.rows,
                        fmt(runs, MinimalLoop.Result::rowsPerSecond, "%.0f"),
                        fmt(runs, MinimalLoop.Result::seconds, "%.1f"),
                        fmt(runs, MinimalLoop.Result::load, "%.2f"))));
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
    r.debezium.forEach(
        (label, runs) ->
            line(
                "| %s | %d | %s | %s | %s | %s | %s |"
                    .formatted(
                        label,
                        r.options.rows,
                        fmt(runs, DebeziumDrain.Result::rowsPerSecond, "%.0f"),
                        fmt(runs, DebeziumDrain.Result::seconds, "%.1f"),
                        fmt(runs, x -> x.duplicates(), "%.0f"),
                        fmt(runs, x -> x.orderViolations(), "%.0f"),
                        fmt(runs, DebeziumDrain.Result::loadAverage, "%.2f"))));
    line("");
    line(
        "Time runs from resuming the connector until every row has been read from Kafka and none"
            + " is left PENDING, AMBIGUOUS or IN_FLIGHT (Debezium: until every row has been read"
            + " from Kafka; it writes nothing back). Order violations count rows read after a"
            + " later row of the same aggregate (only meaningful with ordering on).");
    line("");
    onceRecordsFlow();
    cost();
  }

  /**
   * Each drain's rate once records flow, beside its rate from resume: Debezium's window holds its
   * stopped task's restart, the relay's its first claim, and a reader comparing the two tools
   * should see both rates.
   */
  private void onceRecordsFlow() {
    if (r.debezium.isEmpty() && r.drains.isEmpty()) {
      return;
    }
    // A subsection: benchmark/compare.sh reads the rates of the section's first table only.
    line("### Once records flow");
    line("");
    line(
        "| drain | rows/s, resume to last row | s from resume to the first row | rows/s, first to last"
            + " row on Kafka |");
    line("|---|---:|---:|---:|");
    r.drains.forEach(
        (label, runs) ->
            line(
                "| %s | %s | %s | %s |"
                    .formatted(
                        label,
                        fmt(runs, Drain.Result::rowsPerSecond, "%.0f"),
                        fmt(runs, Drain.Result::firstRowSeconds, "%.2f"),
                        fmt(runs, Drain.Result::firstToLastRowsPerSecond, "%.0f"))));
    r.debezium.forEach(
        (label, runs) ->
            line(
                "| %s | %s | %s | %s |"
                    .formatted(
                        label,
                        fmt(runs, DebeziumDrain.Result::rowsPerSecond, "%.0f"),
                        fmt(runs, DebeziumDrain.Result::firstRowSeconds, "%.2f"),
                        fmt(runs, DebeziumDrain.Result::firstToLastRowsPerSecond, "%.0f"))));
    line("");
    line(
        "Debezium is stopped (not paused) while the backlog is inserted: its time to the first row"
            + " holds the task's start and the replication stream opened at its offset; the relay's"
            + " paused tasks claim at once, and its time to the first row is its first claim. The"
            + " rate from the first to the last row on Kafka leaves both out (rows - 1 over the time"
            + " between their arrivals); the relay's resume-to-last-row rate also waits for its"
            + " last rows to be marked.");
    line("");
  }

  /**
   * Each exactly-once drain beside the same drain at least once, with what its transactions cost.
   * Issue 12: a transaction per poll must not cut the drain rate by more than 25 %.
   */
  private void exactlyOnce() {
    if (r.eosPairs.isEmpty()) {
      return;
    }
    line("## Exactly-once vs at-least-once");
    line("");
    line(
        "| drain | at-least-once rows/s | exactly-once rows/s | exactly-once / at-least-once | transactions | rows per transaction | commit ms per transaction | tasks' time in commit |");
    line("|---|---:|---:|---:|---:|---:|---:|---:|");
    r.eosPairs.forEach(
        (eosLabel, aloLabel) -> {
          List<Drain.Result> eos = r.drains.get(eosLabel);
          List<Drain.Result> alo = r.drains.get(aloLabel);
          if (eos == null || alo == null) {
            return;
          }
          double ratio =
              median(eos, Drain.Result::rowsPerSecond) / median(alo, Drain.Result::rowsPerSecond);
          line(
              "| %s | %s | %s | %.0f%% | %s | %s | %s | %s |"
                  .formatted(
                      eosLabel,
                      fmt(alo, Drain.Result::rowsPerSecond, "%.0f"),
                      fmt(eos, Drain.Result::rowsPerSecond, "%.0f"),
                      100 * ratio,
                      fmt(eos, x -> x.transactions().transactions(), "%.0f"),
                      fmt(eos, x -> x.transactions().rowsPerTransaction(), "%.0f"),
                      fmt(eos, x -> x.transactions().commitMsPerTransaction(), "%.2f"),
                      fmt(eos, x -> 100 * x.transactions().commitShare(), "%.0f%%")));
        });
    line("");
    line(
        "Both drains run on their own one-worker Connect cluster with its own broker (the worker"
            + " setting exactly.once.source.support=enabled applies to every connector of a"
            + " worker), interleaved run by run; exactly-once consumers read read_committed."
            + " Transactions: the transactions the tasks committed (Connect's source-task"
            + " metrics: records written / transaction-size-avg, per task; one per poll with"
            + " transaction.boundary=poll, i.e. one per claim batch). Commit time: the task"
            + " producers' txn-commit-time-ns-total during the drain, which includes waiting for"
            + " the transaction's records to be acknowledged; its share is of the drain's time"
            + " times tasks.max.");
    line("");
  }

  /** One configuration's runs as the cost table sees them. */
  private record CostRow(String label, List<Double> rowsPerSecond, List<RunCost.Result> costs) {}

  private List<CostRow> costRows() {
    List<CostRow> rows = new ArrayList<>();
    r.limits.forEach(
        (label, runs) ->
            rows.add(
                new CostRow(
                    label,
                    runs.stream().map(DatabaseLimit.Result::rowsPerSecond).toList(),
                    runs.stream().map(DatabaseLimit.Result::cost).toList())));
    r.minimal.forEach(
        (label, runs) ->
            rows.add(
                new CostRow(
                    label,
                    runs.stream().map(MinimalLoop.Result::rowsPerSecond).toList(),
                    runs.stream().map(MinimalLoop.Result::cost).toList())));
    r.drains.forEach(
        (label, runs) ->
            rows.add(
                new CostRow(
                    label,
                    runs.stream().map(Drain.Result::rowsPerSecond).toList(),
                    runs.stream().map(Drain.Result::cost).toList())));
    r.debezium.forEach(
        (label, runs) ->
            rows.add(
                new CostRow(
                    label,
                    runs.stream().map(DebeziumDrain.Result::rowsPerSecond).toList(),
                    runs.stream().map(DebeziumDrain.Result::cost).toList())));
    return rows;
  }

  private void cost() {
    List<CostRow> rows = costRows();
    if (rows.isEmpty()) {
      return;
    }
    line("## Cost per row (medians of the runs above)");
    line("");
    line(
        "| configuration | rows/s | WAL B/row insert | WAL B/row relay | FPI B/row insert / relay | WAL records/row insert / relay | PostgreSQL CPU s | JVM CPU s | CPU µs/row PostgreSQL / JVM | HOT updates | heap MiB | indexes MiB | total MiB | published log MiB | after VACUUM MiB |");
    line("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (CostRow row : rows) {
      List<RunCost.Result> c = row.costs();
      line(
          "| %s | %.0f | %.0f | %.0f | %.0f / %.0f | %.2f / %.2f | %.2f | %.2f | %.0f / %.0f | %s | %.1f | %.1f | %.1f | %s | %.1f |"
              .formatted(
                  row.label(),
                  Stats.summarize(row.rowsPerSecond()).median(),
                  med(c, RunCost.Result::insertWalPerRow),
                  med(c, RunCost.Result::relayWalPerRow),
                  med(c, RunCost.Result::insertFpiPerRow),
                  med(c, RunCost.Result::relayFpiPerRow),
                  med(c, RunCost.Result::insertRecordsPerRow),
                  med(c, RunCost.Result::relayRecordsPerRow),
                  med(c, RunCost.Result::pgCpuSeconds),
                  med(c, RunCost.Result::jvmCpuSeconds),
                  med(c, RunCost.Result::pgCpuMicrosPerRow),
                  med(c, RunCost.Result::jvmCpuMicrosPerRow),
                  hotCell(c),
                  med(c, x -> x.heapBytes() / 1048576.0),
                  med(c, x -> x.indexBytes() / 1048576.0),
                  med(c, x -> x.totalBytes() / 1048576.0),
                  c.stream().allMatch(RunCost.Result::hasPublishedLog)
                      ? "%.1f".formatted(med(c, x -> x.publishedLogBytes() / 1048576.0))
                      : "–",
                  med(c, x -> x.vacuumedBytes() / 1048576.0)));
    }
    line("");
    line(
        "WAL: `pg_wal_lsn_diff` of `pg_current_wal_insert_lsn()` around the backlog's INSERT"
            + " statements (insert) and from resume until the clock stopped (relay), divided by the"
            + " backlog's rows; FPI: full-page-image bytes and WAL records of the same ranges"
            + " (`pg_walinspect`). The WAL is the whole server's (autovacuum included); the relay"
            + " phase starts right after a CHECKPOINT, so each page's first change in it carries a"
            + " full-page image. CPU: the PostgreSQL server's process tree (/proc) and this JVM"
            + " (relay, broker, worker, consumer), over the relay phase. HOT: `n_tup_hot_upd` of"
            + " `n_tup_upd` in `pg_stat_user_tables`, the share rounded, of the updates, then the"
            + " HOT updates' count in brackets (medians); sizes: `pg_relation_size`, `pg_indexes_size`,"
            + " `pg_total_relation_size` of the relayed table after the run (not vacuumed), and"
            + " `pg_total_relation_size` of its published log (schema version 9: publishing"
            + " deletes the row from the table and writes an entry there; – where the table has"
            + " none). The naive relay marks rows PUBLISHED in the table itself, so its log stays"
            + " empty. After VACUUM: the table's and its log's `pg_total_relation_size` once a plain"
            + " VACUUM has run after the run (as autovacuum soon would): the steady-state"
            + " footprint, without the drain's dead row versions.");
    line("");
    List<String> lagged =
        rows.stream()
            .filter(row -> row.costs().stream().anyMatch(RunCost.Result::statisticsLagged))
            .map(CostRow::label)
            .toList();
    if (!lagged.isEmpty()) {
      line(
          ("† Statistics may lag: in a run of %s, sessions of the run's database were still open"
                  + " when the wait for them timed out, so the update and HOT counts may miss some"
                  + " of that run's (the top statements, read when the clock stopped, do not).")
              .formatted(String.join("; ", lagged)));
      line("");
    }
    line("### Top statements by total time (relay phase, last run of each configuration)");
    line("");
    for (CostRow row : rows) {
      RunCost.Result last = row.costs().get(row.costs().size() - 1);
      line("**" + row.label() + "**");
      line("");
      if (last.topStatements().isEmpty()) {
        line("(no SQL statement: the relay reads the WAL through its replication connection)");
        line("");
        continue;
      }
      line("| total ms | calls | mean ms | rows | statement |");
      line("|---:|---:|---:|---:|---|");
      for (RunCost.TopStatement t : last.topStatements()) {
        line(
            "| %.1f | %d | %.3f | %d | `%s` |"
                .formatted(
                    t.totalMs(), t.calls(), t.meanMs(), t.rows(), t.query().replace("|", "\\|")));
      }
      line("");
    }
    walByType(rows);
  }

  /**
   * Where the relay phase's WAL goes: per record type, per row, of each configuration's last run.
   */
  private void walByType(List<CostRow> rows) {
    line("### Relay-phase WAL by record type (last run of each configuration)");
    line("");
    line(
        "`pg_walinspect`'s `pg_get_wal_stats` per record type over the relay phase, divided by the"
            + " rows relayed: records per row, bytes per row without full-page images, and the"
            + " full-page images' bytes per row (each page's first change after a checkpoint carries"
            + " one; the benchmark checkpoints after inserting the backlog). The whole server's WAL:"
            + " other sessions' records are in it too.");
    line("");
    for (CostRow row : rows) {
      RunCost.Result last = row.costs().get(row.costs().size() - 1);
      if (last.relayWalByType().isEmpty()) {
        continue;
      }
      line("**" + row.label() + "**");
      line("");
      line("| record type | records/row | B/row | FPI B/row |");
      line("|---|---:|---:|---:|");
      for (RunCost.WalRecordType t : last.relayWalByType()) {
        if (t.totalBytes() < last.rows()) {
          continue; // under 1 B per row
        }
        line(
            "| %s | %.2f | %.0f | %.0f |"
                .formatted(
                    t.type(),
                    (double) t.count() / last.rows(),
                    (double) t.recordBytes() / last.rows(),
                    (double) t.fpiBytes() / last.rows()));
      }
      line("");
    }
  }

  /**
   * The HOT updates of a configuration's runs: the median share, rounded, of the median update
   * count ("100 % of 50000", the form scripts grep), then the median count of HOT updates, exact (a
   * share rounded to 100 % need not be all); † when a run's statistics may lag (the note under the
   * table).
   */
  static String hotCell(List<RunCost.Result> runs) {
    double hot = med(runs, RunCost.Result::hotRatio);
    if (Double.isNaN(hot)) {
      return "– (no update)";
    }
    return "%.0f %% of %.0f (%.0f HOT)%s"
        .formatted(
            100 * hot,
            med(runs, x -> (double) x.updates()),
            med(runs, x -> (double) x.hotUpdates()),
            runs.stream().anyMatch(RunCost.Result::statisticsLagged) ? " †" : "");
  }

  private static <T> double med(List<T> runs, ToDoubleFunction<T> f) {
    return Stats.summarize(runs.stream().map(x -> f.applyAsDouble(x)).toList()).median();
  }

  private void latency() {
    if (r.latency.isEmpty()) {
      return;
    }
    line(
        "## Commit-to-consumer latency (connector defaults%s, tasks.max=%d)"
            .formatted(
                r.options.latencyExactlyOnce ? ", exactly once, read committed" : "",
                r.options.latencyTasks));
    line("");
    line(
        "| rate | insert notification | measured rows | achieved rows/s | p50 ms | p99 ms | p99.9 ms | max ms | insert+commit p50 / p99 ms | PostgreSQL CPU µs/row | claims/row | load avg |");
    line("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    r.latency.forEach((rate, runs) -> latencyRow(rate, "on (default)", runs));
    r.latencyNotifyOff.forEach((rate, runs) -> latencyRow(rate, "off", runs));
    line("");
  }

  private void latencyRow(int rate, String notify, List<Latency.Result> runs) {
    line(
        "| %d/s | %s | %d | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s |"
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
                fmt(runs, Latency.Result::pgCpuMicrosPerRow, "%.0f"),
                fmt(runs, Latency.Result::claimsPerRow, "%.2f"),
                fmt(runs, Latency.Result::loadAverage, "%.2f")));
  }

  private void scale() {
    if (r.scale.isEmpty()) {
      return;
    }
    line(
        ("## Claim time vs rows ahead: retained PUBLISHED rows, or another instance key's backlog"
                + " (%d pending rows, claim of %d, %d claims each)")
            .formatted(r.options.scalePending, r.options.batchSize, r.options.scaleClaims));
    line("");
    line(
        "| rows ahead | table size MiB | ordered claim ms median (p10–p90) | unordered claim ms median (p10–p90) | WAL KiB per claim, ordered / unordered | backlog metrics query ms | load avg |");
    line("|---|---:|---:|---:|---:|---:|---:|");
    for (ClaimScale.Result s : r.scale) {
      line(
          "| %s | %.0f | %.2f (%.2f–%.2f) | %.2f (%.2f–%.2f) | %.1f / %.1f | %.1f | %.2f |"
              .formatted(
                  scaleRow(s),
                  s.tableBytes() / 1048576.0,
                  s.ordered().medianMs(),
                  s.ordered().p10Ms(),
                  s.ordered().p90Ms(),
                  s.unordered().medianMs(),
                  s.unordered().p10Ms(),
                  s.unordered().p90Ms(),
                  s.ordered().walBytes() / 1024.0,
                  s.unordered().walBytes() / 1024.0,
                  s.backlogMetricsMs(),
                  s.loadAverage()));
    }
    line("");
    line(
        "WAL per claim: the server's WAL insert position around each claim (its row locks and"
            + " leases, before the rollback), median.");
    line("");
  }

  private static String scaleRow(ClaimScale.Result s) {
    if (s.keys() > 1) {
      return "none; the pending rows in %d instance keys (a block each), claimed together"
          .formatted(s.keys());
    }
    return s.retained() == 0 ? "none" : s.retained() + " " + s.ahead().description;
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
    if (r.scale.size() >= 2) {
      ClaimScale.Result empty = r.scale.get(0);
      for (ClaimScale.Result full : r.scale.subList(1, r.scale.size())) {
        double ordered = full.ordered().medianMs() / empty.ordered().medianMs();
        double unordered = full.unordered().medianMs() / empty.unordered().medianMs();
        String against =
            full.keys() > 1
                ? "over %d instance keys %%.2f× one key's".formatted(full.keys())
                : "with %d %s ahead %%.2f× the empty table"
                    .formatted(full.retained(), full.ahead().description);
        lines.add(
            verdict(
                ordered <= 1.25,
                ("ordered claim " + against + " (target ≤ 1.25×)").formatted(ordered)));
        lines.add(
            verdict(
                unordered <= 1.25,
                ("unordered claim " + against + " (target ≤ 1.25×)").formatted(unordered)));
      }
    }
    r.eosPairs.forEach(
        (eosLabel, aloLabel) -> {
          Double eos = median(r.drains.get(eosLabel), Drain.Result::rowsPerSecond);
          Double alo = median(r.drains.get(aloLabel), Drain.Result::rowsPerSecond);
          if (eos != null && alo != null) {
            lines.add(
                verdict(
                    eos / alo >= 0.75,
                    "%s at %.0f%% of the same drain at least once (target ≥ 75%%): %.0f vs %.0f rows/s"
                        .formatted(eosLabel, 100 * eos / alo, eos, alo)));
          }
        });
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
