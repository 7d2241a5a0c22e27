package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.store.ClaimRequest;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What a task's claims read of a row: nothing a record could never carry. */
class TaskSettingsFactoryTest {
  @Test
  void aClaimReadsNoPayloadOverItsMaximumAndNoHeadersOverTheProducersRecordLimit() {
    OutboxSourceConfig config =
        new OutboxSourceConfig(
            Map.of(
                "connection.url", "jdbc:postgresql://localhost:1/unused",
                "instance.keys", "eu",
                "payload.max.bytes", "4000",
                "producer.override.max.request.size", "9000"));

    ClaimRequest claim = TaskSettingsFactory.from(config, "relay-1").claimRequest();

    assertEquals(4000, claim.payloadReadLimit());
    assertEquals(9000, claim.headersReadLimit());
  }
}
