package dev.outboxrelay.localstack;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The delivery guarantee the stack runs with, and every setting that differs between the two: the
 * worker's, the registered connector's and the demo consumer's. {@code --exactly-once} selects
 * {@link #EXACTLY_ONCE}; without it the stack is what it always was (docs/local-stack.md).
 */
enum Delivery {
  /** Connect's default worker, the connector's default guarantee, a default consumer. */
  AT_LEAST_ONCE("at-least-once"),
  /**
   * A worker with exactly-once source support (KIP-618), the connector in {@code
   * delivery.guarantee=exactly-once} with Connect's {@code exactly.once.support=required}, and
   * consumers that read committed records only (docs/design.md, "Exactly-once").
   */
  EXACTLY_ONCE("exactly-once");

  static final String WORKER_SUPPORT = "exactly.once.source.support";
  static final String GUARANTEE = "delivery.guarantee";
  static final String CONNECTOR_SUPPORT = "exactly.once.support";
  static final String READ_COMMITTED = "read_committed";

  private final String label;

  Delivery(String label) {
    this.label = label;
  }

  /** {@code at-least-once} or {@code exactly-once}: the connector's own value of the setting. */
  String label() {
    return label;
  }

  boolean exactlyOnce() {
    return this == EXACTLY_ONCE;
  }

  /** What the worker template gets on top; nothing in the default mode. */
  Map<String, String> workerSettings() {
    return exactlyOnce() ? Map.of(WORKER_SUPPORT, "enabled") : Map.of();
  }

  /**
   * What the registered connector gets on top of its file: nothing in the default mode (the file as
   * it is); in exactly-once mode the guarantee and Connect's own requirement, so that a worker
   * without exactly-once support refuses the connector instead of running it at least once.
   */
  Map<String, String> connectorSettings() {
    Map<String, String> settings = new LinkedHashMap<>();
    if (exactlyOnce()) {
      settings.put(GUARANTEE, label);
      settings.put(CONNECTOR_SUPPORT, "required");
    }
    return settings;
  }

  /** The demo consumer's {@code isolation.level}: Kafka's default, or committed records only. */
  String isolationLevel() {
    return exactlyOnce() ? READ_COMMITTED : "read_uncommitted";
  }

  /** One line for {@code status} and the summary: what runs and how to read it. */
  String describe() {
    return exactlyOnce()
        ? "exactly-once (worker "
            + WORKER_SUPPORT
            + "=enabled, connector "
            + GUARANTEE
            + "=exactly-once; read with isolation.level=read_committed)"
        : "at-least-once (the default; ./local-stack.sh down, then up --exactly-once, for"
            + " exactly-once)";
  }

  /** The value stored in stack.properties; anything unknown (an older stack) is the default. */
  static Delivery fromLabel(String label) {
    return EXACTLY_ONCE.label.equals(label) ? EXACTLY_ONCE : AT_LEAST_ONCE;
  }
}
