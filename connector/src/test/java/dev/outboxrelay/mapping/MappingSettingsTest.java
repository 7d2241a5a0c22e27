package dev.outboxrelay.mapping;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class MappingSettingsTest {
  private static final String TEMPLATE = "outbox.${aggregate_type}";

  @Test
  void acceptsASensibleConfiguration() {
    MappingSettings withDlq =
        new MappingSettings(
            TEMPLATE, RoutingConvention.OUTBOX_RELAY, PayloadFormat.JSON, 1, "outbox.dlq");
    MappingSettings withoutDlq =
        new MappingSettings(TEMPLATE, RoutingConvention.DEBEZIUM, PayloadFormat.BYTES, 1024, null);

    assertTrue(withDlq.hasDeadLetterTopic());
    assertFalse(withoutDlq.hasDeadLetterTopic());
  }

  @ParameterizedTest
  @ValueSource(ints = {0, -1, Integer.MIN_VALUE})
  void rejectsANonPositivePayloadMaximum(int payloadMaxBytes) {
    assertThrows(
        IllegalArgumentException.class,
        () ->
            new MappingSettings(
                TEMPLATE,
                RoutingConvention.OUTBOX_RELAY,
                PayloadFormat.BYTES,
                payloadMaxBytes,
                null));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "dead letters", ".."})
  void rejectsAnIllegalDeadLetterTopic(String deadLetterTopic) {
    assertThrows(
        IllegalArgumentException.class,
        () ->
            new MappingSettings(
                TEMPLATE,
                RoutingConvention.OUTBOX_RELAY,
                PayloadFormat.BYTES,
                10,
                deadLetterTopic));
  }

  @Test
  void rejectsAnInvalidTemplate() {
    assertThrows(
        IllegalArgumentException.class,
        () ->
            new MappingSettings(
                "outbox.${nope}", RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES, 10, null));
  }

  @Test
  void rejectsMissingChoices() {
    assertThrows(
        NullPointerException.class,
        () ->
            new MappingSettings(
                null, RoutingConvention.OUTBOX_RELAY, PayloadFormat.BYTES, 10, null));
    assertThrows(
        NullPointerException.class,
        () -> new MappingSettings(TEMPLATE, null, PayloadFormat.BYTES, 10, null));
    assertThrows(
        NullPointerException.class,
        () -> new MappingSettings(TEMPLATE, RoutingConvention.OUTBOX_RELAY, null, 10, null));
  }
}
