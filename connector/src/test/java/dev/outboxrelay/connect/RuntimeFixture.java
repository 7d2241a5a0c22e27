package dev.outboxrelay.connect;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.ManualClock;
import dev.outboxrelay.store.memory.InMemoryOutboxStore;
import dev.outboxrelay.writer.OutboxMessage;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * An in-memory store and the pieces of a task's runtime around it, for the runtime's unit tests.
 */
final class RuntimeFixture {
  static final String OWNER = "task-under-test";

  final ManualClock clock = new ManualClock(Instant.parse("2026-11-29T12:00:00Z"));
  final InMemoryOutboxStore store = new InMemoryOutboxStore(clock);
  final InFlightLedger ledger = new InFlightLedger();
  final RelayMetrics metrics = new RelayMetrics();
  final WakeSignal wake = new WakeSignal();
  final OutboxSourceConfig config;
  final TaskSettings settings;

  RuntimeFixture(Map<String, String> overrides) {
    this(overrides, 0, 1);
  }

  /** As task {@code taskIndex} of {@code taskCount}. */
  RuntimeFixture(Map<String, String> overrides, int taskIndex, int taskCount) {
    Map<String, String> props = new HashMap<>();
    props.put("connection.url", "jdbc:postgresql://localhost:1/unused");
    props.put("instance.keys", "eu");
    props.put("max.attempts", "3");
    props.putAll(overrides);
    config = new OutboxSourceConfig(props);
    settings = TaskSettingsFactory.from(config, OWNER, taskIndex, taskCount);
    metrics.readInFlightFrom(ledger::size, ledger::bytes);
  }

  void add(String instanceKey, String messageId, String aggregateId) {
    add(instanceKey, messageId, aggregateId, "{}".getBytes());
  }

  void add(String instanceKey, String messageId, String aggregateId, byte[] payload) {
    store.enqueue(
        instanceKey,
        OutboxMessage.builder()
            .messageId(messageId)
            .aggregateType("order")
            .aggregateId(aggregateId)
            .eventType("OrderPlaced")
            .payload(payload)
            .build());
  }

  /** Claims what is due as the task would, and hands it to the ledger. */
  List<ClaimedMessage> claimIntoLedger() {
    List<ClaimedMessage> claimed = store.claim(settings.claimRequest()).claimed();
    claimed.forEach(m -> ledger.add(m));
    return claimed;
  }

  /** The lease runs out and another owner reclaims the (abandoned) row, as after a crash. */
  ClaimedMessage takeOverAfterExpiry(String owner) {
    clock.advance(settings.leaseDuration().plusSeconds(1));
    ClaimRequest mine = settings.claimRequest();
    return store
        .claimAbandoned(
            new ClaimRequest(
                owner,
                mine.instanceKeys(),
                1,
                mine.leaseDuration(),
                mine.maxAttempts(),
                mine.ordered()))
        .claimed()
        .get(0);
  }
}
