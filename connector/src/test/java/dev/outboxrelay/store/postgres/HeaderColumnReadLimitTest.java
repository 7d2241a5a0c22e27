package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code column.additional.placement} header columns keep to the claim's headers read limit as the
 * row's own headers do (OutboxStoreContract): a column's text over it is never read, and the row
 * comes back without any of its headers, marked, for the mapper to park. A text column of an
 * application's can hold a gigabyte.
 */
class HeaderColumnReadLimitTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");
  private static HikariDataSource dataSource;

  @BeforeAll
  static void migrate() throws SQLException {
    dataSource = Postgres.pool(Postgres.freshDatabase("header_column_limit"), 3);
    new SchemaMigrator(dataSource, TABLE).migrate();
    exec("ALTER TABLE outbox ADD COLUMN tenant text");
    exec(
        "INSERT INTO outbox (instance_key, message_id, aggregate_type, aggregate_id, event_type,"
            + " headers, tenant) VALUES"
            + " ('eu', 'limit', 'order', 'a', 'OrderPlaced', '{\"h\": \"1\"}', '1234567890'),"
            + " ('eu', 'large', 'order', 'b', 'OrderPlaced', '{\"h\": \"1\"}', '12345678901'),"
            + " ('eu', 'none', 'order', 'c', 'OrderPlaced', NULL, NULL)");
  }

  @AfterAll
  static void close() {
    dataSource.close();
  }

  @Test
  void aHeaderColumnOverTheLimitLeavesTheRowsHeadersOut() {
    PostgresOutboxStore store =
        new PostgresOutboxStore(dataSource, TABLE, tenantColumn(), RelayClock.database(), null);
    Map<String, ClaimedMessage> claimed = new HashMap<>();
    store
        .claim(
            new ClaimRequest("relay", Set.of("eu"), 10, Duration.ofMinutes(1), 5, false)
                .withHeadersReadLimit(10))
        .claimed()
        .forEach(m -> claimed.put(m.messageId(), m));

    assertEquals("{\"tenant\":\"1234567890\",\"h\": \"1\"}", claimed.get("limit").headersJson());
    assertFalse(claimed.get("limit").headersOmitted());
    assertNull(claimed.get("large").headersJson());
    assertTrue(claimed.get("large").headersOmitted());
    assertEquals("{\"tenant\":null}", claimed.get("none").headersJson());
    assertFalse(claimed.get("none").headersOmitted());
  }

  /**
   * A claim's read room counts a header column with the row's own headers (as text): "second"'s
   * tenant takes it one byte past the room, which its headers alone would leave.
   */
  @Test
  void aHeaderColumnCountsAgainstTheClaimsReadRoom() throws SQLException {
    exec(
        "INSERT INTO outbox (instance_key, message_id, aggregate_type, aggregate_id, event_type,"
            + " headers, tenant) VALUES"
            + " ('us', 'first', 'order', 'a', 'OrderPlaced', '{\"h\": \"1\"}', '1234567890'),"
            + " ('us', 'second', 'order', 'b', 'OrderPlaced', '{\"h\": \"1\"}', '12345678901')");
    long headersAndTenants =
        queryLong(
            "SELECT sum(octet_length(headers::text) + octet_length(tenant)) FROM outbox"
                + " WHERE instance_key = 'us'");
    PostgresOutboxStore store =
        new PostgresOutboxStore(dataSource, TABLE, tenantColumn(), RelayClock.database(), null);

    ClaimResult result =
        store.claim(
            new ClaimRequest("relay", Set.of("us"), 10, Duration.ofMinutes(1), 5, false)
                .withReadRoom(headersAndTenants - 1));

    assertEquals(List.of("first"), result.claimed().stream().map(m -> m.messageId()).toList());
  }

  /**
   * Headers count as the text the claim reads, not as stored: 300,000 repeated characters compress
   * to a few kilobytes, and counted so a claim took all ten rows, 3 MB of text, for a room of 1 MB.
   */
  @Test
  void compressedHeadersCountAsTheTextTheClaimReads() throws SQLException {
    exec(
        "INSERT INTO outbox (instance_key, message_id, aggregate_type, aggregate_id, event_type,"
            + " headers) SELECT 'compressed', 'c' || n, 'order', 'a' || n, 'OrderPlaced',"
            + " jsonb_build_object('h', repeat('x', 300000)) FROM generate_series(1, 10) n");
    assertTrue(
        queryLong(
                "SELECT max(pg_column_size(headers)) FROM outbox WHERE instance_key = 'compressed'")
            < 100_000,
        "stored compressed");
    PostgresOutboxStore store =
        new PostgresOutboxStore(dataSource, TABLE, RelayClock.database(), null);

    ClaimResult result =
        store.claim(
            new ClaimRequest("relay", Set.of("compressed"), 10, Duration.ofMinutes(1), 5, false)
                .withReadRoom(1_000_000));

    assertEquals(
        List.of("c1", "c2", "c3"),
        result.claimed().stream().map(m -> m.messageId()).toList(),
        "3 × 300,011 bytes of text fit in 1,000,000, 4 do not");
  }

  private static ColumnMapping tenantColumn() {
    ColumnMapping relay = ColumnMapping.RELAY;
    return new ColumnMapping(
        relay.messageId(),
        relay.aggregateType(),
        relay.aggregateId(),
        relay.eventType(),
        relay.payload(),
        List.of(new ColumnMapping.HeaderColumn("tenant", "tenant")));
  }

  private static long queryLong(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        java.sql.ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static void exec(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
