package dev.outboxrelay.metrics;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Measurable;
import org.apache.kafka.common.metrics.Sensor;

/**
 * Where a task's metrics are exposed: Connect's plugin metrics on workers of Kafka 4.1 and later
 * ({@link PluginMetricsSink}), beans of the task's own under the same names before that ({@link
 * JmxMetricsSink}). Every metric has the task's tags; only the name and description vary.
 */
interface MetricsSink {
  MetricName metricName(String name, String description);

  void addMetric(MetricName name, Measurable value);

  Sensor addSensor(String name);

  void removeMetric(MetricName name);

  void removeSensor(String name);

  /** Releases what the sink holds itself (the task's own beans); the worker's are its own. */
  void close();
}
