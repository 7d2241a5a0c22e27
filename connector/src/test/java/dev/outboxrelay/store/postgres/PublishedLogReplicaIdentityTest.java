package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The published log has no primary key: schema version 9 gives it REPLICA IDENTITY FULL, so that a
 * publication of deletes (Debezium's FOR ALL TABLES, say) lets retention delete from it. With that
 * taken away, PostgreSQL refuses the delete with 55000, the code it also uses for a server in
 * recovery: the store says which relation lacks what, as for the outbox table itself, instead of a
 * transient failure retried at every retention run while the log grows.
 */
class PublishedLogReplicaIdentityTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");

  @Test
  void retentionRefusedForTheLogsReplicaIdentityNamesTheLog() throws Exception {
    String url = Postgres.freshDatabase("log_replica_identity");
    try (HikariDataSource pool = Postgres.pool(url, 3)) {
      new SchemaMigrator(pool, TABLE).migrate();
      execute(pool, "CREATE PUBLICATION everything FOR ALL TABLES");
      PostgresOutboxStore store = new PostgresOutboxStore(pool, TABLE, RelayClock.database(), null);
      assertEquals(0, store.deletePublished(Set.of("eu"), Instant.now(), 10), "FULL: allowed");

      execute(pool, "ALTER TABLE outbox_published REPLICA IDENTITY DEFAULT");

      OutboxStoreException e =
          assertThrows(
              OutboxStoreException.class,
              () -> store.deletePublished(Set.of("eu"), Instant.now(), 10));
      assertEquals(ReplicaIdentity.LOG_MISSING, e.reasonCode());
      assertEquals("55000", e.sqlState());
      assertFalse(e.isRetriable());

      // Only retention's deletes are blamed on the log: any other statement's 55000 is its own.
      OutboxStoreException elsewhere =
          new OutboxStoreException(
              OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "55000", "claim");
      assertSame(elsewhere, ReplicaIdentity.classify(pool, TABLE, elsewhere, false));
      assertEquals(
          ReplicaIdentity.LOG_MISSING,
          ReplicaIdentity.classify(pool, TABLE, elsewhere, true).reasonCode());

      // Publishing only inserts into the log, which needs no replica identity.
      execute(
          pool,
          "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, instance_key, payload)"
              + " VALUES ('order', 'a', 'created', 'eu', '{}')");
      ClaimedMessage claimed =
          store
              .claim(new ClaimRequest("t", Set.of("eu"), 10, Duration.ofSeconds(30), 10, true))
              .claimed()
              .get(0);
      assertEquals(
          List.of(Outcome.APPLIED),
          store.markPublished(
              List.of(
                  new PublishedAck(
                      claimed.messageId(),
                      claimed.seq(),
                      claimed.lease(),
                      new KafkaCoordinates("t", 0, 1)))));

      execute(pool, "ALTER TABLE outbox REPLICA IDENTITY NOTHING");
      OutboxStoreException both =
          assertThrows(
              OutboxStoreException.class,
              () -> store.deletePublished(Set.of("eu"), Instant.now(), 10));
      assertEquals(ReplicaIdentity.MISSING, both.reasonCode(), "the outbox table's named first");
    }
  }

  private static void execute(HikariDataSource pool, String sql) throws Exception {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
