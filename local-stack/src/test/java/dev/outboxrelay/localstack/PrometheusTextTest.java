package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PrometheusTextTest {
  /** As the JMX exporter 1.0.1 agent serves it (text format 0.0.4), abridged. */
  static final String SCRAPE =
      """
      # HELP jvm_threads_current Current thread count of a JVM
      # TYPE jvm_threads_current gauge
      jvm_threads_current 61.0
      # HELP outbox_relay_published_total outbox-relay published (records or operations, see docs/metrics.md)
      # TYPE outbox_relay_published_total counter
      outbox_relay_published_total{connector="outbox-relay-local",task="0"} 4.0
      outbox_relay_published_total{connector="outbox-relay-local",task="1"} 3.0
      outbox_relay_published_total{connector="outbox-relay-us",task="0"} 2.0
      # TYPE outbox_relay_claim_lost_total counter
      outbox_relay_claim_lost_total{connector="outbox-relay-local",task="0"} 1.0
      outbox_relay_claim_lost_total{connector="outbox-relay-local",task="1"} 0.0
      outbox_relay_claim_lost_total{connector="outbox-relay-us",task="0"} 0.0
      outbox_relay_retried_total{connector="outbox-relay-local",task="0"} 2.0
      outbox_relay_retried_total{connector="outbox-relay-local",task="1"} 1.0
      outbox_relay_exhausted_total{connector="outbox-relay-local",task="0"} 0.0
      outbox_relay_exhausted_total{connector="outbox-relay-local",task="1"} 0.0
      # TYPE outbox_relay_backlog_pending_records gauge
      outbox_relay_backlog_pending_records{connector="outbox-relay-local",task="0"} 12.0
      outbox_relay_backlog_pending_records{connector="outbox-relay-local",task="1"} 0.0
      outbox_relay_backlog_in_flight_records{connector="outbox-relay-local",task="0"} 5.0
      outbox_relay_backlog_in_flight_records{connector="outbox-relay-local",task="1"} 0.0
      outbox_relay_backlog_ambiguous_records{connector="outbox-relay-local",task="0"} 3.0
      outbox_relay_backlog_failed_records{connector="outbox-relay-local",task="0"} 1.0
      outbox_relay_backlog_failed_records{connector="outbox-relay-local",task="1"} 0.0
      outbox_relay_backlog_exhausted_records{connector="outbox-relay-local",task="0"} 0.0
      outbox_relay_backlog_exhausted_records{connector="outbox-relay-local",task="1"} 0.0
      outbox_relay_lag_ms{connector="outbox-relay-local",task="0"} 4250.0
      outbox_relay_lag_ms{connector="outbox-relay-local",task="1"} 0.0
      kafka_connect_task_status{connector="outbox-relay-local",status="running",task="0"} 1.0
      """;

  @Test
  void readsNamesLabelsAndValuesAndSkipsComments() {
    List<PrometheusText.Sample> samples = PrometheusText.parse(SCRAPE);
    assertEquals(23, samples.size());
    assertEquals(new PrometheusText.Sample("jvm_threads_current", Map.of(), 61.0), samples.get(0));
    assertEquals(
        new PrometheusText.Sample(
            "outbox_relay_published_total",
            Map.of("connector", "outbox-relay-local", "task", "1"),
            3.0),
        samples.get(2));
    assertEquals("running", samples.get(22).label("status"));
    assertEquals("", samples.get(0).label("connector"));
  }

  @Test
  void readsEscapesSpecialValuesTimestampsAndOpenMetricsEnds() {
    List<PrometheusText.Sample> samples =
        PrometheusText.parse(
            "a{l=\"x\\\"y\\\\z\\nw\",m=\"a,b}c\"} NaN\n"
                + "b +Inf 1700000000000\n"
                + "c{} -Inf\n"
                + "d{l=\"v\",} 1e3\n"
                + "  e   7  \r\n"
                + "# EOF\n");
    assertEquals(5, samples.size(), samples::toString);
    assertEquals("x\"y\\z\nw", samples.get(0).label("l"));
    assertEquals("a,b}c", samples.get(0).label("m"));
    assertTrue(Double.isNaN(samples.get(0).value()));
    assertEquals(Double.POSITIVE_INFINITY, samples.get(1).value());
    assertEquals(Double.NEGATIVE_INFINITY, samples.get(2).value());
    assertEquals(Map.of(), samples.get(2).labels());
    assertEquals(1000.0, samples.get(3).value());
    assertEquals(Map.of("l", "v"), samples.get(3).labels());
    assertEquals(new PrometheusText.Sample("e", Map.of(), 7.0), samples.get(4));
  }

  @Test
  void skipsWhatIsNotASampleInsteadOfFailing() {
    List<PrometheusText.Sample> samples =
        PrometheusText.parse(
            "<html>not metrics</html>\n"
                + "a{l=\"unterminated} 1\n"
                + "b{l=unquoted} 1\n"
                + "c\n"
                + "d notanumber\n"
                + "ok 1\n");
    assertEquals(List.of(new PrometheusText.Sample("ok", Map.of(), 1.0)), samples);
  }
}
