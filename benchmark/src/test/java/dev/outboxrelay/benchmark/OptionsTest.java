package dev.outboxrelay.benchmark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;
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
