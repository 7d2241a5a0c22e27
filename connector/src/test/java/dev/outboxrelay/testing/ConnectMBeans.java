package dev.outboxrelay.testing;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import javax.management.JMException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * Reads the workers' metrics where operators read them: the platform MBeanServer, to which
 * Connect's JMX reporters publish their own and the plugins' metrics (domain {@code
 * kafka.connect}).
 */
public final class ConnectMBeans {
  private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();

  private ConnectMBeans() {}

  /** One attribute of one MBean, its value as text ({@code <unreadable>} if it cannot be read). */
  public record Attribute(ObjectName bean, String name, String description, String value) {}

  /** Every attribute of every MBean whose domain starts with {@code domainPrefix}. */
  public static List<Attribute> scan(String domainPrefix) {
    List<Attribute> out = new ArrayList<>();
    for (ObjectName bean : beans(domainPrefix)) {
      out.addAll(attributes(bean));
    }
    return out;
  }

  /**
   * Where one of {@code sentinels} shows in an MBean whose domain starts with {@code domainPrefix}:
   * its name, an attribute's name or description, or an attribute's value; one line per hit.
   */
  public static List<String> leaks(String domainPrefix, Collection<String> sentinels) {
    List<String> hits = new ArrayList<>();
    for (ObjectName bean : beans(domainPrefix)) {
      check(sentinels, "name " + bean, hits);
      for (Attribute a : attributes(bean)) {
        check(sentinels, bean + " attribute " + a.name() + " " + a.description(), hits);
        check(sentinels, bean + "." + a.name() + " = " + a.value(), hits);
      }
    }
    return hits;
  }

  /** How many MBeans there are: a scan of zero beans proves nothing. */
  public static int count() {
    return SERVER.getMBeanCount();
  }

  /**
   * The value of one of the connector's task metrics (KIP-877 plugin metrics), or empty while the
   * task has not registered it (or no longer has it).
   */
  public static OptionalLong taskMetric(String connector, int task, String metric) {
    for (ObjectName bean : metricBeans(connector, Integer.toString(task))) {
      try {
        Object value = SERVER.getAttribute(bean, metric);
        if (value instanceof Number n) {
          return OptionalLong.of(n.longValue());
        }
      } catch (JMException | RuntimeException e) {
        // not this bean, or the task stopped meanwhile
      }
    }
    return OptionalLong.empty();
  }

  /** The sum of a task metric over the connector's tasks 0 .. tasks-1 (absent counts as 0). */
  public static long sumOverTasks(String connector, int tasks, String metric) {
    long sum = 0;
    for (int task = 0; task < tasks; task++) {
      sum += taskMetric(connector, task, metric).orElse(0);
    }
    return sum;
  }

  /** The names of the connector's plugin metric beans still registered, of every task. */
  public static Set<ObjectName> metricBeans(String connector) {
    return metricBeans(connector, null);
  }

  /** Connect names them kafka.connect:type=plugins,connector={name},task={id}, unquoted. */
  private static Set<ObjectName> metricBeans(String connector, String task) {
    try {
      return SERVER.queryNames(
          new ObjectName(
              "kafka.connect:type=plugins,connector="
                  + connector
                  + (task == null ? "" : ",task=" + task)
                  + ",*"),
          null);
    } catch (JMException e) {
      throw new IllegalArgumentException(e);
    }
  }

  private static List<ObjectName> beans(String domainPrefix) {
    return SERVER.queryNames(null, null).stream()
        .filter(bean -> bean.getDomain().startsWith(domainPrefix))
        .toList();
  }

  private static List<Attribute> attributes(ObjectName bean) {
    MBeanAttributeInfo[] infos;
    try {
      infos = SERVER.getMBeanInfo(bean).getAttributes();
    } catch (JMException | RuntimeException e) {
      return List.of(); // unregistered meanwhile
    }
    List<Attribute> out = new ArrayList<>();
    for (MBeanAttributeInfo info : infos) {
      String value;
      try {
        value = String.valueOf(SERVER.getAttribute(bean, info.getName()));
      } catch (JMException | RuntimeException | LinkageError e) {
        value = "<unreadable>";
      }
      out.add(new Attribute(bean, info.getName(), info.getDescription(), value));
    }
    return out;
  }

  private static void check(Collection<String> sentinels, String text, List<String> hits) {
    for (String s : sentinels) {
      if (text.contains(s)) {
        hits.add("[" + s + "] " + text);
      }
    }
  }
}
