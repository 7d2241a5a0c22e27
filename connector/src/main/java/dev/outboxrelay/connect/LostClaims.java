package dev.outboxrelay.connect;

import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Claims found lost by a lease renewal while their records still waited for Kafka. They were
 * reported (counted and logged) when found, and no longer hold an in-flight slot; the outcome of
 * their record, when it comes, must not be counted a second time. Bounded by the records handed to
 * Connect: each acknowledgement, or the task's stop, removes its entry.
 */
final class LostClaims {
  private final ConcurrentMap<String, InFlightLedger.Entry> lost = new ConcurrentHashMap<>();

  void add(InFlightLedger.Entry entry) {
    lost.put(entry.messageId(), entry);
  }

  /** Removes and returns the lost claim of this message under this token, if it was reported. */
  Optional<InFlightLedger.Entry> take(String messageId, long token) {
    InFlightLedger.Entry e = lost.get(messageId);
    if (e == null || e.lease().token() != token || !lost.remove(messageId, e)) {
      return Optional.empty();
    }
    return Optional.of(e);
  }

  int size() {
    return lost.size();
  }
}
