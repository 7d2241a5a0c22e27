package dev.outboxrelay.benchmark;

import dev.outboxrelay.benchmark.Options.Scenario;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs every scenario in one JVM against one embedded PostgreSQL server and one embedded Connect
 * cluster, then writes a Markdown report (and the raw per-run figures as CSV) under {@code
 * --output}. See docs/benchmarks.md.
 */
public final class BenchmarkMain {
  private BenchmarkMain() {}

  public static void main(String[] args) throws Exception {
    // Kafka's test jars bring log4j2 configurations of their own; this one must win.
    System.setProperty("log4j2.configurationFile", "classpath:log4j2-benchmark.xml");
    Options options;
    try {
      options = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      System.exit(2);
      return;
    }
    Path report = run(options);
    System.out.println("Report: " + report.toAbsolutePath());
    System.exit(0); // the kit leaves non-daemon threads behind
  }

  /** Runs the scenarios the options select; returns the path of the Markdown report. */
  static Path run(Options options) throws Exception {
    Results results = new Results(options);
    results.machine = Machine.describe();
    results.loadAtStart = Machine.loadAverage();
    String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
    Files.createDirectories(options.output);
    Path csv = options.output.resolve("runs-" + stamp + ".csv");
    results.csv = csv;
    Progress.log("machine " + results.machine);
    Path pluginPath = null;
    if (options.runs(Scenario.DEBEZIUM)) {
      pluginPath = options.debeziumPluginPath();
      DebeziumDrain.requirePlugin(pluginPath);
    }
    try (BenchPostgres pg =
            new BenchPostgres(
                options.sharedBuffers,
                options.walLevel,
                options.walCompression,
                options.output.resolve("postgres-" + stamp + ".log"));
        BenchConnect connect = new BenchConnect(pluginPath);
        // A second cluster, whose worker runs source tasks exactly once; null when not needed.
        BenchConnect eosConnect =
            options.runs(Scenario.DRAIN_EOS)
                    || (options.runs(Scenario.LATENCY) && options.latencyExactlyOnce)
                ? new BenchConnect(null, true)
                : null) {
      results.postgres = pg.settings();
      Progress.log("postgres " + results.postgres);
      Drain drain = new Drain(pg, connect, options);
      Drain eosDrain = eosConnect == null ? null : new Drain(pg, eosConnect, options);
      throughput(options, pg, connect, drain, eosDrain, results);
      if (options.runs(Scenario.LATENCY)) {
        Latency latency =
            new Latency(pg, options.latencyExactlyOnce ? eosConnect : connect, options);
        for (int run = 1; run <= options.runs; run++) {
          for (boolean notify : options.latencyNotifyOff ? List.of(true, false) : List.of(true)) {
            for (int rate : options.latencyRates) {
              Latency.Result r = latency.run(rate, notify);
              (notify ? results.latency : results.latencyNotifyOff)
                  .computeIfAbsent(rate, k -> new ArrayList<>())
                  .add(r);
              String label = rate + "/s" + (notify ? "" : " notify off");
              results.record("latency", label, run, r.toString());
              Progress.log(
                  ("latency %s run %d: p50 %.1f ms, p99 %.1f ms, max %.1f ms, achieved %.0f/s,"
                          + " PostgreSQL %.0f µs/row, %.2f claims/row, load %.2f")
                      .formatted(
                          label,
                          run,
                          r.p50Micros() / 1e3,
                          r.p99Micros() / 1e3,
                          r.maxMicros() / 1e3,
                          r.achievedRate(),
                          r.pgCpuMicrosPerRow(),
                          r.claimsPerRow(),
                          r.loadAverage()));
            }
          }
        }
      }
      if (options.runs(Scenario.SCALE)) {
        ClaimScale scale = new ClaimScale(pg, options);
        for (int retained : List.of(0, options.scaleRetained)) {
          ClaimScale.Result r = scale.run(retained, ClaimScale.Ahead.RETAINED_PUBLISHED);
          results.scale.add(r);
          results.record("scale", "retained=" + retained, 1, r.toString());
          Progress.log("scale " + r);
        }
        ClaimScale.Result shared =
            scale.run(options.scaleRetained, ClaimScale.Ahead.OTHER_KEY_PENDING);
        results.scale.add(shared);
        results.record("scale", "other-key-pending=" + options.scaleRetained, 1, shared.toString());
        Progress.log("scale " + shared);
        ClaimScale.Result overKeys = scale.runOverKeys(ClaimScale.KEYS);
        results.scale.add(overKeys);
        results.record("scale", "keys=" + ClaimScale.KEYS, 1, overKeys.toString());
        Progress.log("scale " + overKeys);
      }
      if (options.runs(Scenario.MEMORY)) {
        MemoryRun.Result r = new MemoryRun(drain, options).run();
        results.memory = r;
        results.record("memory", "rows=" + r.rows(), 1, r.toString());
        Progress.log("memory " + r);
      }
    }
    results.loadAtEnd = Machine.loadAverage();
    Path report = options.output.resolve("report-" + stamp + ".md");
    Files.writeString(report, new ReportWriter(results).markdown());
    System.out.println(Files.readString(report));
    return report;
  }

  /**
   * Whether the uncounted relay drain runs first: before relay drains, and before the JDBC loops
   * (database limit, minimal loop), whose first counted run would otherwise be the JVM's first use
   * of the driver, the pool and the relay's store, JIT-compiled by nothing yet.
   */
  static boolean warmsUpTheRelay(Options options) {
    return !throughputConfigs(options, new LinkedHashMap<>()).isEmpty()
        || options.runs(Scenario.DATABASE)
        || options.runs(Scenario.MINIMAL);
  }

  /** Drains, database limit and naive relay, interleaved run by run so drift hits all alike. */
  private static void throughput(
      Options options,
      BenchPostgres pg,
      BenchConnect connect,
      Drain drain,
      Drain eosDrain,
      Results results)
      throws Exception {
    List<Drain.Config> configs = throughputConfigs(options, results.eosPairs);
    DatabaseLimit limit = new DatabaseLimit(pg, options);
    MinimalLoop minimal = new MinimalLoop(pg, options);
    DebeziumDrain debezium =
        options.runs(Scenario.DEBEZIUM) ? new DebeziumDrain(pg, connect, options) : null;
    if (configs.isEmpty()
        && !options.runs(Scenario.DATABASE)
        && !options.runs(Scenario.MINIMAL)
        && debezium == null) {
      return;
    }
    // JIT, connection pools and the broker warm up on a run that is not counted.
    if (warmsUpTheRelay(options)) {
      Drain.Result w = drain.run(warmUpConfig(options));
      Progress.log("warm-up drain, not counted: %.0f rows/s".formatted(w.rowsPerSecond()));
    }
    if (eosDrain != null) {
      // The exactly-once cluster's broker, worker and transaction coordinator warm up as well.
      Drain.Config warmUp = eosDrainConfig(options, 2);
      Drain.Result w =
          eosDrain.run(
              new Drain.Config(
                  "warm-up exactly-once",
                  false,
                  warmUp.tasks(),
                  true,
                  options.batchSize,
                  warmUp.overrides(),
                  Math.min(options.rows, 20_000)));
      Progress.log(
          "warm-up exactly-once drain, not counted: %.0f rows/s".formatted(w.rowsPerSecond()));
    }
    if (debezium != null && !options.debeziumPayloads.isEmpty()) {
      // The peer gets its uncounted warm-up too (its classes load, its code is compiled).
      DebeziumDrain.Result w =
          debezium.run(options.debeziumPayloads.get(0), Math.min(options.rows, 20_000));
      Progress.log("Debezium warm-up drain, not counted: %.0f rows/s".formatted(w.rowsPerSecond()));
    }
    // One round runs every configuration once. Round r starts at configuration r mod n (the order
    // kept otherwise), so that no configuration is always the first after the warm-up, or always
    // the one after a given other.
    List<RoundStep> round = new ArrayList<>();
    if (options.runs(Scenario.DATABASE)) {
      for (Results.LimitConfig lc : Results.LIMIT_CONFIGS) {
        round.add(
            run -> {
              DatabaseLimit.Result r =
                  limit.run(options.rows, options.batchSize, lc.ordered(), lc.threads());
              results.limits.computeIfAbsent(lc.label(), k -> new ArrayList<>()).add(r);
              results.record("database", lc.label(), run, r.toString());
              Progress.log(
                  "%s run %d: %.0f rows/s (%.1f s), %s, load %.2f"
                      .formatted(
                          lc.label(),
                          run,
                          r.rowsPerSecond(),
                          r.seconds(),
                          brief(r.cost()),
                          r.load()));
            });
      }
    }
    if (options.runs(Scenario.MINIMAL)) {
      round.add(
          run -> {
            String label = MinimalLoop.label(options.minimalBatchSize);
            MinimalLoop.Result r = minimal.run(options.rows, options.minimalBatchSize);
            results.minimal.computeIfAbsent(label, k -> new ArrayList<>()).add(r);
            results.record("minimal", label, run, r.toString());
            Progress.log(
                "%s run %d: %.0f rows/s (%.1f s), %s, load %.2f"
                    .formatted(
                        label, run, r.rowsPerSecond(), r.seconds(), brief(r.cost()), r.load()));
          });
    }
    for (Drain.Config config : configs) {
      round.add(
          run -> {
            Drain.Result r = (Drain.exactlyOnce(config) ? eosDrain : drain).run(config);
            results.drains.computeIfAbsent(config.label(), k -> new ArrayList<>()).add(r);
            results.drainConfigs.put(config.label(), config);
            results.record("drain", config.label(), run, r.toString());
            Progress.log(
                "%s run %d: %.0f rows/s (%.1f s; Kafka %.1f s), duplicates %d, order violations %d, %s, load %.2f"
                        .formatted(
                            config.label(),
                            run,
                            r.rowsPerSecond(),
                            r.seconds(),
                            r.kafkaSeconds(),
                            r.duplicates(),
                            r.orderViolations(),
                            r.finalCounts(),
                            r.loadAverage())
                    + ", "
                    + brief(r.cost())
                    + (r.exactlyOnce() ? ", " + r.transactions() : ""));
          });
    }
    if (debezium != null) {
      for (Options.DebeziumPayload payload : options.debeziumPayloads) {
        round.add(
            run -> {
              String label = debezium.label(payload);
              DebeziumDrain.Result r = debezium.run(payload, options.rows);
              results.debezium.computeIfAbsent(label, k -> new ArrayList<>()).add(r);
              results.record("debezium", label, run, r.toString());
              Progress.log(
                  "%s run %d: %.0f rows/s (%.1f s), duplicates %d, order violations %d, %s, load %.2f"
                      .formatted(
                          label,
                          run,
                          r.rowsPerSecond(),
                          r.seconds(),
                          r.duplicates(),
                          r.orderViolations(),
                          brief(r.cost()),
                          r.loadAverage()));
            });
      }
    }
    for (int run = 1; run <= options.runs; run++) {
      for (RoundStep step : rotated(round, run - 1)) {
        step.run(run);
      }
    }
  }

  /** One configuration's run within a round of the throughput scenarios. */
  @FunctionalInterface
  private interface RoundStep {
    void run(int run) throws Exception;
  }

  /** {@code list} starting at element {@code round mod size}, wrapping around. */
  static <T> List<T> rotated(List<T> list, int round) {
    if (list.isEmpty()) {
      return list;
    }
    int start = Math.floorMod(round, list.size());
    List<T> out = new ArrayList<>(list.subList(start, list.size()));
    out.addAll(list.subList(0, start));
    return out;
  }

  /**
   * The relay drains of the throughput scenarios the options select (the naive relay's last), each
   * once: a configuration two scenarios share (a variant batch size equal to {@code --batch-size}
   * beside the drain matrix's tasks.max=2) runs once per round, not twice under one label.
   *
   * @param eosPairs gets each exactly-once drain's label and its at-least-once twin's
   */
  static List<Drain.Config> throughputConfigs(Options options, Map<String, String> eosPairs) {
    Map<String, Drain.Config> configs = new LinkedHashMap<>();
    if (options.runs(Scenario.DRAIN)) {
      for (int tasks : options.tasks) {
        for (boolean ordered : List.of(true, false)) {
          addOnce(configs, drainConfig(options, tasks, ordered, options.batchSize, Map.of()));
        }
      }
    }
    if (options.runs(Scenario.DRAIN_EOS)) {
      // Each exactly-once drain beside the same drain at least once (shared with the drain
      // matrix when that runs it too).
      for (int tasks : options.eosTasks) {
        Drain.Config atLeastOnce = drainConfig(options, tasks, true, options.batchSize, Map.of());
        Drain.Config exactlyOnce = eosDrainConfig(options, tasks);
        addOnce(configs, atLeastOnce);
        addOnce(configs, exactlyOnce);
        eosPairs.put(exactlyOnce.label(), atLeastOnce.label());
      }
    }
    if (options.runs(Scenario.VARIANTS)) {
      for (int batch : options.variantBatchSizes) {
        addOnce(configs, drainConfig(options, 2, true, batch, Map.of()));
      }
      addOnce(
          configs, drainConfig(options, 2, true, options.batchSize, Drain.throughputOverrides()));
      int largest = options.variantBatchSizes.stream().max(Integer::compare).orElse(0);
      if (largest > options.batchSize) {
        addOnce(configs, drainConfig(options, 2, true, largest, Drain.throughputOverrides()));
      }
    }
    if (options.runs(Scenario.NAIVE)) {
      addOnce(
          configs,
          new Drain.Config(
              Results.NAIVE, true, 1, true, options.batchSize, Map.of(), options.naiveRows));
    }
    return List.copyOf(configs.values());
  }

  private static void addOnce(Map<String, Drain.Config> configs, Drain.Config config) {
    Drain.Config earlier = configs.putIfAbsent(config.label(), config);
    if (earlier != null && !earlier.equals(config)) {
      throw new IllegalStateException("two configurations labelled " + config.label());
    }
  }

  /** The uncounted warm-up drain: the defaults with tasks.max=2 and the --connector-settings. */
  static Drain.Config warmUpConfig(Options options) {
    return new Drain.Config(
        "warm-up",
        false,
        2,
        true,
        options.batchSize,
        withSettings(Map.of(), options),
        Math.min(options.rows, 20_000));
  }

  /** The cost figures of a run, for its progress line. */
  static String brief(RunCost.Result c) {
    return "WAL %.0f B/row insert, %.0f B/row relay, PostgreSQL CPU %.2f s, JVM CPU %.2f s, HOT %s"
        .formatted(
            c.insertWalPerRow(),
            c.relayWalPerRow(),
            c.pgCpuSeconds(),
            c.jvmCpuSeconds(),
            Double.isNaN(c.hotRatio())
                ? "–"
                : "%.0f%% (%d of %d)%s"
                    .formatted(
                        100 * c.hotRatio(),
                        c.hotUpdates(),
                        c.updates(),
                        c.statisticsLagged() ? ", statistics may lag" : ""));
  }

  /** The defaults drain with the connector in exactly-once mode (on the exactly-once worker). */
  static Drain.Config eosDrainConfig(Options options, int tasks) {
    String label =
        "outbox-relay exactly-once, tasks.max=%d, ordering on, claim.batch.size=%d"
            .formatted(tasks, options.batchSize);
    return new Drain.Config(
        label + settingsLabel(options),
        false,
        tasks,
        true,
        options.batchSize,
        withSettings(Drain.exactlyOnceSettings(), options),
        options.rows);
  }

  static Drain.Config drainConfig(
      Options options, int tasks, boolean ordered, int batch, Map<String, String> overrides) {
    String label =
        "outbox-relay, tasks.max=%d, ordering %s, claim.batch.size=%d%s"
            .formatted(
                tasks,
                ordered ? "on" : "off",
                batch,
                overrides.isEmpty() ? "" : ", producer overrides");
    return new Drain.Config(
        label + settingsLabel(options),
        false,
        tasks,
        ordered,
        batch,
        withSettings(overrides, options),
        options.rows);
  }

  /** {@code overrides} and the run's {@code --connector-setting}s, which win. */
  private static Map<String, String> withSettings(Map<String, String> overrides, Options options) {
    Map<String, String> all = new LinkedHashMap<>(overrides);
    all.putAll(options.connectorSettings);
    return all;
  }

  private static String settingsLabel(Options options) {
    StringBuilder label = new StringBuilder();
    options.connectorSettings.forEach((k, v) -> label.append(", ").append(k).append('=').append(v));
    return label.toString();
  }

  /** Progress lines on stdout, so a long run shows where it is. */
  static final class Progress {
    private Progress() {}

    static void log(String line) {
      System.out.printf(
          "[%s] %s%n", LocalDateTime.now().format(DateTimeFormatter.ofPattern("HH:mm:ss")), line);
      System.out.flush();
    }
  }

  static void appendCsv(Path csv, String line) {
    try {
      Files.writeString(
          csv,
          line + "\n",
          java.nio.file.StandardOpenOption.CREATE,
          java.nio.file.StandardOpenOption.APPEND);
    } catch (IOException e) {
      Progress.log("could not write " + csv + ": " + e.getMessage());
    }
  }
}
