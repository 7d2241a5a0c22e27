package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.mapping.MappingSettings;
import dev.outboxrelay.mapping.PayloadFormat;
import dev.outboxrelay.mapping.RecordMapper;
import dev.outboxrelay.mapping.RoutingConvention;
import dev.outboxrelay.mapping.SourceOffsets;
import dev.outboxrelay.metrics.RelayMetrics;
import dev.outboxrelay.store.BucketShare;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.testing.LogCapture;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

/** At least once, the records of a claim, and the FAILED outcomes of its unpublishable rows. */
class RecordHandoffTest {
  private final RelayMetrics metrics = new RelayMetrics();
  private final InFlightLedger ledger = new InFlightLedger();
  private final RecordMapper mapper = mapper(null);

  private static RecordMapper mapper(String deadLetterTopic) {
    return new RecordMapper(
        new MappingSettings(
            RoutingConvention.OUTBOX_RELAY.defaultTopicTemplate(),
            RoutingConvention.OUTBOX_RELAY,
            PayloadFormat.BYTES,
            1024,
            deadLetterTopic));
  }

  private static ClaimedMessage row(String id, String topic) {
    return ClaimedRows.claimed(id, 7, topic, new byte[] {1}, 1);
  }

  /**
   * A mapping that throws (a bug) fails the claim naming the row and the error's class, not its
   * message (which may quote the row's data), before any row of it enters the ledger or has an
   * outcome queued: nothing is left to be waited for, renewed or settled at a stop, and the claim
   * can be given back whole.
   */
  @Test
  void aMappingThatThrowsLeavesNothingOfItsClaimBehind() {
    List<PendingOutcome> queued = new ArrayList<>();
    RecordHandoff handoff = new RecordHandoff(mapper, ledger, queued::add, metrics, "owner");
    handoff.mapWith(
        row -> {
          if (row.messageId().equals("third")) {
            throw new IllegalStateException("row data: card 4111");
          }
          return mapper.map(row);
        });

    long mark = LogCapture.get().mark();
    MappingFailedException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            MappingFailedException.class,
            () ->
                handoff.toRecords(
                    List.of(
                        row("bad", "__consumer_offsets"), row("good", null), row("third", null))));

    // Where it threw is logged (the report the failure asks for), its message never.
    List<LogCapture.Event> where =
        LogCapture.get().matching(mark, l -> l.message().startsWith("Mapping message_id=third"));
    assertEquals(1, where.size(), where::toString);
    assertEquals("ERROR", where.get(0).level());
    assertTrue(
        where.get(0).message().contains(RecordHandoffTest.class.getName() + ".lambda$"),
        where::toString);
    assertFalse(where.get(0).message().contains("4111"), where::toString);

    assertEquals("third", e.messageId());
    assertTrue(e.getMessage().contains("error=java.lang.IllegalStateException"), e::getMessage);
    assertFalse(e.getMessage().contains("4111"), e::getMessage);
    assertEquals(null, e.getCause());
    assertEquals(0, ledger.size());
    assertEquals(List.of(), queued, "the unpublishable row's park not queued either");
  }

  /**
   * A stack overflow in the mapping (a payload nested as deep as the mappers accept, on a thread
   * stack well under the JVM's default) fails the row's mapping, named, as any other bug: it
   * escaped as an Error that named no row, and the task failed.
   */
  @Test
  void aStackOverflowInTheMappingNamesTheRow() {
    RecordHandoff handoff = new RecordHandoff(mapper, ledger, o -> true, metrics, "owner");
    handoff.mapWith(
        row -> {
          throw new StackOverflowError();
        });

    MappingFailedException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            MappingFailedException.class, () -> handoff.toRecords(List.of(row("deep", null))));

    assertEquals("deep", e.messageId());
    assertTrue(e.getMessage().contains("error=java.lang.StackOverflowError"), e::getMessage);
    assertEquals(0, ledger.size());
  }

  @Test
  void anUnpublishableRowsOutcomeIsQueuedAndItsNeighbourHandedOver() {
    List<PendingOutcome> queued = new ArrayList<>();
    RecordHandoff handoff = new RecordHandoff(mapper, ledger, queued::add, metrics, "owner");

    var records = handoff.toRecords(List.of(row("bad", "__consumer_offsets"), row("good", null)));

    assertEquals(1, records.size());
    assertEquals(1, queued.size());
    assertEquals("bad", queued.get(0).messageId());
    assertEquals(2, ledger.size());
  }

  /**
   * A dead-letter record that Kafka did not confirm (dropped by a transform, a tolerated failure):
   * the row is parked FAILED with the reason it is unpublishable, not retried until it is EXHAUSTED
   * as DELIVERY_UNCONFIRMED, which hid that reason from the operator.
   */
  @Test
  void anUnconfirmedDeadLetterRecordParksItsRowWithItsOwnReason() {
    RecordHandoff handoff = new RecordHandoff(mapper("dlq"), ledger, o -> true, metrics, "owner");
    var records = handoff.toRecords(List.of(row("bad", "__consumer_offsets")));
    assertEquals("dlq", records.get(0).topic());
    String reason = "TOPIC_UNROUTABLE"; // a topic of Kafka's own

    PendingOutcome outcome = handoff.outcomeOf(records.get(0), "bad", 1, 7, null);

    assertEquals(new PendingOutcome.Failed("bad", new Lease("owner", 7), reason, null), outcome);
  }

  /**
   * A confirmed dead-letter record: the row is parked FAILED with where its copy is, which tells an
   * operator (list, inspect, discard --dead-lettered) that it is not the only one.
   */
  @Test
  void aConfirmedDeadLetterRecordParksItsRowWithTheCopysPosition() {
    RecordHandoff handoff = new RecordHandoff(mapper("dlq"), ledger, o -> true, metrics, "owner");
    var records = handoff.toRecords(List.of(row("bad", "__consumer_offsets")));
    String reason = "TOPIC_UNROUTABLE"; // a topic of Kafka's own

    PendingOutcome outcome =
        handoff.outcomeOf(
            records.get(0),
            "bad",
            1,
            7,
            new RecordMetadata(new TopicPartition("dlq", 4), 41, 0, 0L, 0, 0));

    assertEquals(
        new PendingOutcome.Failed(
            "bad", new Lease("owner", 7), reason, new KafkaCoordinates("dlq", 4, 41)),
        outcome);
  }

  /**
   * The same owner claimed a row again under the same token (its first claim lost in a database
   * crash), mapped otherwise the second time: each record's acknowledgement records what that
   * record was. Told by the ledger's entry, which the second claim replaced, the dead-letter copy's
   * acknowledgement recorded the row PUBLISHED at the dead-letter topic's coordinates, before its
   * own record was in Kafka.
   */
  @Test
  void eachAcknowledgementRecordsWhatItsOwnRecordWas() {
    RecordHandoff handoff = new RecordHandoff(mapper("dlq"), ledger, o -> true, metrics, "owner");
    SourceRecord deadLetter = handoff.toRecords(List.of(row("row", "__consumer_offsets"))).get(0);
    String reason = "TOPIC_UNROUTABLE";
    SourceRecord published = handoff.toRecords(List.of(row("row", "orders"))).get(0);
    assertEquals("orders", published.topic());

    assertEquals(
        new PendingOutcome.Failed(
            "row", new Lease("owner", 7), reason, new KafkaCoordinates("dlq", 0, 3)),
        handoff.outcomeOf(
            deadLetter,
            "row",
            1,
            7,
            new RecordMetadata(new TopicPartition("dlq", 0), 3, 0, 0L, 0, 0)));
    assertEquals(
        new PendingOutcome.Published(
            "row", 1, new Lease("owner", 7), new KafkaCoordinates("orders", 2, 5)),
        handoff.outcomeOf(
            published,
            "row",
            1,
            7,
            new RecordMetadata(new TopicPartition("orders", 2), 5, 0, 0L, 0, 0)));
  }

  /**
   * A transform that removes a header in place changes the record Connect acknowledges (it shares
   * the headers object): the copy is still told by its topic and its reason by its source offset.
   * Told by the header, its acknowledgement recorded the row PUBLISHED at the dead-letter topic.
   */
  @Test
  void aDeadLetterCopyIsToldWhateverATransformDidToItsHeaders() {
    RecordHandoff handoff = new RecordHandoff(mapper("dlq"), ledger, o -> true, metrics, "owner");
    SourceRecord deadLetter = handoff.toRecords(List.of(row("bad", "__consumer_offsets"))).get(0);
    deadLetter.headers().remove("outbox.failure_reason"); // a transform's DropHeaders, in place
    assertEquals(
        new PendingOutcome.Failed(
            "bad", new Lease("owner", 7), "TOPIC_UNROUTABLE", new KafkaCoordinates("dlq", 1, 9)),
        handoff.outcomeOf(
            deadLetter,
            "bad",
            1,
            7,
            new RecordMetadata(new TopicPartition("dlq", 1), 9, 0, 0L, 0, 0)));
  }

  /** At stop the queue refuses: the row comes back after its lease, and that is not silent. */
  @Test
  void aFailedOutcomeTheStoppingTaskCannotQueueIsReportedLate() {
    RecordHandoff handoff = new RecordHandoff(mapper, ledger, o -> false, metrics, "owner");
    long mark = LogCapture.get().mark();

    handoff.toRecords(List.of(row("bad", "__consumer_offsets")));

    assertEquals(1, metrics.lateAcks.get());
    assertEquals(
        1,
        LogCapture.get()
            .matching(
                mark,
                e -> e.message().contains("message_id=bad") && e.message().contains("LATE_ACK"))
            .size());
  }

  /** A message id from a row cannot forge a log line of its own, nor reorder one. */
  /**
   * Exactly once, a batch whose parks were written but which a stop kept from Connect: each parked
   * row is reported as the operator must act on it (requeue), with its instance key and reason, as
   * a park whose batch never left is elsewhere.
   */
  @Test
  void aParkedRowWhoseBatchNeverLeftIsReportedWithItsKeyAndReason() {
    RecordHandoff handoff = new RecordHandoff(mapper("dlq"), ledger, o -> true, metrics, "owner");
    ClaimedMessage row = row("m-9", "orders");
    SourceRecord parked =
        SourceOffsets.atPosition(
            mapper("dlq").deadLetter(row, "PAYLOAD_TOO_LARGE"),
            row,
            new BucketShare(4, 0, 1),
            1,
            1,
            true);
    long mark = LogCapture.get().mark();

    handoff.forgetUnsent(List.of(parked));

    List<LogCapture.Event> lines =
        LogCapture.get().matching(mark, e -> e.message().startsWith("Parked FAILED without"));
    assertEquals(1, lines.size(), lines::toString);
    assertEquals(
        "Parked FAILED without its dead-letter record, the task stopped before its batch left:"
            + " message_id=m-9 instance_key="
            + row.instanceKey()
            + " reason=PAYLOAD_TOO_LARGE (requeue it to send it again)",
        lines.get(0).message());
    assertEquals(1, metrics.failed.get());
  }

  @Test
  void aMessageIdIsLoggedWithItsControlAndFormatCharactersEscaped() {
    RecordHandoff handoff = new RecordHandoff(mapper, ledger, o -> true, metrics, "owner");
    long mark = LogCapture.get().mark();

    handoff.toRecords(List.of(row("id-1\nERROR forged\u202e", "__consumer_offsets")));

    List<LogCapture.Event> lines =
        LogCapture.get().matching(mark, e -> e.message().contains("ERROR forged"));
    assertEquals(1, lines.size(), lines::toString);
    assertTrue(
        lines.get(0).message().contains("message_id=id-1\\u000aERROR forged\\u202e "),
        lines.get(0)::message);
    assertFalse(lines.get(0).message().contains("\n"), lines.get(0)::message);
  }

  /**
   * Nor an instance key: the configuration refuses control, format and invisible characters in one,
   * but a row's key is logged as it is read, and a bidi override or a line separator would reorder
   * or split the line in some log viewers.
   */
  @Test
  void anInstanceKeyIsLoggedWithItsFormatCharactersEscaped() {
    RecordHandoff handoff = new RecordHandoff(mapper, ledger, o -> true, metrics, "owner");
    long mark = LogCapture.get().mark();
    ClaimedMessage claimed = row("id-2", "__consumer_offsets");
    ClaimedMessage keyed =
        new ClaimedMessage(
            claimed.seq(),
            claimed.messageId(),
            "eu\u2028reason=OK\u202e",
            claimed.aggregateType(),
            claimed.aggregateId(),
            claimed.eventType(),
            claimed.topic(),
            claimed.payload(),
            claimed.payloadBytes(),
            claimed.headersJson(),
            claimed.headersOmitted(),
            claimed.correlationId(),
            claimed.createdAt(),
            claimed.deliverBefore(),
            claimed.deadlineExpired(),
            claimed.attempts(),
            claimed.lease(),
            claimed.leaseExpiresAt(),
            claimed.aggregateHash());

    handoff.toRecords(List.of(keyed));

    List<LogCapture.Event> lines =
        LogCapture.get().matching(mark, e -> e.message().contains("message_id=id-2"));
    assertEquals(1, lines.size(), lines::toString);
    assertTrue(
        lines.get(0).message().contains("instance_key=eu\\u2028reason=OK\\u202e "),
        lines.get(0)::message);
  }
}
