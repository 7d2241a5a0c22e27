package dev.outboxrelay.metrics;

import java.lang.management.ManagementFactory;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.InstanceAlreadyExistsException;
import javax.management.InstanceNotFoundException;
import javax.management.JMException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Measurable;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.utils.Sanitizer;
import org.apache.kafka.common.utils.Time;

/**
 * The task's own bean, on workers without plugin metrics (Kafka 3.3 to 4.0), under the name Connect
 * gives plugin metrics from 4.1 on ({@code kafka.connect:type=plugins,connector=<name>,task=<n>}),
 * each metric an attribute as Kafka's JMX reporter shows it: the same JMX exporter rules,
 * dashboards and alerts serve both. The metrics live in a registry of the task's own, which reports
 * to nothing; the bean reads them. It is registered by this class, not by Kafka's JMX reporter, so
 * that taking the name is one atomic step (a reporter replaces a bean of the same name, an earlier
 * instance's included, and unregisters by name what it once registered) and nothing else is
 * published (a registry's count of its metrics has the worker's bean's name).
 */
final class JmxMetricsSink implements MetricsSink {
  static final String DOMAIN = "kafka.connect";
  static final String GROUP = "plugins";

  private final Metrics metrics;
  private final Map<String, String> tags;
  private final ObjectName name;

  private JmxMetricsSink(Metrics metrics, Map<String, String> tags, ObjectName name) {
    this.metrics = metrics;
    this.tags = tags;
    this.name = name;
  }

  /**
   * The sink of this task, its bean registered, or null when a bean of its name is registered
   * already: an earlier instance of the task whose thread has not returned still holds it.
   */
  static JmxMetricsSink open(String connector, int task) {
    Map<String, String> tags = new LinkedHashMap<>();
    tags.put("connector", connector);
    tags.put("task", Integer.toString(task));
    Metrics metrics = new Metrics(new MetricConfig(), List.<MetricsReporter>of(), Time.SYSTEM);
    ObjectName name = objectName(tags);
    try {
      server().registerMBean(new TaskBean(metrics, tags), name);
    } catch (InstanceAlreadyExistsException e) {
      metrics.close();
      return null;
    } catch (JMException e) {
      metrics.close();
      throw new IllegalStateException("the task's bean: " + e.getClass().getSimpleName(), e);
    }
    return new JmxMetricsSink(metrics, tags, name);
  }

  /** The bean's name, as Kafka's JMX reporter would name these tags. */
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

  private static MBeanServer server() {
    return ManagementFactory.getPlatformMBeanServer();
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
    try {
      server().unregisterMBean(name); // its own: only this instance registered it
    } catch (InstanceNotFoundException e) {
      // unregistered already
    } catch (JMException e) {
      // the platform server refused: nothing more to do at a stop
    } finally {
      metrics.close();
    }
  }

  /** The task's metrics as one bean's attributes, read at each access. */
  private record TaskBean(Metrics metrics, Map<String, String> tags) implements DynamicMBean {
    @Override
    public Object getAttribute(String attribute) throws AttributeNotFoundException {
      Metric metric = metrics.metrics().get(metrics.metricName(attribute, GROUP, tags));
      if (metric == null) {
        throw new AttributeNotFoundException("no metric " + attribute);
      }
      return metric.metricValue();
    }

    @Override
    public AttributeList getAttributes(String[] attributes) {
      AttributeList list = new AttributeList();
      for (String attribute : attributes) {
        try {
          list.add(new Attribute(attribute, getAttribute(attribute)));
        } catch (AttributeNotFoundException e) {
          // left out, as the JMX specification has it
        }
      }
      return list;
    }

    @Override
    public MBeanInfo getMBeanInfo() {
      List<MBeanAttributeInfo> attributes =
          metrics.metrics().keySet().stream()
              .filter(n -> n.group().equals(GROUP) && n.tags().equals(tags))
              .map(
                  n ->
                      new MBeanAttributeInfo(
                          n.name(), double.class.getName(), n.description(), true, false, false))
              .toList();
      return new MBeanInfo(
          getClass().getName(),
          "outbox-relay task metrics",
          attributes.toArray(MBeanAttributeInfo[]::new),
          null,
          null,
          null);
    }

    @Override
    public void setAttribute(Attribute attribute) {
      throw new UnsupportedOperationException("read-only metrics");
    }

    @Override
    public AttributeList setAttributes(AttributeList attributes) {
      return new AttributeList();
    }

    @Override
    public Object invoke(String actionName, Object[] params, String[] signature) {
      throw new UnsupportedOperationException("no operations");
    }
  }
}
