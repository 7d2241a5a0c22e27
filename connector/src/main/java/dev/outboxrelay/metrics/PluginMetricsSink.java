package dev.outboxrelay.metrics;

import java.util.LinkedHashMap;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Measurable;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.Sensor;

/**
 * Connect's plugin metrics (KIP-877, Kafka 4.1): the worker tags them with the connector and task
 * and publishes them as {@code kafka.connect:type=plugins,connector=<name>,task=<n>}. The only
 * class that names {@link PluginMetrics}, which older workers lack: it is loaded only where the
 * worker offered them.
 */
final class PluginMetricsSink implements MetricsSink {
  private final PluginMetrics metrics;

  PluginMetricsSink(PluginMetrics metrics) {
    this.metrics = metrics;
  }

  @Override
  public MetricName metricName(String name, String description) {
    return metrics.metricName(name, description, new LinkedHashMap<>());
  }

  @Override
  public void addMetric(MetricName name, Measurable value) {
    metrics.addMetric(name, value);
  }

  @Override
  public Sensor addSensor(String name) {
    return metrics.addSensor(name);
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
    // The worker's: it closes them with the task.
  }
}
