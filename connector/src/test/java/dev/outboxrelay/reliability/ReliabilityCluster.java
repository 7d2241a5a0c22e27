package dev.outboxrelay.reliability;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The one Connect cluster of this package (two workers and a broker in the test JVM), started by
 * the first test class that extends with it and stopped when the whole run ends, so the suite pays
 * for one start-up. Each scenario uses its own connectors, topics and database.
 */
final class ReliabilityCluster implements BeforeAllCallback {
  private static ConnectKit kit;

  /** Closed by JUnit once every test class has run. */
  private record Running(ConnectKit kit) implements AutoCloseable {
    @Override
    public void close() {
      synchronized (ReliabilityCluster.class) {
        kit.close();
        ReliabilityCluster.kit = null;
      }
    }
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    context
        .getRoot()
        .getStore(ExtensionContext.Namespace.GLOBAL)
        .getOrComputeIfAbsent(ReliabilityCluster.class, k -> new Running(start()), Running.class);
  }

  private static synchronized ConnectKit start() {
    kit = ConnectKit.start("outbox-relay-reliability", 2);
    return kit;
  }

  static synchronized ConnectKit kit() {
    if (kit == null) {
      throw new IllegalStateException(
          "annotate the class with @ExtendWith(ReliabilityCluster.class)");
    }
    return kit;
  }
}
