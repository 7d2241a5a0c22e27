package dev.outboxrelay.metrics;

import java.lang.management.ManagementFactory;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.Measurable;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.utils.Sanitizer;
import org.apache.kafka.common.utils.Time;

/**
 * The task's own beans, on workers without plugin metrics (Kafka 3.3 to 4.0), under the names
 * Connect gives plugin metrics from 4.1 on ({@code kafka.connect:type=plugins,connector=<name>,
 * task=<n>}): the same JMX exporter rules, dashboards and alerts serve both. A registry of the
 * task's own with a JMX reporter that publishes only those beans (a registry adds a count of its
 * metrics, whose bean the worker's own registry holds under the same name).
 */
final class JmxMetricsSink implements MetricsSink {
  static final String DOMAIN = "kafka.connect";
  static final String GROUP = "plugins";

  private final Metrics metrics;
  private final Map<String, String> tags;

  private JmxMetricsSink(Metrics metrics, Map<String, String> tags) {
    this.metrics = metrics;
    this.tags = tags;
  }

  /**
   * The sink of this task, or null when beans of its name are registered already: an earlier
   * instance of the task whose thread has not returned still holds them.
   */
  static JmxMetricsSink open(String connector, int task) {
    Map<String, String> tags = new LinkedHashMap<>();
    tags.put("connector", connector);
    tags.put("task", Integer.toString(task));
    if (ManagementFactory.getPlatformMBeanServer().isRegistered(objectName(tags))) {
      return null;
    }
    JmxReporter reporter = new JmxReporter();
    reporter.configure(Map.of(JmxReporter.INCLUDE_CONFIG, DOMAIN + ":type=" + GROUP + ",.*"));
    List<MetricsReporter> reporters = List.of(reporter);
    Metrics metrics =
        new Metrics(new MetricConfig(), reporters, Time.SYSTEM, new KafkaMetricsContext(DOMAIN));
    return new JmxMetricsSink(metrics, tags);
  }

  /** The bean JmxReporter names for these tags, as it names it. */
  static ObjectName objectName(Map<String, String> tags) {
    StringBuilder name = new StringBuilder(DOMAIN).append(":type=").append(GROUP);
    tags.forEach(
        (key, value) ->
            name.append(',').append(key).append('=').append(Sanitizer.jmxSanitize(value)));
    try {
      return new ObjectName(name.toString());
    } catch (MalformedObjectNameException e) {
      throw new IllegalArgumentException("not a bean name: " + e.getClass().getSimpleName(), e);
    }
  }

  @Override
  public MetricName metricName(String name, String description) {
    return metrics.metricName(name, GROUP, description, tags);
  }

  @Override
  public void addMetric(MetricName name, Measurable value) {
    metrics.addMetric(name, value);
  }

  @Override
  public Sensor addSensor(String name) {
    return metrics.sensor(name);
  }

  @Override
  public void removeMetric(MetricName name) {
    metrics.removeMetric(name);
  }

  @Override
  public void removeSensor(String name) {
    metrics.removeSensor(name);
  }

  @Override
  public void close() {
    metrics.close(); // unregisters the beans
  }
}
