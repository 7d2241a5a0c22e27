package dev.outboxrelay.benchmark;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole harness on tiny sizes: real PostgreSQL, a real Connect cluster, the connector, the
 * naive relay, the database loop, the minimal loop, the Debezium peer (both payload variants) and
 * the connector in exactly-once mode on an exactly-once worker each relay a few hundred rows, and a
 * report with the cost figures comes out. No figure is checked: this machine's speed is not the
 * build's business.
 */
class BenchmarkSmokeTest {
  @Test
  void runsEachThroughputScenarioOnATinyBacklog(@TempDir Path output) throws Exception {
    Options options =
        Options.parse(
            "--quick",
            "--scenarios",
            "drain,drain-eos,database,naive,scale,minimal,debezium",
            "--rows",
            "400",
            "--tasks",
            "1",
            "--eos-tasks",
            "1",
            "--naive-rows",
            "40",
            "--scale-retained",
            "2000",
            "--scale-pending",
            "600",
            "--scale-claims",
            "5",
            "--output",
            output.toString());

    String report = Files.readString(BenchmarkMain.run(options));

    assertTrue(report.contains("database limit: JDBC loop"), report);
    assertTrue(report.contains("outbox-relay, tasks.max=1, ordering on"), report);
    assertTrue(report.contains("naive relay"), report);
    assertTrue(report.contains("## Claim time vs rows ahead"), report);
    assertTrue(report.contains("| 2000 PENDING rows of another instance key |"), report);
    assertTrue(
        report.contains("| none; the pending rows in 4 instance keys (a block each), claimed"),
        report);
    assertTrue(report.contains("## Targets"), report);
    assertTrue(report.contains("minimal loop: claim 1000 per statement"), report);
    assertTrue(report.contains("outbox EventRouter, string payload"), report);
    assertTrue(report.contains("outbox EventRouter, expanded JSON payload"), report);
    assertTrue(report.contains("## Cost per row"), report);
    assertTrue(report.contains("### Top statements by total time"), report);
    assertTrue(report.contains("### Relay-phase WAL by record type"), report);
    assertTrue(report.contains("| Heap/DELETE |"), report); // the relay's publish
    assertTrue(report.contains("## Exactly-once vs at-least-once"), report);
    assertTrue(
        report.contains(
            "| outbox-relay exactly-once, tasks.max=1, ordering on, claim.batch.size=500 | 400 |"),
        report);
    assertTrue(
        report.contains("- MET: outbox-relay exactly-once, tasks.max=1")
            || report.contains("- MISSED: outbox-relay exactly-once, tasks.max=1"),
        report);
  }
}
