package dev.outboxrelay.connect;

import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.HeldLease;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The rows this task has handed to Connect and not yet resolved, with the leases they are held
 * under. It bounds how much the task holds in memory, feeds lease renewal, and lets an
 * acknowledgement find its row's instance key and attempt count. Thread-safe: poll adds, the
 * outcome writer removes.
 */
final class InFlightLedger {

  /** One handed record: the claim, and what Kafka's acknowledgement should record. */
  record Entry(ClaimedMessage message, String deadLetterReason) {
    boolean isDeadLetter() {
      return deadLetterReason != null;
    }
  }

  private final ConcurrentMap<String, Entry> entries = new ConcurrentHashMap<>();

  void add(ClaimedMessage message, String deadLetterReason) {
    entries.put(message.messageId(), new Entry(message, deadLetterReason));
  }

  Optional<Entry> get(String messageId) {
    return Optional.ofNullable(entries.get(messageId));
  }

  /** Removes the entry only if it is still the claim with this token. */
  void resolve(String messageId, long token) {
    entries.computeIfPresent(messageId, (id, e) -> e.message().lease().token() == token ? null : e);
  }

  int size() {
    return entries.size();
  }

  boolean isEmpty() {
    return entries.isEmpty();
  }

  List<HeldLease> heldLeases() {
    return entries.values().stream().map(e -> e.message().heldLease()).toList();
  }
}
