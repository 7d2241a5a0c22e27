package dev.outboxrelay.mapping;

import static dev.outboxrelay.mapping.TestRows.row;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.outboxrelay.mapping.MappingResult.Mapped;
import dev.outboxrelay.store.Lease;
import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

class SourceOffsetsTest {
  private final RecordMapper mapper =
      new RecordMapper(
          new MappingSettings(
              "events", RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES, 1024, null));

  private SourceRecord mapped(String messageId, long token) {
    return assertInstanceOf(
            Mapped.class,
            mapper.map(
                row().messageId(messageId).seq(token + 40).lease(new Lease("w", token)).build()))
        .record();
  }

  @Test
  void helpersFindTheRowAndLeaseOfARecord() {
    SourceRecord first = mapped("m-1", 3);
    SourceRecord second = mapped("m-2", Long.MAX_VALUE);

    assertEquals("m-1", SourceOffsets.messageId(first));
    assertEquals(3L, SourceOffsets.leaseToken(first));
    assertEquals(43L, SourceOffsets.seq(first));
    assertEquals("m-2", SourceOffsets.messageId(second));
    assertEquals(Long.MAX_VALUE, SourceOffsets.leaseToken(second));
  }

  @Test
  void helpersStillWorkAfterATransformRewroteTheRecord() {
    SourceRecord original = mapped("m-3", 9);
    SourceRecord transformed =
        original.newRecord("renamed", 4, Schema.STRING_SCHEMA, "k", Schema.STRING_SCHEMA, "v", 1L);

    assertEquals("m-3", SourceOffsets.messageId(transformed));
    assertEquals(9L, SourceOffsets.leaseToken(transformed));
    assertEquals(49L, SourceOffsets.seq(transformed));
  }

  @Test
  void anIntegerTokenIsAccepted() {
    SourceRecord record =
        new SourceRecord(
            Map.of("instance_key", "k"),
            Map.of("message_id", "m", "lease_token", 5, "seq", 1L),
            "t",
            null,
            null);

    assertEquals(5L, SourceOffsets.leaseToken(record));
    assertEquals(1L, SourceOffsets.seq(record));
  }

  @Test
  void recordsNotMadeByTheMapperAreRejected() {
    SourceRecord foreign =
        new SourceRecord(Map.of("file", "x"), Map.of("position", 10L), "t", null, null);
    SourceRecord noOffset = new SourceRecord(null, null, "t", null, null);
    SourceRecord wrongTypes =
        new SourceRecord(Map.of(), Map.of("message_id", 1L, "lease_token", "7"), "t", null, null);

    for (SourceRecord record : new SourceRecord[] {foreign, noOffset, wrongTypes}) {
      assertThrows(IllegalArgumentException.class, () -> SourceOffsets.messageId(record));
      assertThrows(IllegalArgumentException.class, () -> SourceOffsets.leaseToken(record));
      assertThrows(IllegalArgumentException.class, () -> SourceOffsets.seq(record));
    }
  }
}
