package dev.outboxrelay.connect;

import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.HeldLease;
import dev.outboxrelay.store.Lease;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The rows this task has handed to Connect and not yet resolved, with the leases they are held
 * under. It bounds how much the task holds in memory, feeds lease renewal, and lets an
 * acknowledgement find its row's instance key and attempt count. Thread-safe: poll adds, the
 * outcome writer removes.
 *
 * <p>A claim that a lease renewal found lost is no longer held (not renewed, not given back), but
 * its record may still wait in Connect and its producer: it stays counted ({@link #size}, {@link
 * #bytes}, {@link #isEmpty}) until its outcome comes, or the task stops. Dropped from the count at
 * once, it let the task claim a full budget again beside records still buffered (the producer's
 * {@code send} then blocks), claim an abandoned row "alone" beside them, and end a stop's grace
 * before their acknowledgements, counted again as late.
 *
 * <p>An entry keeps only what an outcome needs, never the payload: with several batches of 1 MiB
 * payloads in flight, the ledger would otherwise pin them until Kafka acknowledges. It counts the
 * records' estimated size instead ({@link #bytes}), which bounds what the task holds in Connect and
 * its producer.
 */
final class InFlightLedger {

  /** One handed record: its row's lease, key, attempts and estimated size. */
  record Entry(
      String messageId, long seq, String instanceKey, Lease lease, int attempts, long bytes) {
    HeldLease heldLease() {
      return new HeldLease(messageId, seq, lease);
    }
  }

  /**
   * What a record holds beside its payload and headers (key, topic, offsets, Kafka's record and
   * batch overhead, Connect's objects): an estimate, generous for small rows.
   */
  static final long RECORD_OVERHEAD_BYTES = 256;

  private final ConcurrentMap<String, Entry> entries = new ConcurrentHashMap<>();

  /** Claims reported lost at renewal whose records are still awaited, by message id and token. */
  private final ConcurrentMap<LostClaim, Entry> lost = new ConcurrentHashMap<>();

  /**
   * Exactly once: dead-letter records of rows parked before their batch left, awaited until Kafka
   * commits them. Their rows hold no lease (nothing to renew or settle), but the records are in
   * Connect and its producer as any other: uncounted, a run of unpublishable rows let every poll
   * claim a full batch, and with transaction.boundary=interval one transaction grew without bound.
   */
  private final ConcurrentMap<LostClaim, Entry> parked = new ConcurrentHashMap<>();

  private record LostClaim(String messageId, long token) {}

  /** The estimated size of the records held, lost and parked, in bytes. */
  private final AtomicLong bytes = new AtomicLong();

  /**
   * The records held, lost and parked, kept apart from the maps' sizes: a claim moving from held to
   * lost is in both maps for an instant, and a resolution that read the sum then as "still full"
   * left poll asleep until {@code poll.interval.ms}.
   */
  private final AtomicInteger count = new AtomicInteger();

  void add(ClaimedMessage message) {
    Entry entry = entryOf(message);
    Entry replaced = entries.put(message.messageId(), entry);
    counted(entry, replaced);
  }

  private void counted(Entry entry, Entry replaced) {
    bytes.addAndGet(entry.bytes() - (replaced == null ? 0 : replaced.bytes()));
    if (replaced == null) {
      count.incrementAndGet();
    }
  }

  private void uncounted(Entry entry) {
    bytes.addAndGet(-entry.bytes());
    count.decrementAndGet();
  }

  private static Entry entryOf(ClaimedMessage message) {
    return new Entry(
        message.messageId(),
        message.seq(),
        message.instanceKey(),
        message.lease(),
        message.attempts(),
        recordBytes(message));
  }

  /**
   * The estimated size of the record of {@code message}: its payload, headers, the row's text
   * fields (each becomes the key, the topic or a header; the table bounds none of them, so a
   * correlation id of kilobytes counted nothing) and overhead.
   */
  static long recordBytes(ClaimedMessage message) {
    long size = RECORD_OVERHEAD_BYTES;
    size += message.payload() == null ? 0 : message.payload().length;
    size += length(message.headersJson());
    size += length(message.aggregateId());
    size += length(message.messageId());
    size += length(message.aggregateType());
    size += length(message.eventType());
    size += length(message.topic());
    size += length(message.correlationId());
    return size;
  }

  private static long length(String text) {
    return text == null ? 0 : text.length();
  }

  /** Exactly once: the dead-letter record of {@code message}, parked, handed to Connect. */
  void addParked(ClaimedMessage message) {
    Entry entry = entryOf(message);
    Entry replaced = parked.put(new LostClaim(message.messageId(), message.lease().token()), entry);
    counted(entry, replaced);
  }

  /** The parked row's dead-letter record was settled (committed, dropped or never sent). */
  boolean resolveParked(String messageId, long token) {
    Entry e = parked.remove(new LostClaim(messageId, token));
    if (e != null) {
      uncounted(e);
    }
    return e != null;
  }

  Optional<Entry> get(String messageId) {
    return Optional.ofNullable(entries.get(messageId));
  }

  /**
   * Removes the entry only if it is still the claim with this token; true if it did. Else its
   * record's lost claim, if a renewal reported one, goes (its record was settled or never sent): a
   * claim is held or lost, never both, so an entry removed needs no second look.
   */
  boolean resolve(String messageId, long token) {
    boolean[] removed = {false};
    entries.computeIfPresent(
        messageId,
        (id, e) -> {
          if (e.lease().token() == token) {
            removed[0] = true;
            uncounted(e);
            return null;
          }
          return e;
        });
    if (!removed[0] && !lost.isEmpty()) {
      takeLost(messageId, token);
    }
    return removed[0];
  }

  /**
   * A lease renewal found this claim lost: it is no longer held, and stays counted until its
   * record's outcome ({@link #takeLost}). Empty if it is not held under this token (settled
   * meanwhile). Atomic with {@link #resolve} of the same row, which a stop runs on another thread
   * (a batch forgotten): either the row is resolved first and not marked, or marked first and
   * resolved from the lost, its bytes counted off once.
   */
  Optional<Entry> markLost(String messageId, long token) {
    Entry[] moved = {null};
    entries.computeIfPresent(
        messageId,
        (id, e) -> {
          if (e.lease().token() != token) {
            return e;
          }
          // Counted as lost before it leaves the held: never both absent to isEmpty().
          Entry replaced = lost.put(new LostClaim(messageId, token), e);
          if (replaced != null) { // a claim is lost once; counted once all the same
            uncounted(replaced);
          }
          moved[0] = e;
          return null;
        });
    return Optional.ofNullable(moved[0]);
  }

  /** Removes and returns the claim of this record that a renewal reported lost, if it did. */
  Optional<Entry> takeLost(String messageId, long token) {
    Entry e = lost.remove(new LostClaim(messageId, token));
    if (e != null) {
      uncounted(e);
    }
    return Optional.ofNullable(e);
  }

  /**
   * Records handed to Connect and not yet resolved: held, lost and still awaited, or dead letters
   * of parked rows still awaited.
   */
  int size() {
    return count.get();
  }

  /** Claims reported lost at renewal whose records are still awaited. */
  int lostSize() {
    return lost.size();
  }

  /** The estimated size of the records held or lost and still awaited, in bytes. */
  long bytes() {
    return bytes.get();
  }

  /** Whether the task holds as many records, or as many bytes of them, as it may: no claim now. */
  boolean isFull(TaskSettings settings) {
    return size() >= settings.maxInFlight() || bytes() >= settings.maxInFlightBytes();
  }

  /**
   * Whether resolving entries is news to a waiting {@code poll()}: it made room for the next claim
   * ({@code fullBefore} and no longer {@code fullAfter}), or emptied the ledger (what an isolated
   * reclaim waits for). Other resolutions do not wake it: a trickle's every acknowledgement would
   * otherwise be followed by a claim that finds nothing.
   */
  static boolean freesPoll(boolean fullBefore, boolean fullAfter, boolean emptyAfter) {
    return emptyAfter || (fullBefore && !fullAfter);
  }

  /** Nothing held, and no lost claim's or parked row's record still awaited. */
  boolean isEmpty() {
    return entries.isEmpty() && lost.isEmpty() && parked.isEmpty();
  }

  List<HeldLease> heldLeases() {
    return entries.values().stream().map(Entry::heldLease).toList();
  }

  /** The seqs of the rows held now. */
  List<Long> heldSeqs() {
    return entries.values().stream().map(Entry::seq).toList();
  }
}
