package dev.outboxrelay.benchmark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class OptionsTest {
  @Test
  void defaultsAreTheDocumentedWorkload() {
    Options o = Options.parse();
    assertEquals(100_000, o.rows);
    assertEquals(3, o.runs);
    assertEquals(List.of(1, 2, 4), o.tasks);
    assertEquals(List.of(500, 5_000), o.latencyRates);
    assertEquals(Duration.ofSeconds(60), o.latencyDuration);
    assertEquals(1_000_000, o.scaleRetained);
    assertEquals(1_000_000, o.memoryRows);
    assertEquals(Set.of(Options.Scenario.values()), o.scenarios);
  }

  @Test
  void flagsOverrideDefaults() {
    Options o =
        Options.parse(
            "--rows",
            "1_000",
            "--tasks",
            "2,4",
            "--scenarios",
            "latency,scale",
            "--latency-seconds",
            "10");
    assertEquals(1_000, o.rows);
    assertEquals(List.of(2, 4), o.tasks);
    assertEquals(Set.of(Options.Scenario.LATENCY, Options.Scenario.SCALE), o.scenarios);
    assertEquals(Duration.ofSeconds(10), o.latencyDuration);
  }

  /**
   * Relay drains get the uncounted warm-up drain, and so do the JDBC loops alone: none of their
   * runs is cold. A latency run alone has its own warm-up.
   */
  @Test
  void drainsAndTheLoopsAreWarmedUpFirst() {
    assertTrue(BenchmarkMain.warmsUpTheRelay(Options.parse("--scenarios", "database")));
    assertTrue(BenchmarkMain.warmsUpTheRelay(Options.parse("--scenarios", "minimal")));
    assertFalse(BenchmarkMain.warmsUpTheRelay(Options.parse("--scenarios", "latency")));
    assertTrue(BenchmarkMain.warmsUpTheRelay(Options.parse("--scenarios", "drain")));
    assertTrue(BenchmarkMain.warmsUpTheRelay(Options.parse("--scenarios", "drain-eos")));
  }

  @Test
  void latencyRunsAtLeastOnceUnlessAskedForExactlyOnce() {
    assertFalse(Options.parse().latencyExactlyOnce);
    assertTrue(Options.parse("--latency-exactly-once", "true").latencyExactlyOnce);
  }

  @Test
  void theExactlyOnceDrainIsAScenarioWithItsOwnTasks() {
    Options o = Options.parse("--scenarios", "drain,drain-eos", "--eos-tasks", "1,4");
    assertEquals(Set.of(Options.Scenario.DRAIN, Options.Scenario.DRAIN_EOS), o.scenarios);
    assertEquals(List.of(1, 4), o.eosTasks);
    assertEquals(List.of(2), Options.parse().eosTasks, "the defaults drain's tasks.max");
    assertThrows(IllegalArgumentException.class, () -> Options.parse("--eos-tasks", "17"));
    Drain.Config eos = BenchmarkMain.eosDrainConfig(o, 4);
    assertTrue(Drain.exactlyOnce(eos));
    assertEquals("required", eos.overrides().get("exactly.once.support"));
    assertEquals(4, eos.tasks());
    Drain.Config atLeastOnce = BenchmarkMain.drainConfig(o, 4, true, o.batchSize, Map.of());
    assertFalse(Drain.exactlyOnce(atLeastOnce));
    assertEquals(
        Drain.connectorConfig(atLeastOnce, "jdbc:postgresql://x/y").size() + 2,
        Drain.connectorConfig(eos, "jdbc:postgresql://x/y").size(),
        "the same drain with the two exactly-once settings");
  }

  @Test
  void connectorSettingsReachEveryRelayDrainAndItsLabel() {
    Options o =
        Options.parse(
            "--connector-setting",
            "lease.duration.ms=4000",
            "--connector-setting",
            "lease.renewal.interval.ms=1000");
    Drain.Config drain = BenchmarkMain.drainConfig(o, 1, true, 500, Drain.throughputOverrides());
    Map<String, String> config = Drain.connectorConfig(drain, "jdbc:postgresql://x/y");
    assertEquals("4000", config.get("lease.duration.ms"));
    assertEquals("1000", config.get("lease.renewal.interval.ms"));
    assertEquals("true", config.get("producer.override.enable.idempotence"), "overrides kept");
    assertTrue(drain.label().endsWith(", lease.duration.ms=4000, lease.renewal.interval.ms=1000"));
    assertEquals(
        "4000",
        Drain.connectorConfig(BenchmarkMain.eosDrainConfig(o, 2), "jdbc:postgresql://x/y")
            .get("lease.duration.ms"));
    assertThrows(
        IllegalArgumentException.class, () -> Options.parse("--connector-setting", "novalue"));
  }

  @Test
  void connectorSettingsAreCheckedBeforeAnyRun() {
    // lease.duration.ms=4000 alone: the default lease.renewal.interval.ms (20 s) is not below it.
    IllegalArgumentException lease =
        assertThrows(
            IllegalArgumentException.class,
            () -> Options.parse("--connector-setting", "lease.duration.ms=4000"));
    assertTrue(lease.getMessage().contains("lease.renewal.interval.ms"), lease.getMessage());
    IllegalArgumentException misspelt =
        assertThrows(
            IllegalArgumentException.class,
            () -> Options.parse("--connector-setting", "lease.duraton.ms=4000"));
    assertTrue(misspelt.getMessage().contains("lease.duraton.ms"), misspelt.getMessage());
    // Connect's own keys and prefixes pass, and so do values valid in every drain of the run.
    Options o =
        Options.parse(
            "--scenarios",
            "drain,drain-eos,variants",
            "--connector-setting",
            "producer.override.linger.ms=5",
            "--connector-setting",
            "topic.creation.default.partitions=6",
            "--connector-setting",
            "poll.interval.ms=100");
    assertEquals("100", BenchmarkMain.warmUpConfig(o).overrides().get("poll.interval.ms"));
    assertEquals("5", BenchmarkMain.warmUpConfig(o).overrides().get("producer.override.linger.ms"));
    // Each drain the run makes is checked: errors.tolerance=all is refused exactly once only.
    assertEquals(
        "all",
        Options.parse("--scenarios", "drain", "--connector-setting", "errors.tolerance=all")
            .connectorSettings
            .get("errors.tolerance"));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            Options.parse(
                "--scenarios", "drain,drain-eos", "--connector-setting", "errors.tolerance=all"));
  }

  @Test
  void aConfigurationRunsOnceUnderItsLabel() {
    assertThrows(IllegalArgumentException.class, () -> Options.parse("--tasks", "2,2"));
    assertThrows(IllegalArgumentException.class, () -> Options.parse("--latency-rates", "5,5"));
    assertThrows(
        IllegalArgumentException.class,
        () -> Options.parse("--debezium-payloads", "string,string"));
    // A variant batch size equal to --batch-size is the drain matrix's tasks.max=2 drain.
    Options o = Options.parse("--scenarios", "drain,variants", "--variant-batch-sizes", "100,500");
    List<Drain.Config> configs = BenchmarkMain.throughputConfigs(o, new java.util.HashMap<>());
    List<String> labels = configs.stream().map(Drain.Config::label).toList();
    assertEquals(Set.copyOf(labels).size(), labels.size(), labels.toString());
    assertEquals(3 * 2 + 1 + 1, labels.size(), labels.toString());
  }

  @Test
  void eachRoundStartsOneConfigurationLater() {
    List<String> configs = List.of("a", "b", "c");
    assertEquals(List.of("a", "b", "c"), BenchmarkMain.rotated(configs, 0));
    assertEquals(List.of("b", "c", "a"), BenchmarkMain.rotated(configs, 1));
    assertEquals(List.of("c", "a", "b"), BenchmarkMain.rotated(configs, 2));
    assertEquals(List.of("a", "b", "c"), BenchmarkMain.rotated(configs, 3));
    assertEquals(List.of(), BenchmarkMain.rotated(List.of(), 1));
  }

  @Test
  void rejectsUnknownFlagsAndNonPositiveSizes() {
    assertThrows(IllegalArgumentException.class, () -> Options.parse("--nope", "1"));
    assertThrows(IllegalArgumentException.class, () -> Options.parse("--rows", "0"));
    assertThrows(IllegalArgumentException.class, () -> Options.parse("--rows"));
  }

  @Test
  void payloadHeadReadsRowAggregateAndSequence() {
    byte[] payload = Backlog.payload(12_345, 1_000, 300);
    assertEquals(300, payload.length);
    assertArrayEquals(new long[] {12_345, 344, 12}, TopicReader.PayloadHead.parse(payload));
  }

  @Test
  void payloadHeadReadsJsonbTextAndExpandedJsonByKey() {
    // PostgreSQL's jsonb text (Debezium's string payload) and JsonConverter's output of the
    // expanded payload order the keys by length, then bytes.
    byte[] jsonb = "{\"a\": 344, \"n\": 12345, \"p\": \"xxxx\", \"s\": 12}".getBytes();
    byte[] expanded = "{\"a\":344,\"n\":12345,\"p\":\"xxxx\",\"s\":12}".getBytes();
    assertArrayEquals(new long[] {12_345, 344, 12}, TopicReader.PayloadHead.parse(jsonb));
    assertArrayEquals(new long[] {12_345, 344, 12}, TopicReader.PayloadHead.parse(expanded));
    // The peer's warm-up row is number 0 of aggregate -1: not a row of the run.
    byte[] warmUp = "{\"a\": -1, \"n\": 0, \"p\": \"x\", \"s\": -1}".getBytes();
    assertEquals(0, TopicReader.PayloadHead.parse(warmUp)[0]);
  }

  @Test
  void peerAndMinimalFlags() {
    Options o =
        Options.parse(
            "--scenarios",
            "minimal,debezium",
            "--minimal-batch-size",
            "200",
            "--debezium-payloads",
            "expanded");
    assertEquals(200, o.minimalBatchSize);
    assertEquals(List.of(Options.DebeziumPayload.EXPANDED), o.debeziumPayloads);
    assertEquals("logical", o.walLevel);
    assertEquals(
        "replica", Options.parse("--scenarios", "drain", "--wal-level", "replica").walLevel);
    assertThrows(
        IllegalArgumentException.class,
        () -> Options.parse("--scenarios", "debezium", "--wal-level", "replica"));
    assertThrows(IllegalArgumentException.class, () -> Options.parse("--wal-level", "minimal"));
    assertEquals("off", o.walCompression);
    assertEquals("pglz", Options.parse("--wal-compression", "pglz").walCompression);
    assertThrows(IllegalArgumentException.class, () -> Options.parse("--wal-compression", "on"));
  }

  @Test
  void percentilesAreNearestRank() {
    long[] sorted = new long[100];
    for (int i = 0; i < 100; i++) {
      sorted[i] = i + 1;
    }
    assertEquals(50, Stats.percentile(sorted, 50));
    assertEquals(99, Stats.percentile(sorted, 99));
    assertEquals(100, Stats.percentile(sorted, 100));
    assertEquals(2.5, Stats.summarize(List.of(4.0, 1.0, 3.0, 2.0)).median());
  }
}
