package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.outboxrelay.store.ClaimedMessage;
import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The column list a claim returns. Reading it back runs in the store's tests. */
class OutboxColumnsTest {

  @Test
  void aClaimReturnsTheRowAsAClaimedMessageAndItsParkingFields() {
    assertEquals(
        "o.seq, o.message_id, o.instance_key, o.aggregate_type, o.aggregate_id, o.event_type,"
            + " o.topic, o.payload, o.headers::text AS headers, o.correlation_id, o.created_at,"
            + " o.deliver_before, COALESCE(o.deliver_before <= clock.now, FALSE) AS deadline_expired,"
            + " o.attempts, o.lease_owner, o.lease_token, o.lease_expires_at,"
            + " o.status, o.last_failure_code",
        OutboxColumns.Claimed.RETURNING);
  }

  /** A component added to ClaimedMessage needs its column here, and the other way round. */
  @Test
  void everyClaimedColumnIsReadIntoTheMessageOrTellsAParkedRow() {
    Set<String> components =
        Arrays.stream(ClaimedMessage.class.getRecordComponents())
            .map(c -> snakeCase(c.getName()))
            .collect(Collectors.toCollection(TreeSet::new));
    components.remove("headers_json");
    components.add("headers");
    components.remove("lease");
    components.addAll(Set.of("lease_owner", "lease_token"));
    components.addAll(Set.of("status", "last_failure_code")); // a row parked EXHAUSTED
    Set<String> columns =
        Arrays.stream(OutboxColumns.Claimed.values())
            .map(c -> c.label)
            .collect(Collectors.toCollection(TreeSet::new));
    assertEquals(components, columns);
  }

  private static String snakeCase(String camel) {
    return camel.replaceAll("([A-Z])", "_$1").toLowerCase(java.util.Locale.ROOT);
  }
}
