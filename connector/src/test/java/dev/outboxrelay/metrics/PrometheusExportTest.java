package dev.outboxrelay.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.outboxrelay.connect.OutboxSourceConnector;
import dev.outboxrelay.store.BacklogSnapshot;
import dev.outboxrelay.store.MessageStatus;
import io.prometheus.jmx.JmxCollector;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The shipped Prometheus rules and Grafana dashboard against the metrics the task really registers:
 * the task's metrics are published the way a Connect worker publishes plugin metrics (Kafka's JMX
 * reporter, domain kafka.connect, connector and task tags), then scraped with the JMX exporter's
 * own rule engine and the shipped rules.
 */
class PrometheusExportTest {
  static final Path RULES = Path.of("../config/metrics/jmx-exporter.yml");
  static final Path DASHBOARD = Path.of("../config/metrics/grafana-dashboard.json");
  static final Path STRIMZI_RULES = Path.of("../manifests/metrics-config.yaml");
  static final Path ALERTS = Path.of("../config/metrics/alerts.yml");
  private static final String CONNECTOR = "orders-outbox";
  private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();
  private static final Pattern SERIES_NAME =
      Pattern.compile("\\b(outbox_relay_[a-z_]+|kafka_connect_[a-z_]+)\\b");
  private static final Pattern SAMPLE =
      Pattern.compile("^([a-z_]+)\\{([^}]*)\\} ([-0-9.Ee+]+|NaN)$", Pattern.MULTILINE);

  /** A series task 0 alone exports. */
  private static final Pattern TASK_ZERO_SERIES =
      Pattern.compile("\\boutbox_relay_(?:lag_ms|backlog_[a-z_]+)\\b");

  /** The aggregation whose argument a series opens, as the text before the series ends. */
  private static final Pattern AGGREGATION_BY_CONNECTOR =
      Pattern.compile("\\b(\\w+) by \\(connector\\) \\($");

  private Metrics kafkaMetrics;
  private RelayMetrics relay;

  /** Connect's status of task 0, as its task metrics give it. */
  private volatile String taskStatus = "running";

  /** Connect's status of the connector, as its connector metrics give it. */
  private volatile String connectorStatus = "running";

  @BeforeEach
  void publishLikeAConnectWorker() throws Exception {
    kafkaMetrics =
        new Metrics(
            new MetricConfig(),
            List.of(new JmxReporter()),
            Time.SYSTEM,
            new KafkaMetricsContext("kafka.connect"));
    // Tags in Connect's order (ConnectMetrics.taskPluginMetrics): the MBean's name follows it.
    Map<String, String> tags = new LinkedHashMap<>();
    tags.put("connector", CONNECTOR);
    tags.put("task", "0");
    PluginMetricsImpl plugin = new PluginMetricsImpl(kafkaMetrics, tags);
    relay = new RelayMetrics();
    relay.register(() -> plugin, true, CONNECTOR, 0);
    relay.claimed.set(11);
    relay.published.set(7);
    relay.claimLost.set(2);
    relay.leaseRenewalsLost.set(1);
    relay.retried.set(3);
    relay.exhausted.set(4);
    relay.failed.set(5);
    relay.deadLettered.set(6);
    relay.readInFlightFrom(() -> 8, () -> 4096);
    Map<MessageStatus, Long> counts = new EnumMap<>(MessageStatus.class);
    counts.put(MessageStatus.PENDING, 40L);
    counts.put(MessageStatus.EXHAUSTED, 1L);
    relay.recordBacklog(
        new BacklogSnapshot(counts, Duration.ofMillis(1500)), Duration.ofSeconds(60));
    relay.recordOutcomeWrite(12);
    // Connect's own task status, registered as Connect does: a string gauge of its metrics.
    kafkaMetrics.addMetric(
        kafkaMetrics.metricName("status", "connector-task-metrics", "task status", tags),
        (Gauge<String>) (config, now) -> taskStatus);
    // Connect's connector metrics (ConnectMetricsRegistry), of this connector and another one.
    for (Map.Entry<String, String> connector :
        Map.of(CONNECTOR, OutboxSourceConnector.class.getName(), "other", "com.example.Other")
            .entrySet()) {
      kafkaMetrics.addMetric(
          kafkaMetrics.metricName(
              "connector-class",
              "connector-metrics",
              "connector class",
              Map.of("connector", connector.getKey())),
          (Gauge<String>) (config, now) -> connector.getValue());
    }
    // Connect's own connector status, as ConnectMetricsRegistry names it.
    kafkaMetrics.addMetric(
        kafkaMetrics.metricName(
            "status", "connector-metrics", "connector status", Map.of("connector", CONNECTOR)),
        (Gauge<String>) (config, now) -> connectorStatus);
  }

  @AfterEach
  void unpublish() {
    relay.unregister();
    kafkaMetrics.close();
  }

  /** Series name with its labels, e.g. outbox_relay_published_total{connector=..,task=0}. */
  /** Connect's status series of task 0, in {@code status}. */
  private static String taskStatusSeries(String status) {
    return "kafka_connect_task_status{connector=\""
        + CONNECTOR
        + "\",status=\""
        + status
        + "\",task=\"0\"}";
  }

  private static Map<String, Double> scrape(String rules) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrometheusRegistry registry = new PrometheusRegistry();
    new JmxCollector(rules).register(registry);
    new PrometheusTextFormatWriter(false).write(out, registry.scrape());
    Map<String, Double> samples = new HashMap<>();
    Matcher m = SAMPLE.matcher(out.toString(StandardCharsets.UTF_8));
    while (m.find()) {
      samples.put(m.group(1) + "{" + m.group(2) + "}", Double.parseDouble(m.group(3)));
    }
    return samples;
  }

  private static String taskLabels() {
    return "connector=\"" + CONNECTOR + "\",task=\"0\"";
  }

  /** On a worker before Kafka 4.1 the task's own bean is exported by the same rules. */
  @Test
  void theTasksOwnBeanOnAnOlderWorkerIsExportedByTheSameRules() throws Exception {
    relay.unregister(); // the plugin metrics out of the way: the same name
    RelayMetrics own = new RelayMetrics();
    own.register(
        () -> {
          throw new UnsupportedOperationException("no plugin metrics");
        },
        true,
        CONNECTOR,
        0);
    try {
      own.published.set(9);
      own.recordOutcomeWrite(12);
      Map<String, Double> samples = everyAttributeOfTheTasksBeanExported();
      assertEquals(9.0, samples.get("outbox_relay_published_total{" + taskLabels() + "}"));
      assertEquals(
          12.0, samples.get("outbox_relay_outcome_write_latency_max_ms{" + taskLabels() + "}"));
      // No backlog read yet: NaN, which the shipped alert on missing figures counts as missing.
      assertTrue(samples.get("outbox_relay_lag_ms{" + taskLabels() + "}").isNaN());
    } finally {
      own.unregister();
    }
  }

  @Test
  void everyRegisteredMetricIsExportedWithItsValueAndTheConnectorAndTaskLabels() throws Exception {
    Map<String, Double> samples = everyAttributeOfTheTasksBeanExported();
    assertEquals(7.0, samples.get("outbox_relay_published_total{" + taskLabels() + "}"));
    assertEquals(40.0, samples.get("outbox_relay_backlog_pending_records{" + taskLabels() + "}"));
    assertEquals(1500.0, samples.get("outbox_relay_lag_ms{" + taskLabels() + "}"));
    assertEquals(1.0, samples.get(taskStatusSeries("running")));
  }

  /**
   * The alerts know a connector as outbox-relay's by Connect's own connector metrics, which exist
   * before (and whether or not) any task registered the relay's: a task that failed at its start is
   * still alerted on.
   */
  @Test
  void connectorsOfThisPluginAreKnownByConnectsConnectorMetrics() throws Exception {
    Map<String, Double> samples = scrape(Files.readString(RULES));
    assertEquals(
        1.0, samples.get("outbox_relay_connector_deployed{connector=\"" + CONNECTOR + "\"}"));
    assertEquals(
        List.of(),
        samples.keySet().stream().filter(k -> k.contains("\"other\"")).toList(),
        "another plugin's connector");
  }

  /**
   * Scrapes with the shipped rules, holding every attribute of the task's bean to a series with its
   * value and the connector and task labels; returns the samples.
   */
  private static Map<String, Double> everyAttributeOfTheTasksBeanExported() throws Exception {
    Map<String, Double> samples = scrape(Files.readString(RULES));
    ObjectName bean =
        new ObjectName("kafka.connect:type=plugins,connector=" + CONNECTOR + ",task=0");
    MBeanAttributeInfo[] attributes = SERVER.getMBeanInfo(bean).getAttributes();
    assertTrue(attributes.length >= 20, "the task's metrics are published: " + attributes.length);
    for (MBeanAttributeInfo attribute : attributes) {
      String series = "outbox_relay_" + attribute.getName().replace('-', '_');
      Double exported = samples.get(series + "{" + taskLabels() + "}");
      assertTrue(exported != null, series + " is not exported; samples: " + samples.keySet());
      Object value = SERVER.getAttribute(bean, attribute.getName());
      assertEquals(((Number) value).doubleValue(), exported, 0.0001, series);
    }
    return samples;
  }

  /** The names of the series the shipped rules export (without labels). */
  private static Set<String> exportedSeries() throws Exception {
    Set<String> exported = new TreeSet<>();
    scrape(Files.readString(RULES))
        .keySet()
        .forEach(k -> exported.add(k.substring(0, k.indexOf('{'))));
    return exported;
  }

  /** The relay's and Connect's series that a query or rule text names. */
  private static Set<String> seriesNamedIn(String text) {
    Set<String> named = new TreeSet<>();
    Matcher m = SERIES_NAME.matcher(text);
    while (m.find()) {
      named.add(m.group(1));
    }
    return named;
  }

  @Test
  void everyMetricTheDashboardQueriesIsExported() throws Exception {
    Set<String> exported = exportedSeries();
    JsonNode dashboard = new ObjectMapper().readTree(DASHBOARD.toFile());
    Set<String> queried = new TreeSet<>();
    for (JsonNode panel : dashboard.get("panels")) {
      for (JsonNode target : panel.get("targets")) {
        queried.addAll(seriesNamedIn(target.get("expr").asText()));
      }
    }
    queried.add(
        dashboard.at("/templating/list/1/query/query").asText().replaceAll(".*\\((\\w+),.*", "$1"));
    assertFalse(queried.isEmpty());
    for (String metric : queried) {
      assertTrue(exported.contains(metric), metric + " is queried but not exported: " + exported);
    }
    for (String headline :
        List.of(
            "outbox_relay_backlog_pending_records",
            "outbox_relay_lag_ms",
            "outbox_relay_published_total",
            "outbox_relay_claim_lost_total",
            "outbox_relay_retried_total",
            "outbox_relay_exhausted_total")) {
      assertTrue(queried.contains(headline), "the dashboard shows " + headline);
    }
  }

  /**
   * Every range the dashboard's rate() or increase() reads holds several scrapes: Grafana's
   * $__rate_interval, or at least 5 minutes. A [1m] window held one sample at Prometheus' default
   * 1-minute scrape interval, and the panel stayed empty.
   */
  @Test
  void everyRateTheDashboardTakesSpansSeveralScrapes() throws Exception {
    JsonNode dashboard = new ObjectMapper().readTree(DASHBOARD.toFile());
    java.util.regex.Pattern range =
        java.util.regex.Pattern.compile("(?:rate|increase)\\([^\\[]*\\[([^\\]]+)\\]\\)");
    int ranges = 0;
    for (JsonNode panel : dashboard.get("panels")) {
      for (JsonNode target : panel.get("targets")) {
        java.util.regex.Matcher m = range.matcher(target.get("expr").asText());
        while (m.find()) {
          ranges++;
          String window = m.group(1);
          assertTrue(
              window.equals("$__rate_interval")
                  || (window.endsWith("m") && Integer.parseInt(window.replace("m", "")) >= 5)
                  || window.endsWith("h"),
              target.get("expr").asText());
        }
      }
    }
    assertTrue(ranges > 0, "the dashboard takes rates");
  }

  /**
   * A paused connector reads no backlog: the missing-figures alert stands aside for it by the
   * series a paused task 0 exports, which it names as exported.
   */
  @Test
  void thePausedTaskZeroTheMissingFiguresAlertStandsAsideForIsExported() throws Exception {
    String paused = "kafka_connect_task_status{task=\"0\",status=\"paused\"} == 1";
    assertTrue(Files.readString(ALERTS).contains(paused), "the alert reads " + paused);
    taskStatus = "paused";
    Map<String, Double> samples = scrape(Files.readString(RULES));
    assertEquals(1.0, samples.get(taskStatusSeries("paused")));
  }

  /**
   * Task 0 alone exports the lag and the backlog counts, and a task 0 left stuck on a worker beside
   * its replacement (before Kafka 4.1 its beans outlive an abandoned stop) exports them too, with
   * the same labels: its lag ages its last row without end and its counts stay as last read. So no
   * query sums them; the lag takes the smaller figure (the live one), the counts the larger (a
   * parked row is never hidden by a stale zero).
   */
  @Test
  void taskZerosFiguresAreTakenOnceAndTheLagFromTheLiveTask() throws Exception {
    JsonNode dashboard = new ObjectMapper().readTree(DASHBOARD.toFile());
    StringBuilder queries = new StringBuilder(Files.readString(ALERTS));
    for (JsonNode panel : dashboard.get("panels")) {
      for (JsonNode target : panel.get("targets")) {
        queries.append('\n').append(target.get("expr").asText());
      }
    }
    Matcher read = TASK_ZERO_SERIES.matcher(queries);
    int reads = 0;
    while (read.find()) {
      reads++;
      String aggregated = queries.substring(0, read.start());
      Matcher by = AGGREGATION_BY_CONNECTOR.matcher(aggregated);
      assertTrue(by.find(), read.group() + " is read without an aggregation by connector");
      String expected = read.group().equals("outbox_relay_lag_ms") ? "min|group" : "max|group";
      assertTrue(
          by.group(1).matches(expected),
          read.group() + " is aggregated with " + by.group(1) + ", not " + expected);
    }
    assertTrue(reads >= 4, "the lag and backlog are queried: " + reads);
  }

  /**
   * Connect lowercases a state in the worker's default locale: under a Turkish one FAILED reads
   * fa\u0131led (a dotless i), which the rules exported as status "fa", and the task-not-running
   * and connector-failed alerts never fired. Every state Connect has is exported by its English
   * name, in either locale.
   */
  @Test
  void everyStateIsExportedByItsEnglishNameUnderATurkishLocale() throws Exception {
    for (String state :
        List.of(
            "UNASSIGNED", "RUNNING", "PAUSED", "FAILED", "RESTARTING", "STOPPED", "DESTROYED")) {
      String english = state.toLowerCase(Locale.ROOT);
      for (Locale locale : List.of(Locale.ROOT, Locale.forLanguageTag("tr"))) {
        taskStatus = state.toLowerCase(locale);
        connectorStatus = state.toLowerCase(locale);
        Map<String, Double> samples = scrape(Files.readString(RULES));
        assertEquals(
            1.0,
            samples.get(taskStatusSeries(english)),
            () -> taskStatus + " in " + samples.keySet());
        assertEquals(
            1.0,
            samples.get(
                "kafka_connect_connector_status{connector=\""
                    + CONNECTOR
                    + "\",status=\""
                    + english
                    + "\"}"),
            () -> connectorStatus + " in " + samples.keySet());
      }
    }
  }

  /**
   * A connector that failed as a whole (its start refused its config) has no task, so no task
   * status: its own status is exported, which the connector-failed alert reads.
   */
  @Test
  void aFailedConnectorsOwnStatusIsExported() throws Exception {
    connectorStatus = "failed";
    Map<String, Double> samples = scrape(Files.readString(RULES));
    assertEquals(
        1.0,
        samples.get(
            "kafka_connect_connector_status{connector=\"" + CONNECTOR + "\",status=\"failed\"}"));
    assertTrue(
        seriesNamedIn(Files.readString(ALERTS)).contains("kafka_connect_connector_status"),
        "a failed connector is alerted on");
  }

  /**
   * From Kafka 4.1 another connector's task metric of a relay metric's name is exported as an
   * outbox_relay_* series under that connector: every alert over those series keeps only the
   * connectors Connect's own metrics name as this plugin's, at the top level of its expression.
   */
  @Test
  void everyAlertKeepsOnlyConnectorsOfThisPlugin() throws Exception {
    Map<String, String> tags = new LinkedHashMap<>();
    tags.put("connector", "other");
    tags.put("task", "0");
    new PluginMetricsImpl(kafkaMetrics, tags)
        .addMetric(
            kafkaMetrics.metricName("lag-ms", "plugins", "another plugin's lag", tags),
            (Gauge<Double>) (config, now) -> 900_000.0);
    assertEquals(
        900_000.0,
        scrape(Files.readString(RULES)).get("outbox_relay_lag_ms{connector=\"other\",task=\"0\"}"),
        "the hazard: another connector's look-alike series");
    int checked = 0;
    for (JsonNode group :
        new ObjectMapper(new YAMLFactory()).readTree(ALERTS.toFile()).path("groups")) {
      for (JsonNode rule : group.path("rules")) {
        String alert = rule.path("alert").asText();
        String expr = rule.path("expr").asText().replaceAll("\\s+", " ");
        int at = expr.lastIndexOf(" and on (connector) ");
        assertTrue(
            at > 0 && expr.indexOf("outbox_relay_connector_deployed", at) > 0,
            alert + " is not joined on outbox_relay_connector_deployed: " + expr);
        assertTrue(
            joinsTheWhole(expr.substring(0, at)) && joinsTheWhole(expr.substring(at)),
            alert + " joins a part of its expression, not the whole: " + expr);
        checked++;
      }
    }
    assertTrue(checked >= 10, "alerts checked: " + checked);
  }

  /**
   * Whether a join between {@code before} and what follows applies to all of the expression: no
   * parenthesis left open in either part, and no {@code or} outside parentheses, which binds looser
   * than {@code and}.
   */
  private static boolean joinsTheWhole(String before) {
    int depth = 0;
    for (int i = 0; i < before.length(); i++) {
      char c = before.charAt(i);
      depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      if (depth == 0 && before.startsWith(" or ", i)) {
        return false;
      }
    }
    return depth == 0;
  }

  @Test
  void everySeriesTheAlertsReadIsExported() throws Exception {
    Set<String> exported = exportedSeries();
    Set<String> read = seriesNamedIn(Files.readString(ALERTS));
    assertTrue(read.contains("outbox_relay_lag_ms"), "the lag is alerted on: " + read);
    assertTrue(read.contains("kafka_connect_task_status"), "failed tasks are: " + read);
    for (String metric : read) {
      assertTrue(exported.contains(metric), metric + " is alerted on but not exported");
    }
  }

  @Test
  void strimzisMetricsConfigCarriesTheSameRules() throws Exception {
    String configMap = Files.readString(STRIMZI_RULES);
    String rules = Files.readString(RULES);
    String indented =
        rules
            .lines()
            .map(line -> line.isEmpty() ? line : "    " + line)
            .reduce((a, b) -> a + "\n" + b)
            .orElseThrow();
    assertTrue(
        configMap.contains(indented),
        "manifests/metrics-config.yaml must embed config/metrics/jmx-exporter.yml as it is");
  }
}
