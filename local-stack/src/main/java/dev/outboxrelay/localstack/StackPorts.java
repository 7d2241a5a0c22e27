package dev.outboxrelay.localstack;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The loopback ports of one stack, resolved once (a free port is picked only once). */
record StackPorts(int postgres, int kafka, int controller, int connect, int metrics) {

  /** Resolves every port; with auto ports, the free ones picked differ from each other too. */
  static StackPorts resolve(StackOptions options) {
    Set<Integer> taken = new HashSet<>(options.requestedPorts().values());
    int postgres = options.embeddedPostgres() ? pick(options, StackOptions.PG_PORT, taken) : 0;
    int kafka = pick(options, StackOptions.KAFKA_PORT, taken);
    int controller = pick(options, StackOptions.CONTROLLER_PORT, taken);
    int connect = pick(options, StackOptions.CONNECT_PORT, taken);
    int metrics = pick(options, StackOptions.METRICS_PORT, taken);
    return new StackPorts(postgres, kafka, controller, connect, metrics);
  }

  private static int pick(StackOptions options, String flag, Set<Integer> taken) {
    int port = options.port(flag, taken);
    taken.add(port);
    return port;
  }

  /**
   * Fails, before anything starts, when two settings name the same port (the second process could
   * not bind it) or when a port is busy, with a message naming the settings and how to choose
   * another.
   */
  void requireFree() {
    requireDistinct();
    for (Map.Entry<String, Integer> port : byFlag().entrySet()) {
      require(port.getValue(), port.getKey());
    }
  }

  /** Fails with a message naming both settings when two of them name the same port. */
  void requireDistinct() {
    Map<Integer, String> seen = new LinkedHashMap<>();
    List<String> clashes = new ArrayList<>();
    for (Map.Entry<String, Integer> port : byFlag().entrySet()) {
      String earlier = seen.putIfAbsent(port.getValue(), port.getKey());
      if (earlier != null) {
        clashes.add(
            describe(earlier)
                + " and "
                + describe(port.getKey())
                + " are both port "
                + port.getValue());
      }
    }
    if (!clashes.isEmpty()) {
      throw new StackException(
          String.join("; ", clashes)
              + ": each needs a port of its own. Choose different ports (or LOCAL_STACK_PORTS=auto"
              + " for free ones).");
    }
  }

  /** The ports in start order, by their flag; PostgreSQL's only when it is the embedded one. */
  private Map<String, Integer> byFlag() {
    Map<String, Integer> ports = new LinkedHashMap<>();
    if (postgres != 0) {
      ports.put(StackOptions.PG_PORT, postgres);
    }
    ports.put(StackOptions.KAFKA_PORT, kafka);
    ports.put(StackOptions.CONTROLLER_PORT, controller);
    ports.put(StackOptions.CONNECT_PORT, connect);
    ports.put(StackOptions.METRICS_PORT, metrics);
    return ports;
  }

  /** {@code --kafka-port (LOCAL_STACK_KAFKA_PORT, Kafka broker)}. */
  private static String describe(String flag) {
    StackOptions.PortSetting setting = StackOptions.PORTS.get(flag);
    return "--" + flag + " (" + setting.envVar() + ", " + setting.purpose() + ")";
  }

  private static void require(int port, String flag) {
    StackOptions.PortSetting setting = StackOptions.PORTS.get(flag);
    Ports.requireFree(port, setting.purpose(), setting.envVar());
  }

  String bootstrapServers() {
    return Ports.LOOPBACK + ":" + kafka;
  }

  String connectUrl() {
    return "http://" + Ports.LOOPBACK + ":" + connect;
  }

  /** The Connect worker's Prometheus endpoint (the JMX exporter agent). */
  String metricsUrl() {
    return "http://" + Ports.LOOPBACK + ":" + metrics + "/metrics";
  }
}
