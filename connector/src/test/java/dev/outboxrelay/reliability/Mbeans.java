package dev.outboxrelay.reliability;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/** The platform MBean server, where the workers' JMX reporters publish every metric. */
final class Mbeans {
  private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();

  private Mbeans() {}

  /**
   * The relay's metric {@code name} of each running task of {@code connector}, summed (a metric is
   * gone once its task stopped).
   */
  static long relayMetric(String connector, String name) {
    long sum = 0;
    for (ObjectName bean : relayBeans(connector)) {
      try {
        Object value = SERVER.getAttribute(bean, name);
        if (value instanceof Number n) {
          sum += n.longValue();
        }
      } catch (Exception e) {
        // The task stopped between the query and the read.
      }
    }
    return sum;
  }

  /** The relay's metric {@code name} of task {@code task} of {@code connector}, or -1. */
  static long relayMetric(String connector, int task, String name) {
    for (ObjectName bean : relayBeans(connector)) {
      if (Integer.toString(task).equals(bean.getKeyProperty("task"))) {
        try {
          return ((Number) SERVER.getAttribute(bean, name)).longValue();
        } catch (Exception e) {
          return -1;
        }
      }
    }
    return -1;
  }

  /** The names of the relay's metric beans of {@code connector} still registered. */
  static Set<ObjectName> relayMetricNames(String connector) {
    return relayBeans(connector);
  }

  private static Set<ObjectName> relayBeans(String connector) {
    try {
      return SERVER.queryNames(
          new ObjectName("kafka.connect:type=plugins,connector=" + connector + ",*"), null);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Every MBean's name, attribute names and attribute values (as text) that contain one of the
   * {@code sentinels}. Values that cannot be read are skipped: they cannot leak either.
   */
  static List<String> scan(Set<String> sentinels) {
    List<String> hits = new ArrayList<>();
    for (ObjectName bean : SERVER.queryNames(null, null)) {
      check(sentinels, "name " + bean, hits);
      MBeanAttributeInfo[] attributes;
      try {
        attributes = SERVER.getMBeanInfo(bean).getAttributes();
      } catch (Exception e) {
        continue;
      }
      for (MBeanAttributeInfo a : attributes) {
        check(sentinels, bean + " attribute " + a.getName() + " " + a.getDescription(), hits);
        try {
          check(
              sentinels,
              bean + "." + a.getName() + " = " + SERVER.getAttribute(bean, a.getName()),
              hits);
        } catch (Exception | LinkageError e) {
          // Unreadable (or unsupported) attribute.
        }
      }
    }
    return hits;
  }

  /** How many MBeans there are: a scan of zero beans proves nothing. */
  static int count() {
    return SERVER.getMBeanCount();
  }

  private static void check(Set<String> sentinels, String text, List<String> hits) {
    for (String s : sentinels) {
      if (text.contains(s)) {
        hits.add("[" + s + "] " + text);
      }
    }
  }
}
