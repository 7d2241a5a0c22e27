package dev.outboxrelay.connect;

import dev.outboxrelay.mapping.MappingResult;
import dev.outboxrelay.mapping.RecordMapper;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;
import java.util.ArrayList;
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
 */
final class RecordHandoff {
  private static final Logger log = LoggerFactory.getLogger(RecordHandoff.class);

  private final RecordMapper mapper;
  private final InFlightLedger ledger;
  private final Predicate<PendingOutcome> submit;
  private final RelayMetrics metrics;
  private final String owner;

  RecordHandoff(
      RecordMapper mapper,
      InFlightLedger ledger,
      Predicate<PendingOutcome> submit,
      RelayMetrics metrics,
      String owner) {
    this.mapper = mapper;
    this.ledger = ledger;
    this.submit = submit;
    this.metrics = metrics;
    this.owner = owner;
  }

  /** The records to hand to Connect for these claimed rows; every row enters the ledger. */
  List<SourceRecord> toRecords(List<ClaimedMessage> claimed) {
    List<SourceRecord> records = new ArrayList<>(claimed.size());
    for (ClaimedMessage row : claimed) {
      MappingResult result = mapper.map(row);
      if (result instanceof MappingResult.Mapped mapped) {
        ledger.add(row, null);
        records.add(mapped.record());
      } else if (result instanceof MappingResult.Unpublishable bad) {
        log.warn(
            "Message cannot be published: message_id={} instance_key={} reason={}",
            row.messageId(),
            row.instanceKey(),
            bad.reasonCode());
        ledger.add(row, bad.reasonCode());
        if (mapper.settings().hasDeadLetterTopic()) {
          records.add(mapper.deadLetter(row, bad.reasonCode()));
        } else {
          submit.test(
              new PendingOutcome.Failed(row.messageId(), row.lease(), bad.reasonCode(), false));
        }
      }
    }
    metrics.inFlight.set(ledger.size());
    return records;
  }

  /**
   * What an acknowledgement records. Only metadata with an offset proves a write: none means a drop
   * or a tolerated failure, and an offset of -1 a producer with acks=0.
   */
  PendingOutcome outcomeOf(String messageId, long token, RecordMetadata metadata) {
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
        lease,
        new KafkaCoordinates(metadata.topic(), metadata.partition(), metadata.offset()));
  }
}
