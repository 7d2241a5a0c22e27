package dev.outboxrelay.benchmark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Medians of runs, a run that measured nothing left out and said. */
class StatsTest {
  @Test
  void aRunThatMeasuredNothingIsLeftOutOfTheMedianAndSaid() {
    Stats.Summary s = Stats.summarize(List.of(1.0, Double.NaN, 2.0));

    assertEquals(1.5, s.median());
    assertEquals(2, s.n());
    assertEquals("1.5 (1.0–2.0) [1 run(s) not measured]", s.format("%.1f"));
  }

  @Test
  void everyRunMeasuredIsAPlainMedian() {
    assertEquals("2.0 (1.0–3.0)", Stats.summarize(List.of(3.0, 1.0, 2.0)).format("%.1f"));
    assertEquals(
        "n/a [2 run(s) not measured]",
        Stats.summarize(List.of(Double.NaN, Double.NaN)).format("%.1f"));
  }
}
