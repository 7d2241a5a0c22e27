package dev.outboxrelay.connect;

import dev.outboxrelay.mapping.MappingResult;
import dev.outboxrelay.mapping.RecordMapper;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.Outcome;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.function.Predicate;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.connect.source.SourceRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Both ends of a record's trip through Connect: claimed rows become records entered in the ledger
 * (an unpublishable row goes to the dead-letter topic, or straight to FAILED), and Kafka's
 * acknowledgement of a record becomes the outcome its row should record.
 *
 * <p>Exactly-once: each record moves to its bucket's source partition with the row's position in
 * its offset, and an unpublishable row is parked FAILED <em>before</em> its batch is handed over
 * (its dead-letter record, when configured, still goes in the batch's transaction). Until every
 * park of a batch is written the batch is held and nothing new is claimed: a later record of the
 * bucket would otherwise cover the position of a row that was never sent (docs/design.md).
 */
final class RecordHandoff {
  private static final Logger log = LoggerFactory.getLogger(RecordHandoff.class);

  private final RecordMapper mapper;
  private final InFlightLedger ledger;
  private final Predicate<PendingOutcome> submit;
  private final RelayMetrics metrics;
  private final String owner;
  private final ExactlyOnceState exactlyOnce;
  private final OutboxStore store;

  /** Exactly-once: the records of a batch whose parks are not all written yet, or null. */
  private HeldBatch held;

  RecordHandoff(
      RecordMapper mapper,
      InFlightLedger ledger,
      Predicate<PendingOutcome> submit,
      RelayMetrics metrics,
      String owner) {
    this(mapper, ledger, submit, metrics, owner, null, null);
  }

  /**
   * @param exactlyOnce the task's exactly-once state, or null in at-least-once mode
   * @param store where an exactly-once batch parks its unpublishable rows, on the task thread
   */
  RecordHandoff(
      RecordMapper mapper,
      InFlightLedger ledger,
      Predicate<PendingOutcome> submit,
      RelayMetrics metrics,
      String owner,
      ExactlyOnceState exactlyOnce,
      OutboxStore store) {
    this.exactlyOnce = exactlyOnce;
    this.store = store;
    this.mapper = mapper;
    this.ledger = ledger;
    this.submit = submit;
    this.metrics = metrics;
    this.owner = owner;
  }

  /** The records to hand to Connect for these claimed rows; every row enters the ledger. */
  List<SourceRecord> toRecords(List<ClaimedMessage> claimed) {
    if (exactlyOnce != null) {
      return toPositionedRecords(claimed);
    }
    List<SourceRecord> records = new ArrayList<>(claimed.size());
    for (ClaimedMessage row : claimed) {
      MappingResult result = mapper.map(row);
      if (result instanceof MappingResult.Mapped mapped) {
        ledger.add(row, null);
        records.add(mapped.record());
      } else if (result instanceof MappingResult.Unpublishable bad) {
        logUnpublishable(row, bad.reasonCode());
        ledger.add(row, bad.reasonCode());
        if (mapper.settings().hasDeadLetterTopic()) {
          records.add(mapper.deadLetter(row, bad.reasonCode()));
        } else if (!submit.test(
            new PendingOutcome.Failed(row.messageId(), row.lease(), bad.reasonCode(), false))) {
          metrics.lateAcks.incrementAndGet();
          log.warn(
              "Outcome not queued, the outcome writer has stopped: message_id={} (reason=LATE_ACK;"
                  + " a later claim or the next instance's recovery settles the row)",
              row.messageId());
        }
      }
    }
    metrics.inFlight.set(ledger.size());
    return records;
  }

  /** Exactly-once: whether a batch waits for its parks (then {@link #releaseHeld} first). */
  boolean hasHeld() {
    return held != null;
  }

  /**
   * Exactly-once: writes the held batch's remaining parks, then hands its records over.
   *
   * @throws dev.outboxrelay.store.OutboxStoreException if a park cannot be written; the batch stays
   *     held
   */
  List<SourceRecord> releaseHeld() {
    HeldBatch batch = held;
    while (!batch.parks.isEmpty()) {
      Park park = batch.parks.peek();
      Outcome outcome = store.markFailed(park.row.messageId(), park.row.lease(), park.reasonCode);
      batch.parks.remove();
      if (outcome == Outcome.CLAIM_LOST) {
        metrics.claimLost.incrementAndGet();
        log.warn(
            "Claim lost before parking: message_id={} instance_key={} (reason=LEASE_TAKEN_OVER)",
            park.row.messageId(),
            park.row.instanceKey());
      } else if (park.deadLettered) {
        metrics.deadLettered.incrementAndGet();
      } else {
        metrics.failed.incrementAndGet();
      }
    }
    held = null;
    return batch.records;
  }

  private List<SourceRecord> toPositionedRecords(List<ClaimedMessage> claimed) {
    List<SourceRecord> records = new ArrayList<>(claimed.size());
    Deque<Park> parks = new ArrayDeque<>();
    for (ClaimedMessage row : claimed) {
      MappingResult result = mapper.map(row);
      if (result instanceof MappingResult.Mapped mapped) {
        ledger.add(row, null);
        records.add(exactlyOnce.atPosition(mapped.record(), row, false));
      } else if (result instanceof MappingResult.Unpublishable bad) {
        logUnpublishable(row, bad.reasonCode());
        boolean deadLetter = mapper.settings().hasDeadLetterTopic();
        parks.add(new Park(row, bad.reasonCode(), deadLetter));
        if (deadLetter) {
          records.add(exactlyOnce.atPosition(mapper.deadLetter(row, bad.reasonCode()), row, true));
        }
      }
    }
    metrics.inFlight.set(ledger.size());
    held = new HeldBatch(records, parks);
    return releaseHeld();
  }

  private static void logUnpublishable(ClaimedMessage row, String reasonCode) {
    log.warn(
        "Message cannot be published: message_id={} instance_key={} reason={}",
        row.messageId(),
        row.instanceKey(),
        reasonCode);
  }

  private record Park(ClaimedMessage row, String reasonCode, boolean deadLettered) {}

  private record HeldBatch(List<SourceRecord> records, Deque<Park> parks) {}

  /**
   * What an acknowledgement records. Only metadata with an offset proves a write: none means a drop
   * or a tolerated failure, and an offset of -1 a producer with acks=0.
   */
  PendingOutcome outcomeOf(String messageId, long seq, long token, RecordMetadata metadata) {
    Lease lease = new Lease(owner, token);
    if (metadata == null) {
      return new PendingOutcome.Unconfirmed(
          messageId, lease, PendingOutcome.Unconfirmed.NO_METADATA);
    }
    if (!metadata.hasOffset()) {
      return new PendingOutcome.Unconfirmed(messageId, lease, PendingOutcome.Unconfirmed.NO_OFFSET);
    }
    var entry = ledger.get(messageId);
    if (entry.isPresent() && entry.get().isDeadLetter()) {
      return new PendingOutcome.Failed(messageId, lease, entry.get().deadLetterReason(), true);
    }
    return new PendingOutcome.Published(
        messageId,
        seq,
        lease,
        new KafkaCoordinates(metadata.topic(), metadata.partition(), metadata.offset()));
  }
}
