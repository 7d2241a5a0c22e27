package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code column.event.timestamp}: a claim reads the event's time from a column of the
 * application's, a timestamptz as its instant and a timestamp as a time in UTC (as Debezium reads
 * one), whatever the session's time zone; a null stays null. Every connection here runs in a zone
 * 13 hours and 45 minutes from UTC, so that a reading by the session's zone would show.
 */
class EventTimestampColumnTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");
  private static final Instant CREATED_AT = Instant.parse("2025-01-02T03:04:05.678Z");
  private static HikariDataSource dataSource;

  @BeforeAll
  static void migrate() throws SQLException {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(Postgres.freshDatabase("event_time"));
    config.setUsername(Postgres.user());
    config.setMaximumPoolSize(3);
    config.setConnectionInitSql("SET TIME ZONE 'Pacific/Chatham'");
    dataSource = new HikariDataSource(config);
    new SchemaMigrator(dataSource, TABLE).migrate();
    exec("CREATE DOMAIN event_time AS timestamptz; CREATE DOMAIN order_time AS event_time");
    exec(
        "ALTER TABLE outbox ADD COLUMN occurred_at timestamp(3),"
            + " ADD COLUMN occurred_tz timestamptz, ADD COLUMN ordered_at order_time");
  }

  @AfterAll
  static void close() {
    dataSource.close();
  }

  @BeforeEach
  void emptyTable() throws SQLException {
    exec("TRUNCATE outbox");
    exec(
        "INSERT INTO outbox (instance_key, message_id, aggregate_type, aggregate_id, event_type,"
            + " created_at, occurred_at, occurred_tz, ordered_at) VALUES"
            + " ('eu', 'set', 'order', 'a', 'OrderPlaced', '"
            + CREATED_AT
            + "', '2026-03-01 10:00:00.123', '2026-03-01 10:00:00.123+05:30',"
            + " '2026-03-01 10:00:00.123+05:30'),"
            + " ('eu', 'null', 'order', 'b', 'OrderPlaced', '"
            + CREATED_AT
            + "', NULL, NULL, NULL),"
            + " ('eu', 'infinite', 'order', 'c', 'OrderPlaced', '"
            + CREATED_AT
            + "', 'infinity', 'infinity', 'infinity')");
  }

  @Test
  void aTimestampColumnIsReadAsUtc() {
    Map<String, ClaimedMessage> claimed = claim("occurred_at");

    assertEquals(Instant.parse("2026-03-01T10:00:00.123Z"), claimed.get("set").createdAt());
    assertNull(claimed.get("null").createdAt());
    assertTrue(claimed.get("infinite").createdAt().isAfter(Instant.parse("9999-12-31T00:00:00Z")));
  }

  @Test
  void aTimestamptzColumnIsReadAsItsInstant() {
    Map<String, ClaimedMessage> claimed = claim("occurred_tz");

    assertEquals(Instant.parse("2026-03-01T04:30:00.123Z"), claimed.get("set").createdAt());
    assertNull(claimed.get("null").createdAt());
    assertTrue(claimed.get("infinite").createdAt().isAfter(Instant.parse("9999-12-31T00:00:00Z")));
  }

  /** A domain over a domain over timestamptz reads as the timestamptz it is. */
  @Test
  void aDomainOverATimestamptzIsReadAsItsInstant() {
    Map<String, ClaimedMessage> claimed = claim("ordered_at");

    assertEquals(Instant.parse("2026-03-01T04:30:00.123Z"), claimed.get("set").createdAt());
    assertNull(claimed.get("null").createdAt());
  }

  @Test
  void withoutTheSettingTheRowsCreatedAtIsRead() {
    Map<String, ClaimedMessage> claimed = claim(OutboxColumns.Row.CREATED_AT.label);

    for (String id : List.of("set", "null", "infinite")) {
      assertEquals(CREATED_AT, claimed.get(id).createdAt(), id);
    }
  }

  private static Map<String, ClaimedMessage> claim(String eventTimestamp) {
    ColumnMapping relay = ColumnMapping.RELAY;
    ColumnMapping columns =
        new ColumnMapping(
            relay.messageId(),
            relay.aggregateType(),
            relay.aggregateId(),
            relay.eventType(),
            relay.payload(),
            List.of(),
            eventTimestamp);
    PostgresOutboxStore store =
        new PostgresOutboxStore(dataSource, TABLE, columns, RelayClock.database(), null);
    Map<String, ClaimedMessage> claimed = new HashMap<>();
    store
        .claim(new ClaimRequest("relay", Set.of("eu"), 10, Duration.ofMinutes(1), 5, false))
        .claimed()
        .forEach(m -> claimed.put(m.messageId(), m));
    assertEquals(Set.of("set", "null", "infinite"), claimed.keySet());
    return claimed;
  }

  private static void exec(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
