package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.postgres.OutboxColumns.Row;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The column list a claim returns. Reading it back runs in the store's tests. */
class OutboxColumnsTest {

  @Test
  void theRowIsReadColumnByColumnAndItsHeadersAsText() {
    assertEquals(
        "seq, message_id, instance_key, aggregate_type, aggregate_id, event_type, topic, payload,"
            + " headers::text AS headers, correlation_id, created_at, deliver_before, status,"
            + " attempts, abandoned_claims, isolated, next_attempt_at, lease_owner, lease_token,"
            + " lease_expires_at, last_failure_code, published_at, kafka_topic, kafka_partition,"
            + " kafka_offset, parked_at, lease_epoch, claim_batch",
        Row.select(null, List.of(Row.values())));
    assertEquals("o.headers::text AS headers", Row.HEADERS.selected("o"));
    assertEquals("o.seq", Row.SEQ.selected("o"));
    assertEquals(List.of(Row.PAYLOAD, Row.HEADERS), contentColumns());
    assertEquals(Row.values().length - 2, Row.STATE.size());
  }

  private static List<Row> contentColumns() {
    return Arrays.stream(Row.values()).filter(c -> c.content).toList();
  }

  /** A column added by a migration needs its place in the row, and the other way round. */
  @Test
  void theRowHasEveryColumnOfTheMigratedTableInItsOrder() throws SQLException {
    OutboxTable table = OutboxTable.parse("outbox");
    try (HikariDataSource dataSource = Postgres.pool(Postgres.freshDatabase("columns"), 3)) {
      new SchemaMigrator(dataSource, table).migrate();
      List<String> columns = new ArrayList<>();
      try (Connection c = dataSource.getConnection();
          PreparedStatement ps =
              c.prepareStatement(
                  "SELECT column_name FROM information_schema.columns"
                      + " WHERE table_schema = current_schema() AND table_name = 'outbox'"
                      + " ORDER BY ordinal_position");
          ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          columns.add(rs.getString(1));
        }
      }
      assertEquals(columns, Arrays.stream(Row.values()).map(c -> c.label).toList());
    }
  }

  @Test
  void aClaimReturnsTheRowAsAClaimedMessageAndItsParkingFields() {
    assertEquals(
        "o.seq, o.message_id, o.instance_key, o.aggregate_type, o.aggregate_id, o.event_type,"
            + " o.topic,"
            + " CASE WHEN octet_length(o.payload) <= CAST(:payload_read_limit AS integer)"
            + " THEN o.payload END AS payload, octet_length(o.payload) AS payload_bytes,"
            + " CASE WHEN octet_length(o.headers::text) <= CAST(:headers_read_limit AS integer)"
            + " THEN o.headers::text END AS headers,"
            + " COALESCE(octet_length(o.headers::text) > CAST(:headers_read_limit AS integer), FALSE)"
            + " AS headers_omitted, o.correlation_id, o.created_at,"
            + " o.deliver_before, COALESCE(o.deliver_before <= clock.now, FALSE) AS deadline_expired,"
            + " o.attempts, o.lease_owner, o.lease_token, o.lease_expires_at,"
            + " o.status, o.last_failure_code, {aggregate hash(o)} AS aggregate_hash",
        OutboxColumns.Claimed.returning(ColumnMapping.RELAY, true));
  }

  /** PostgreSQL has no octet_length of a jsonb: a payload of another type is measured as text. */
  @Test
  void aPayloadThatIsNoByteaIsMeasuredAsText() {
    String returning = OutboxColumns.Claimed.returning(ColumnMapping.RELAY, false);
    assertTrue(
        returning.contains(
            "CASE WHEN octet_length(o.payload::text) <= CAST(:payload_read_limit AS integer)"
                + " THEN o.payload END AS payload, octet_length(o.payload::text) AS payload_bytes"),
        returning);
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
