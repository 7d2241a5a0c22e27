package dev.outboxrelay.benchmark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class ReportWriterTest {
  private static RunCost.Result cost(long updates, long hotUpdates, boolean lagged) {
    return new RunCost.Result(
        updates,
        1,
        1,
        0,
        1,
        1,
        0,
        1.0,
        1.0,
        updates,
        hotUpdates,
        1,
        1,
        1,
        -1,
        1,
        List.of(),
        List.of(),
        lagged);
  }

  @Test
  void hotShowsTheExactCountBesideTheRoundedShare() {
    String cell = ReportWriter.hotCell(List.of(cost(50_000, 49_998, false)));
    assertEquals("100 % of 50000 (49998 HOT)", cell);
    // The team's grep: grep -rho "[0-9]* % of 50000"
    assertTrue(Pattern.compile("[0-9]* % of 50000").matcher(cell).find(), cell);
    assertEquals("– (no update)", ReportWriter.hotCell(List.of(cost(0, 0, false))));
  }

  @Test
  void lateStatisticsAreMarkedInTheReportItself() {
    Options options = Options.parse("--scenarios", "drain", "--tasks", "2", "--runs", "2");
    Results results = new Results(options);
    Drain.Config config = BenchmarkMain.drainConfig(options, 2, true, 500, Map.of());
    List<Drain.Result> runs = new ArrayList<>();
    for (boolean lagged : List.of(false, true)) {
      runs.add(
          new Drain.Result(
              1,
              100_000,
              1,
              0.25,
              133_332,
              0,
              0,
              Map.of(),
              1,
              cost(100_000, 99_990, lagged),
              null));
    }
    results.drains.put(config.label(), runs);
    results.drainConfigs.put(config.label(), config);

    String report = new ReportWriter(results).markdown();
    assertTrue(report.contains("| 100 % of 100000 (99990 HOT) † |"), report);
    assertTrue(report.contains("† Statistics may lag: in a run of " + config.label()), report);

    assertTrue(
        report.contains(
            "| "
                + config.label()
                + " | 100000 (100000–100000) | 0.25 (0.25–0.25) | 133332 (133332–133332) |"),
        "the rate once records flow, beside the rate from resume: " + report);

    runs.set(1, runs.get(0));
    assertFalse(new ReportWriter(results).markdown().contains("†"), "no mark without a lag");
  }
}
