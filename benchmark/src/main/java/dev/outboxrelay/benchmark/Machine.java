package dev.outboxrelay.benchmark;

import com.sun.management.OperatingSystemMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What the figures were measured on. */
final class Machine {
  private Machine() {}

  /** The 1-minute load average of the whole machine (other processes included). */
  static double loadAverage() {
    return ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
  }

  static Map<String, String> describe() {
    Map<String, String> m = new LinkedHashMap<>();
    OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    m.put("cores", Integer.toString(Runtime.getRuntime().availableProcessors()));
    m.put("cpu", cpuModel());
    m.put("memory", "%.1f GiB".formatted(os.getTotalMemorySize() / (1024.0 * 1024 * 1024)));
    m.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
    m.put(
        "java",
        System.getProperty("java.vm.name")
            + " "
            + System.getProperty("java.runtime.version")
            + " ("
            + System.getProperty("java.vendor")
            + ")");
    m.put("jvm max heap", "%d MiB".formatted(Runtime.getRuntime().maxMemory() / (1024 * 1024)));
    m.put("jvm flags", String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments()));
    m.put("kafka", org.apache.kafka.common.utils.AppInfoParser.getVersion());
    return m;
  }

  private static String cpuModel() {
    try {
      List<String> lines = Files.readAllLines(Path.of("/proc/cpuinfo"));
      for (String line : lines) {
        if (line.startsWith("model name")) {
          return line.substring(line.indexOf(':') + 1).trim();
        }
      }
    } catch (Exception e) {
      // Not Linux: leave it out.
    }
    return "unknown";
  }

  /** Heap in use right after a full collection: what is really live. */
  static long liveHeapBytes() {
    MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
    System.gc();
    return memory.getHeapMemoryUsage().getUsed();
  }
}
