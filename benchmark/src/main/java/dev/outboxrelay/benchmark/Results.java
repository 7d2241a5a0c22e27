package dev.outboxrelay.benchmark;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Everything one benchmark run measured, in the order it was measured. */
final class Results {
  static final String NAIVE = "naive relay (claim row by row, synchronous ack in commitRecord)";

  /** The JDBC loops; the first is the "database limit" the targets compare with. */
  record LimitConfig(String label, boolean ordered, int threads) {}

  static final List<LimitConfig> LIMIT_CONFIGS =
      List.of(
          new LimitConfig("database limit: JDBC loop, unordered claim, 1 thread", false, 1),
          new LimitConfig("JDBC loop, ordered claim, 1 thread", true, 1),
          new LimitConfig("JDBC loop, unordered claim, 2 threads", false, 2));

  final Options options;
  Map<String, String> machine = Map.of();
  Map<String, String> postgres = Map.of();
  double loadAtStart;
  double loadAtEnd;
  Path csv;
  final Map<String, List<DatabaseLimit.Result>> limits = new LinkedHashMap<>();
  final Map<String, List<Drain.Result>> drains = new LinkedHashMap<>();
  final Map<String, Drain.Config> drainConfigs = new LinkedHashMap<>();

  /** Each exactly-once drain's label and the label of the same drain at least once. */
  final Map<String, String> eosPairs = new LinkedHashMap<>();

  final Map<String, List<MinimalLoop.Result>> minimal = new LinkedHashMap<>();
  final Map<String, List<DebeziumDrain.Result>> debezium = new LinkedHashMap<>();
  final Map<Integer, List<Latency.Result>> latency = new TreeMap<>();

  /** The same rates with the insert trigger's notification switched off. */
  final Map<Integer, List<Latency.Result>> latencyNotifyOff = new TreeMap<>();

  final List<ClaimScale.Result> scale = new ArrayList<>();
  MemoryRun.Result memory;

  Results(Options options) {
    this.options = options;
  }

  void record(String scenario, String config, int run, String figures) {
    if (csv != null) {
      BenchmarkMain.appendCsv(
          csv, "%s;%s;%d;%s".formatted(scenario, config.replace(';', ','), run, figures));
    }
  }

  /** Label of the drain the targets are about: the connector's defaults with tasks.max=2. */
  String defaultDrainLabel() {
    return BenchmarkMain.drainConfig(options, 2, true, options.batchSize, Map.of()).label();
  }
}
