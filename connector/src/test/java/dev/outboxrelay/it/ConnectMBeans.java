package dev.outboxrelay.it;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import javax.management.JMException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * Reads the worker's metrics where operators read them: the platform MBeanServer, to which
 * Connect's JMX reporter publishes its own and the plugins' metrics (domain {@code kafka.connect}).
 */
final class ConnectMBeans {
  private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();

  private ConnectMBeans() {}

  /** One readable attribute of one MBean, its value as text. */
  record Attribute(ObjectName bean, String name, String value) {}

  /** Every attribute of every MBean whose domain starts with {@code domainPrefix}. */
  static List<Attribute> scan(String domainPrefix) {
    List<Attribute> out = new ArrayList<>();
    for (ObjectName bean : SERVER.queryNames(null, null)) {
      if (!bean.getDomain().startsWith(domainPrefix)) {
        continue;
      }
      MBeanAttributeInfo[] attributes;
      try {
        attributes = SERVER.getMBeanInfo(bean).getAttributes();
      } catch (JMException e) {
        continue; // unregistered meanwhile
      }
      for (MBeanAttributeInfo attribute : attributes) {
        String value;
        try {
          value = String.valueOf(SERVER.getAttribute(bean, attribute.getName()));
        } catch (JMException | RuntimeException e) {
          value = "<unreadable>";
        }
        out.add(new Attribute(bean, attribute.getName(), value));
      }
    }
    return out;
  }

  /**
   * The value of one of the connector's task metrics (KIP-877 plugin metrics), or empty while the
   * task has not registered it.
   */
  static OptionalLong taskMetric(String connector, int task, String metric) {
    for (ObjectName bean : taskMetricBeans(connector, task)) {
      try {
        Object value = SERVER.getAttribute(bean, metric);
        if (value instanceof Number n) {
          return OptionalLong.of(n.longValue());
        }
      } catch (JMException e) {
        // not this bean
      }
    }
    return OptionalLong.empty();
  }

  /** The sum of a task metric over the connector's tasks 0 .. tasks-1 (absent counts as 0). */
  static long sumOverTasks(String connector, int tasks, String metric) {
    long sum = 0;
    for (int task = 0; task < tasks; task++) {
      sum += taskMetric(connector, task, metric).orElse(0);
    }
    return sum;
  }

  /** Connect names them kafka.connect:type=plugins,connector={name},task={id}, unquoted. */
  private static Set<ObjectName> taskMetricBeans(String connector, int task) {
    try {
      return SERVER.queryNames(
          new ObjectName(
              "kafka.connect:type=plugins,connector=" + connector + ",task=" + task + ",*"),
          null);
    } catch (JMException e) {
      throw new IllegalArgumentException(e);
    }
  }
}
