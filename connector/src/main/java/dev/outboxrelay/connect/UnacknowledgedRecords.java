package dev.outboxrelay.connect;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * Exactly once: the records handed to Connect that it has not acknowledged, to find those a
 * transform or predicate dropped when Connect never says so.
 *
 * <p>Connect's exactly-once task acknowledges a transaction's records, dropped ones included (no
 * metadata), right after the transaction commits, and then calls {@code SourceTask.commit()} on the
 * task thread. A stretch of records that were all dropped opens no transaction: Connect skips the
 * commit and the acknowledgements, keeping them until a later transaction commits, but still calls
 * {@code commit()} (read in connect-runtime 4.3.1, {@code ExactlyOnceWorkerSourceTask}). Such
 * records were acknowledged only once a record went through, so a task whose every record a
 * transform dropped never learnt of it: its rows stayed in flight, leases renewed, until the task
 * held its limit of batches and claimed nothing more, still RUNNING.
 *
 * <p>Connect polls again only once it has dispatched every record the last poll returned, so the
 * records handed over before a poll began have all been dispatched; a {@code commit()} after that
 * ended the transaction holding them, acknowledging them, or found none (a pause may commit
 * half-way through a poll's records, which is why the poll's start is the mark, not the commit).
 * One of them still unacknowledged then can only have been dropped, with either {@code
 * transaction.boundary}: found at the second poll after it was handed over.
 *
 * <p>Connect still holds the dropped records, and acknowledges them (no metadata) when a later
 * transaction commits: each one {@link #dropped} returned is kept until then, so that this second
 * acknowledgement is not written (fenced, it would be reported a lost claim). Connect keeps as
 * many.
 *
 * <p>Records are told apart by identity: Connect acknowledges the very records the task returned.
 */
final class UnacknowledgedRecords {
  private final Map<SourceRecord, Handed> handed = new IdentityHashMap<>();
  private long handOvers;
  private long handedRecords;

  /** Which hand-over a record came in, and its place among all records handed over. */
  private record Handed(long handOver, long place) {}

  /** The hand-overs made before the latest poll began: all dispatched. */
  private long dispatchedAtPoll;

  /** The hand-overs dispatched before the latest commit: settled then, or dropped. */
  private long settledThrough;

  /** {@link #settledThrough} when {@link #dropped} last looked: nothing older is left to find. */
  private long lookedThrough;

  /** Records {@link #dropped} returned, whose acknowledgement Connect still owes. */
  private final Set<SourceRecord> settledAsDropped =
      Collections.newSetFromMap(new IdentityHashMap<>());

  /** The records a poll returned. */
  synchronized void handedOver(List<SourceRecord> records) {
    handOvers++;
    for (SourceRecord record : records) {
      handed.put(record, new Handed(handOvers, handedRecords++));
    }
  }

  /**
   * Connect acknowledged {@code record}, with or without metadata: false when it was already
   * settled as dropped, an acknowledgement not to be written again.
   */
  synchronized boolean acknowledged(SourceRecord record) {
    handed.remove(record);
    return !settledAsDropped.remove(record);
  }

  /** A poll begins: Connect has dispatched every record handed over so far. */
  synchronized void pollBegins() {
    dispatchedAtPoll = handOvers;
  }

  /** Connect's exactly-once task ended a transaction, or found none to end, and said so. */
  synchronized void transactionEnded() {
    settledThrough = dispatchedAtPoll;
  }

  /**
   * The records dispatched before the latest transaction ended and never acknowledged: dropped, in
   * the order they were handed over. Each is returned once.
   */
  synchronized List<SourceRecord> dropped() {
    if (settledThrough == lookedThrough) {
      return List.of(); // each poll looks, and the map may hold every record in flight
    }
    lookedThrough = settledThrough;
    List<Map.Entry<SourceRecord, Handed>> dropped = new ArrayList<>();
    for (Iterator<Map.Entry<SourceRecord, Handed>> it = handed.entrySet().iterator();
        it.hasNext(); ) {
      Map.Entry<SourceRecord, Handed> entry = it.next();
      if (entry.getValue().handOver() <= settledThrough) {
        dropped.add(Map.entry(entry.getKey(), entry.getValue())); // an entry's view ends on remove
        it.remove();
      }
    }
    dropped.sort(Comparator.comparingLong(entry -> entry.getValue().place()));
    List<SourceRecord> records = dropped.stream().map(Map.Entry::getKey).toList();
    settledAsDropped.addAll(records);
    return records;
  }
}
