package dev.outboxrelay.localstack;

/** The loopback ports of one stack, resolved once (a free port is picked only once). */
record StackPorts(int postgres, int kafka, int controller, int connect, int metrics) {

  static StackPorts resolve(StackOptions options) {
    return new StackPorts(
        options.embeddedPostgres() ? options.port(StackOptions.PG_PORT) : 0,
        options.port(StackOptions.KAFKA_PORT),
        options.port(StackOptions.CONTROLLER_PORT),
        options.port(StackOptions.CONNECT_PORT),
        options.port(StackOptions.METRICS_PORT));
  }

  /** Fails with a message naming the first busy port and how to choose another. */
  void requireFree() {
    if (postgres != 0) {
      require(postgres, StackOptions.PG_PORT);
    }
    require(kafka, StackOptions.KAFKA_PORT);
    require(controller, StackOptions.CONTROLLER_PORT);
    require(connect, StackOptions.CONNECT_PORT);
    require(metrics, StackOptions.METRICS_PORT);
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
