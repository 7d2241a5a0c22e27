package dev.outboxrelay.connect;

import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.HeldLease;
import dev.outboxrelay.store.Lease;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The rows this task has handed to Connect and not yet resolved, with the leases they are held
 * under. It bounds how much the task holds in memory, feeds lease renewal, and lets an
 * acknowledgement find its row's instance key and attempt count. Thread-safe: poll adds, the
 * outcome writer removes.
 *
 * <p>An entry keeps only what an outcome needs, never the payload: with several batches of 1 MiB
 * payloads in flight, the ledger would otherwise pin them until Kafka acknowledges.
 */
final class InFlightLedger {

  /** One handed record: its lease, and what Kafka's acknowledgement should record. */
  record Entry(
      String messageId,
      long seq,
      String instanceKey,
      Lease lease,
      int attempts,
      String deadLetterReason) {
    boolean isDeadLetter() {
      return deadLetterReason != null;
    }

    HeldLease heldLease() {
      return new HeldLease(messageId, seq, lease);
    }
  }

  private final ConcurrentMap<String, Entry> entries = new ConcurrentHashMap<>();

  void add(ClaimedMessage message, String deadLetterReason) {
    entries.put(
        message.messageId(),
        new Entry(
            message.messageId(),
            message.seq(),
            message.instanceKey(),
            message.lease(),
            message.attempts(),
            deadLetterReason));
  }

  Optional<Entry> get(String messageId) {
    return Optional.ofNullable(entries.get(messageId));
  }

  /** Removes the entry only if it is still the claim with this token; true if it did. */
  boolean resolve(String messageId, long token) {
    boolean[] removed = {false};
    entries.computeIfPresent(
        messageId,
        (id, e) -> {
          if (e.lease().token() == token) {
            removed[0] = true;
            return null;
          }
          return e;
        });
    return removed[0];
  }

  int size() {
    return entries.size();
  }

  /**
   * Whether resolving entries, from {@code sizeBefore} to {@code sizeAfter}, is news to a waiting
   * {@code poll()}: it freed room under {@code maxInFlight} for the next claim, or emptied the
   * ledger (what an isolated reclaim waits for). Other resolutions do not wake it: a trickle's
   * every acknowledgement would otherwise be followed by a claim that finds nothing.
   */
  static boolean freesPoll(int sizeBefore, int sizeAfter, int maxInFlight) {
    return sizeAfter == 0 || (sizeBefore >= maxInFlight && sizeAfter < maxInFlight);
  }

  boolean isEmpty() {
    return entries.isEmpty();
  }

  List<HeldLease> heldLeases() {
    return entries.values().stream().map(Entry::heldLease).toList();
  }

  /** The seqs of the rows held now. */
  List<Long> heldSeqs() {
    return entries.values().stream().map(Entry::seq).toList();
  }
}
