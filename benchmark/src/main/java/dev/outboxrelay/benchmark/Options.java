package dev.outboxrelay.benchmark;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Command-line flags of the benchmark, each {@code --name value}. Defaults are the figures quoted
 * in docs/benchmarks.md; {@code --quick} shrinks every size for a fast check of the harness.
 */
final class Options {
  enum Scenario {
    DRAIN,
    /**
     * {@code drain-eos}: the defaults drain with the connector in exactly-once mode on a worker
     * with exactly-once source support, beside the same drain at least once.
     */
    DRAIN_EOS,
    VARIANTS,
    DATABASE,
    NAIVE,
    LATENCY,
    SCALE,
    MEMORY,
    MINIMAL,
    DEBEZIUM
  }

  /** How the Debezium peer hands the outbox payload to Kafka. */
  enum DebeziumPayload {
    /** The payload column's JSON text as a string value (StringConverter). */
    STRING,
    /** {@code table.expand.json.payload=true}: a structured value (JsonConverter, no schema). */
    EXPANDED
  }

  /** The connector's default {@code exactly.once.buckets}: the most tasks that mode runs. */
  static final int EXACTLY_ONCE_BUCKETS = 16;

  Set<Scenario> scenarios = new LinkedHashSet<>(Arrays.asList(Scenario.values()));
  int runs = 3;
  int rows = 100_000;
  int aggregates = 1_000;
  int partitions = 6;
  int payloadBytes = 300;
  int batchSize = 500;
  List<Integer> tasks = List.of(1, 2, 4);
  List<Integer> eosTasks = List.of(2);
  List<Integer> variantBatchSizes = List.of(100, 2000);
  int naiveRows = 5_000;
  List<Integer> latencyRates = List.of(500, 5_000);
  Duration latencyDuration = Duration.ofSeconds(60);
  Duration latencyWarmup = Duration.ofSeconds(5);
  int latencyTasks = 2;
  boolean latencyNotifyOff = true;

  /** The latency runs in exactly-once mode, on a worker with exactly-once source support. */
  boolean latencyExactlyOnce;

  int scaleRetained = 1_000_000;
  int scalePending = 10_000;
  int scaleClaims = 200;
  int memoryRows = 1_000_000;
  Duration memorySampleInterval = Duration.ofSeconds(5);
  Duration runTimeout = Duration.ofMinutes(20);
  String sharedBuffers = "512MB";
  String walCompression = "off";
  String walLevel = "logical";
  int minimalBatchSize = 1_000;
  List<DebeziumPayload> debeziumPayloads =
      List.of(DebeziumPayload.STRING, DebeziumPayload.EXPANDED);

  /** Connector settings added to every drain of the relay ({@code --connector-setting}). */
  Map<String, String> connectorSettings = new LinkedHashMap<>();

  /** Folder on the worker's plugin.path holding Debezium's plugin; null: beside the jar. */
  Path debeziumPluginPath;

  Path output = Path.of("benchmark", "target", "benchmark-results");

  static Options parse(String... args) {
    Options o = new Options();
    List<String> rest = new ArrayList<>(Arrays.asList(args));
    if (rest.remove("--quick")) {
      o.quick();
    }
    for (int i = 0; i < rest.size(); i++) {
      String flag = rest.get(i);
      if (flag.equals("--help") || flag.equals("-h")) {
        throw new IllegalArgumentException(usage());
      }
      if (i + 1 >= rest.size()) {
        throw new IllegalArgumentException("missing value for " + flag + "\n" + usage());
      }
      String v = rest.get(++i);
      switch (flag) {
        case "--scenarios" -> o.scenarios = scenarios(v);
        case "--runs" -> o.runs = positive(flag, v);
        case "--rows" -> o.rows = positive(flag, v);
        case "--aggregates" -> o.aggregates = positive(flag, v);
        case "--partitions" -> o.partitions = positive(flag, v);
        case "--payload-bytes" -> o.payloadBytes = positive(flag, v);
        case "--batch-size" -> o.batchSize = positive(flag, v);
        case "--tasks" -> o.tasks = ints(flag, v);
        case "--eos-tasks" -> o.eosTasks = ints(flag, v);
        case "--variant-batch-sizes" -> o.variantBatchSizes = ints(flag, v);
        case "--naive-rows" -> o.naiveRows = positive(flag, v);
        case "--latency-rates" -> o.latencyRates = ints(flag, v);
        case "--latency-seconds" -> o.latencyDuration = Duration.ofSeconds(positive(flag, v));
        case "--latency-warmup-seconds" ->
            o.latencyWarmup = Duration.ofSeconds(Integer.parseInt(v));
        case "--latency-tasks" -> o.latencyTasks = positive(flag, v);
        case "--latency-notify-off" -> o.latencyNotifyOff = Boolean.parseBoolean(v);
        case "--latency-exactly-once" -> o.latencyExactlyOnce = Boolean.parseBoolean(v);
        case "--scale-retained" -> o.scaleRetained = positive(flag, v);
        case "--scale-pending" -> o.scalePending = positive(flag, v);
        case "--scale-claims" -> o.scaleClaims = positive(flag, v);
        case "--memory-rows" -> o.memoryRows = positive(flag, v);
        case "--memory-sample-seconds" ->
            o.memorySampleInterval = Duration.ofSeconds(positive(flag, v));
        case "--run-timeout-seconds" -> o.runTimeout = Duration.ofSeconds(positive(flag, v));
        case "--shared-buffers" -> o.sharedBuffers = v;
        case "--wal-level" -> o.walLevel = walLevel(v);
        case "--wal-compression" -> o.walCompression = walCompression(v);
        case "--minimal-batch-size" -> o.minimalBatchSize = positive(flag, v);
        case "--debezium-payloads" -> o.debeziumPayloads = debeziumPayloads(v);
        case "--debezium-plugin-path" -> o.debeziumPluginPath = Path.of(v);
        case "--connector-setting" -> {
          int eq = v.indexOf('=');
          if (eq < 1) {
            throw new IllegalArgumentException(flag + " wants KEY=VALUE, got " + v);
          }
          o.connectorSettings.put(v.substring(0, eq), v.substring(eq + 1));
        }
        case "--output" -> o.output = Path.of(v);
        default -> throw new IllegalArgumentException("unknown flag " + flag + "\n" + usage());
      }
    }
    if (o.eosTasks.stream().anyMatch(t -> t > EXACTLY_ONCE_BUCKETS)) {
      throw new IllegalArgumentException(
          "--eos-tasks: an exactly-once connector runs at most exactly.once.buckets ("
              + EXACTLY_ONCE_BUCKETS
              + ") tasks");
    }
    if (o.runs(Scenario.DEBEZIUM) && !o.walLevel.equals("logical")) {
      throw new IllegalArgumentException("--scenarios debezium needs --wal-level logical");
    }
    ConnectorSettings.check(o);
    return o;
  }

  /**
   * The folder given, or {@code debezium-plugin} beside the benchmark's jar (or beside {@code
   * target/classes} in a build): the build unpacks Debezium's plugin archive there.
   */
  Path debeziumPluginPath() {
    if (debeziumPluginPath != null) {
      return debeziumPluginPath;
    }
    try {
      Path code =
          Path.of(Options.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      return code.getParent().resolve("debezium-plugin");
    } catch (java.net.URISyntaxException | RuntimeException e) {
      return Path.of("benchmark", "target", "debezium-plugin");
    }
  }

  /** Small sizes: checks that every scenario works, in a minute or two. No figure to quote. */
  void quick() {
    runs = 1;
    rows = 3_000;
    tasks = List.of(1, 2);
    variantBatchSizes = List.of(100);
    naiveRows = 300;
    latencyRates = List.of(200);
    latencyDuration = Duration.ofSeconds(5);
    latencyWarmup = Duration.ofSeconds(1);
    scaleRetained = 20_000;
    scalePending = 2_000;
    scaleClaims = 20;
    memoryRows = 10_000;
    memorySampleInterval = Duration.ofSeconds(1);
    runTimeout = Duration.ofMinutes(3);
  }

  boolean runs(Scenario s) {
    return scenarios.contains(s);
  }

  static String usage() {
    return """
        usage: java -jar benchmark/target/outbox-relay-benchmark.jar [--quick] [flags]
          --scenarios LIST           drain,drain-eos,variants,database,naive,latency,scale,
                                     memory,minimal,debezium (default all)
          --runs N                   runs per configuration (3)
          --rows N                   backlog rows per drain run (100000)
          --tasks LIST               tasks.max values of the drain matrix (1,2,4)
          --eos-tasks LIST           tasks.max values of drain-eos: each runs exactly once and
                                     at least once (2)
          --batch-size N             claim.batch.size of the defaults (500)
          --variant-batch-sizes LIST other claim.batch.size values to compare (100,2000)
          --naive-rows N             backlog of the naive relay (5000: it is slow)
          --latency-rates LIST       rows per second (500,5000)
          --latency-seconds N        measured duration per rate (60)
          --latency-warmup-seconds N unmeasured lead-in (5)
          --latency-tasks N          tasks.max of the latency runs (2)
          --latency-notify-off BOOL  also run each rate with the insert notification off (true)
          --latency-exactly-once BOOL the latency runs in exactly-once mode, read committed
                                     (false)
          --scale-retained N         PUBLISHED rows kept in the table (1000000)
          --scale-pending N          pending rows the claims run against (10000)
          --scale-claims N           timed claims per table (200)
          --memory-rows N            backlog of the memory run (1000000)
          --minimal-batch-size N     rows per claim of the minimal loop (1000)
          --debezium-payloads LIST   string,expanded: the Debezium peer's payload variants (both)
          --debezium-plugin-path DIR Connect plugin.path holding Debezium's plugin
                                     (target/debezium-plugin beside the jar)
          --shared-buffers SIZE      PostgreSQL shared_buffers (512MB)
          --wal-compression METHOD   PostgreSQL wal_compression: off, pglz, lz4 or zstd (off)
          --wal-level LEVEL          PostgreSQL wal_level, every scenario alike (logical;
                                     debezium needs it)
          --connector-setting K=V    a connector setting for every throughput drain of the
                                     relay, its warm-up included, not the memory and
                                     latency runs (repeatable; checked against the
                                     connector's and Connect's settings before any run; e.g.
                                     lease.duration.ms=4000 with lease.renewal.interval.ms=1000)
          --output DIR               where results go (benchmark/target/benchmark-results)
        """;
  }

  private static Set<Scenario> scenarios(String v) {
    Set<Scenario> s = new LinkedHashSet<>();
    for (String name : v.split(",")) {
      s.add(Scenario.valueOf(name.trim().toUpperCase().replace('-', '_')));
    }
    return s;
  }

  private static String walCompression(String v) {
    if (!List.of("off", "pglz", "lz4", "zstd").contains(v)) {
      throw new IllegalArgumentException("--wal-compression must be off, pglz, lz4 or zstd");
    }
    return v;
  }

  private static String walLevel(String v) {
    if (!v.equals("logical") && !v.equals("replica")) {
      throw new IllegalArgumentException("--wal-level must be logical or replica");
    }
    return v;
  }

  private static List<DebeziumPayload> debeziumPayloads(String v) {
    List<DebeziumPayload> values = new ArrayList<>();
    for (String part : v.split(",")) {
      values.add(
          once("--debezium-payloads", values, DebeziumPayload.valueOf(part.trim().toUpperCase())));
    }
    return List.copyOf(values);
  }

  private static List<Integer> ints(String flag, String v) {
    List<Integer> values = new ArrayList<>();
    for (String part : v.split(",")) {
      values.add(once(flag, values, positive(flag, part.trim())));
    }
    return List.copyOf(values);
  }

  /**
   * {@code value}, refused if {@code earlier} has it: the runs of a value listed twice would be
   * merged under one label (twice the runs, the medians of both).
   */
  private static <T> T once(String flag, List<T> earlier, T value) {
    if (earlier.contains(value)) {
      throw new IllegalArgumentException(
          flag + " lists " + value.toString().toLowerCase() + " twice");
    }
    return value;
  }

  private static int positive(String flag, String v) {
    int n = Integer.parseInt(v.replace("_", ""));
    if (n <= 0) {
      throw new IllegalArgumentException(flag + " must be positive");
    }
    return n;
  }
}
