package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.localstack.RelayFigures.Figure;
import java.util.List;
import java.util.SortedMap;
import org.junit.jupiter.api.Test;

class RelayFiguresTest {
  private static final SortedMap<String, RelayFigures> FIGURES =
      RelayFigures.of(PrometheusText.parse(PrometheusTextTest.SCRAPE));

  @Test
  void countsAreSummedOverTheTasksOfEachConnector() {
    assertEquals(List.of("outbox-relay-local", "outbox-relay-us"), List.copyOf(FIGURES.keySet()));
    RelayFigures local = FIGURES.get("outbox-relay-local");
    assertEquals(List.of("0", "1"), List.copyOf(local.tasks()));
    assertEquals(7.0, local.get(Figure.PUBLISHED));
    assertEquals(1.0, local.get(Figure.CLAIMS_LOST));
    assertEquals(3.0, local.get(Figure.RETRIED));
    assertEquals(0.0, local.get(Figure.EXHAUSTED));
    assertEquals(12.0, local.get(Figure.BACKLOG_PENDING));
    assertEquals(5.0, local.get(Figure.BACKLOG_IN_FLIGHT));
    assertEquals(3.0, local.get(Figure.BACKLOG_AMBIGUOUS));
    assertEquals(1.0, local.get(Figure.BACKLOG_FAILED));
    assertEquals(0.0, local.get(Figure.BACKLOG_EXHAUSTED));
  }

  @Test
  void theAgeOfTheOldestRowIsTheLargestOverTheTasksNotTheirSum() {
    List<PrometheusText.Sample> samples =
        PrometheusText.parse(
            "outbox_relay_lag_ms{connector=\"c\",task=\"0\"} 4000\n"
                + "outbox_relay_lag_ms{connector=\"c\",task=\"1\"} 3000\n");
    assertEquals(4000.0, RelayFigures.of(samples).get("c").get(Figure.LAG_MS));
    assertEquals(4250.0, FIGURES.get("outbox-relay-local").get(Figure.LAG_MS));
  }

  @Test
  void printsTwoLinesPerConnectorAndAQuestionMarkForWhatNoTaskReported() {
    assertEquals(
        List.of(
            "outbox-relay-local (2 tasks): published 7, claims lost 1, retried 3, exhausted 0",
            "  backlog: pending 12, in flight 5, awaiting retry 3, failed 1, exhausted 0;"
                + " oldest undelivered row 4.3 s (lag)"),
        FIGURES.get("outbox-relay-local").lines());
    assertEquals(
        List.of(
            "outbox-relay-us (1 task): published 2, claims lost 0, retried ?, exhausted ?",
            "  backlog: pending ?, in flight ?, awaiting retry ?, failed ?, exhausted ?;"
                + " oldest undelivered row ? (lag)"),
        FIGURES.get("outbox-relay-us").lines());
  }

  /** The connector's own series (no task label) names the connector but counts no task. */
  @Test
  void theConnectorsOwnSeriesIsNoTask() {
    List<PrometheusText.Sample> samples =
        PrometheusText.parse(
            "outbox_relay_connector_deployed{connector=\"c\"} 1\n"
                + "outbox_relay_published_total{connector=\"c\",task=\"0\"} 4\n");
    RelayFigures c = RelayFigures.of(samples).get("c");
    assertEquals(List.of("0"), List.copyOf(c.tasks()));
    assertTrue(c.lines().get(0).startsWith("c (1 task): published 4"), c.lines().get(0));
  }

  @Test
  void onlyTheRelaysSeriesWithAConnectorCount() {
    SortedMap<String, RelayFigures> figures =
        RelayFigures.of(
            PrometheusText.parse(
                "jvm_threads_current 61\n"
                    + "kafka_connect_task_status{connector=\"x\",status=\"running\",task=\"0\"} 1\n"
                    + "outbox_relay_published_total 5\n"));
    assertTrue(figures.isEmpty(), figures::toString);
  }

  @Test
  void agesReadAsAPersonWouldSayThem() {
    assertEquals("0 ms", RelayFigures.age(0));
    assertEquals("999 ms", RelayFigures.age(999));
    assertEquals("1.5 s", RelayFigures.age(1500));
    assertEquals("5 min", RelayFigures.age(300_000));
    assertEquals("3.0 h", RelayFigures.age(3 * 3_600_000));
  }
}
