package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A claim measures a payload before reading it, by the payload column's type: a domain over bytea
 * is a bytea (measured as its text, a hex string, it would be twice its size and parked as too
 * large while it fits).
 */
class PayloadTypeTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");
  private static HikariDataSource dataSource;

  @BeforeAll
  static void migrate() throws SQLException {
    dataSource = Postgres.pool(Postgres.freshDatabase("payload_type"), 3);
    new SchemaMigrator(dataSource, TABLE).migrate();
    exec("CREATE DOMAIN event_bytes AS bytea");
    exec("ALTER TABLE outbox ALTER COLUMN payload TYPE event_bytes");
  }

  @AfterAll
  static void close() {
    dataSource.close();
  }

  @Test
  void aDomainOverByteaIsMeasuredAsStored() throws SQLException {
    exec(
        "INSERT INTO outbox (instance_key, message_id, aggregate_type, aggregate_id, event_type,"
            + " payload) VALUES"
            + " ('eu', 'fits', 'order', 'a', 'OrderPlaced', convert_to(repeat('x', 10), 'UTF8')),"
            + " ('eu', 'large', 'order', 'b', 'OrderPlaced', convert_to(repeat('x', 11), 'UTF8'))");
    PostgresOutboxStore store =
        new PostgresOutboxStore(dataSource, TABLE, RelayClock.database(), null);

    Map<String, ClaimedMessage> claimed = new HashMap<>();
    store
        .claim(
            new ClaimRequest("relay", Set.of("eu"), 10, Duration.ofMinutes(1), 5, false)
                .withPayloadReadLimit(10))
        .claimed()
        .forEach(m -> claimed.put(m.messageId(), m));

    assertEquals(10, claimed.get("fits").payload().length);
    assertEquals(10, claimed.get("fits").payloadBytes());
    assertNull(claimed.get("large").payload());
    assertEquals(11, claimed.get("large").payloadBytes());
  }

  private static void exec(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
