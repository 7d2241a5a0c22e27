package dev.outboxrelay.mapping;

import static dev.outboxrelay.mapping.TestRows.NOW;
import static dev.outboxrelay.mapping.TestRows.row;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.outboxrelay.store.ClaimedMessage;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

/** Payloads and header values never reach a toString or an exception message. */
class RedactionTest {
  private static final String SENTINEL = "S3NT1NEL-personal-data";

  private static MappingSettings settings(PayloadFormat format) {
    return new MappingSettings("events", RoutingConvention.OUTBOX_RELAY, format, 64, "dlq");
  }

  private static void assertRedacted(Object rendered) {
    assertFalse(String.valueOf(rendered).contains(SENTINEL), () -> "leaked: " + rendered);
  }

  private static void assertRedacted(Throwable thrown) {
    for (Throwable t = thrown; t != null; t = t.getCause()) {
      assertRedacted(t.getMessage());
      assertRedacted(t.toString());
    }
  }

  @Test
  void noResultOrMapperRendersThePayloadOrHeaderValues() {
    List<ClaimedMessage> rows =
        List.of(
            // Mapped, every format.
            row()
                .payload("{\"secret\":\"" + SENTINEL + "\"}")
                .headersJson("{\"h\":\"" + SENTINEL + "\"}")
                .build(),
            // Each unpublishable reason with the sentinel in the offending part.
            row().payload("{\"secret\":\"" + SENTINEL + "\"").build(),
            row().payload("{\"" + SENTINEL + "\":1e400}").build(),
            row().payload("\"" + SENTINEL.repeat(4) + "\"").build(),
            row().headersJson("{\"h\":[\"" + SENTINEL + "\"]}").build(),
            row().headersJson("{\"outbox.message_id\":\"" + SENTINEL + "\"}").build(),
            row().topic("bad topic").payload(SENTINEL).build(),
            row().deliverBefore(NOW).payload(SENTINEL).build());

    Map<String, Integer> outcomes = new HashMap<>();
    for (PayloadFormat format : PayloadFormat.values()) {
      RecordMapper mapper = new RecordMapper(settings(format));
      assertRedacted(mapper);
      assertRedacted(mapper.settings());
      for (ClaimedMessage row : rows) {
        assertRedacted(row);
        MappingResult result = mapper.map(row);
        assertRedacted(result);
        outcomes.merge(result.getClass().getSimpleName(), 1, Integer::sum);
      }
    }
    // Both kinds of result were rendered: the loop really covered them.
    assertEquals(
        Map.of("Mapped", 7, "Unpublishable", 17),
        outcomes,
        "mapped: 1 (JSON) + 3 (BYTES skips JSON) + 3 (STRING, the same)");
  }

  @Test
  void exceptionsNeverQuoteTheRowOrTheArguments() {
    ClaimedMessage row =
        row().payload(SENTINEL).headersJson("{\"h\":\"" + SENTINEL + "\"}").build();
    RecordMapper withoutDlq =
        new RecordMapper(
            new MappingSettings(
                "events", RoutingConvention.OUTBOX_RELAY, PayloadFormat.JSON, 64, null));
    RecordMapper withDlq = new RecordMapper(settings(PayloadFormat.JSON));
    SourceRecord foreign =
        new SourceRecord(Map.of(), Map.of("message_id", List.of(SENTINEL)), "t", null, null);

    List<Throwable> thrown = new ArrayList<>();
    thrown.add(assertThrows(IllegalStateException.class, () -> withoutDlq.deadLetter(row, "X")));
    thrown.add(
        assertThrows(IllegalArgumentException.class, () -> withDlq.deadLetter(row, SENTINEL)));
    thrown.add(
        assertThrows(IllegalArgumentException.class, () -> SourceOffsets.messageId(foreign)));
    thrown.add(
        assertThrows(IllegalArgumentException.class, () -> SourceOffsets.leaseToken(foreign)));
    thrown.add(
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new MappingSettings(
                    "events",
                    RoutingConvention.OUTBOX_RELAY,
                    PayloadFormat.JSON,
                    64,
                    SENTINEL + " ")));

    thrown.forEach(RedactionTest::assertRedacted);
  }
}
