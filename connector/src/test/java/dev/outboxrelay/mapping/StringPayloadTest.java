package dev.outboxrelay.mapping;

import static dev.outboxrelay.mapping.TestRows.row;
import static dev.outboxrelay.mapping.TestRows.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.outboxrelay.mapping.MappingResult.Mapped;
import dev.outboxrelay.mapping.MappingResult.Unpublishable;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

/**
 * {@code payload.format=string}: the payload as the Connect string Debezium's outbox event router
 * sends for a text-like payload column, and never a guess at bytes that are not UTF-8.
 */
class StringPayloadTest {
  private static final RecordMapper MAPPER =
      new RecordMapper(
          new MappingSettings(
              RoutingConvention.DEBEZIUM.defaultTopicTemplate(),
              RoutingConvention.DEBEZIUM,
              PayloadFormat.STRING,
              1_000,
              null));

  @Test
  void theValueIsThePayloadsTextWithAnOptionalStringSchema() {
    SourceRecord record =
        assertInstanceOf(
                Mapped.class, MAPPER.map(row().payload(utf8("{\"name\": \"Zoë\"}")).build()))
            .record();
    assertEquals("{\"name\": \"Zoë\"}", record.value());
    assertEquals(Schema.OPTIONAL_STRING_SCHEMA, record.valueSchema());
  }

  @Test
  void aNullPayloadIsANullValue() {
    SourceRecord record =
        assertInstanceOf(Mapped.class, MAPPER.map(row().payload((byte[]) null).build())).record();
    assertNull(record.value());
  }

  @Test
  void bytesThatAreNotUtf8AreUnpublishable() {
    byte[] latin1 = {'Z', 'o', (byte) 0xEB};
    assertEquals(
        UnpublishableReasons.PAYLOAD_INVALID_TEXT,
        assertInstanceOf(Unpublishable.class, MAPPER.map(row().payload(latin1).build()))
            .reasonCode());
  }
}
