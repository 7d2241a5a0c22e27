package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.BucketShare;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.DeadLetterCopy;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.ParkRequest;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.Recoveries;
import dev.outboxrelay.store.Recovery;
import dev.outboxrelay.store.RecoveryRequest;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.Renewal;
import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The privileges docs/deployment.md grants the connector's role are enough for everything a task
 * does, and the published log's are needed: the grants are the documented ones, word for word.
 */
class RelayPrivilegesTest {
  private static final String ROLE = "outbox_relay_grants";
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");

  private String url;
  private HikariDataSource owner;
  private HikariDataSource relay;

  @BeforeEach
  void setUp() throws SQLException {
    url = Postgres.freshDatabase("relay_privileges");
    owner = Postgres.pool(url, 3);
    new SchemaMigrator(owner, TABLE).migrate();
    exec(
        "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '"
            + ROLE
            + "') THEN CREATE ROLE "
            + ROLE
            + " LOGIN; END IF; END $$");
    exec("GRANT SELECT, UPDATE, DELETE ON outbox TO " + ROLE);
    exec("GRANT SELECT, INSERT, DELETE ON outbox_published TO " + ROLE);
    exec("GRANT SELECT ON outbox_schema_history TO " + ROLE);
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type)"
            + " SELECT 'm' || g, 'eu', 'order', 'a' || g, 'E' FROM generate_series(1, 5) g");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(ROLE);
    config.setMaximumPoolSize(2);
    relay = new HikariDataSource(config);
  }

  @AfterEach
  void tearDown() {
    relay.close();
    owner.close();
  }

  @Test
  void theDocumentedGrantsCoverEveryWriteOfATask() throws SQLException {
    everyWriteOfATask();
  }

  /**
   * UPDATE granted on the columns validation asks for ({@link RelayPrivileges#WRITTEN}) is enough
   * for every write of a task, and validation finds nothing missing; without one of them it does.
   */
  @Test
  void updateOnTheWrittenColumnsCoversEveryWriteOfATask() throws SQLException {
    exec("REVOKE UPDATE ON outbox FROM " + ROLE);
    exec("GRANT UPDATE (" + String.join(", ", RelayPrivileges.WRITTEN) + ") ON outbox TO " + ROLE);
    try (Connection c = relay.getConnection()) {
      assertEquals(List.of(), RelayPrivileges.missingOnOutbox(c, TABLE));
    }

    everyWriteOfATask();

    exec("REVOKE UPDATE (parked_at) ON outbox FROM " + ROLE);
    try (Connection c = relay.getConnection()) {
      assertEquals(List.of("UPDATE"), RelayPrivileges.missingOnOutbox(c, TABLE));
    }
  }

  /**
   * INSERT on the log granted on the columns a publish inserts ({@link OutboxSql#LOGGED}) is enough
   * to publish, and validation finds nothing missing; without one of them it does: counted as held
   * before, the first publish failed after Kafka had the batch.
   */
  @Test
  void insertOnTheLoggedColumnsCoversAPublish() throws SQLException {
    exec("REVOKE INSERT ON outbox_published FROM " + ROLE);
    exec(
        "GRANT INSERT ("
            + String.join(", ", OutboxSql.LOGGED)
            + ") ON outbox_published TO "
            + ROLE);
    try (Connection c = relay.getConnection()) {
      assertEquals(List.of(), RelayPrivileges.missingOnPublishedLog(c, TABLE, true, true));
    }

    everyWriteOfATask();

    exec("REVOKE INSERT (kafka_offset) ON outbox_published FROM " + ROLE);
    try (Connection c = relay.getConnection()) {
      assertEquals(List.of("INSERT"), RelayPrivileges.missingOnPublishedLog(c, TABLE, true, true));
    }
  }

  private void everyWriteOfATask() throws SQLException {
    PostgresOutboxStore store = new PostgresOutboxStore(relay, TABLE, RelayClock.database(), null);
    assertEquals(
        Optional.of(SchemaMigrator.CURRENT_VERSION),
        new SchemaMigrator(relay, TABLE).currentVersion());

    List<ClaimedMessage> claimed =
        store
            .claim(new ClaimRequest("w", Set.of("eu"), 10, Duration.ofSeconds(30), 5, false))
            .claimed();
    assertEquals(5, claimed.size());
    assertEquals(
        Renewal.allRenewed(),
        store.renew(
            claimed.stream().map(ClaimedMessage::heldLease).toList(), Duration.ofSeconds(30)));
    assertEquals(
        Outcome.APPLIED,
        store.markPublished(
            new PublishedAck(
                "m1",
                claimed.get(0).seq(),
                claimed.get(0).lease(),
                new KafkaCoordinates("t", 0, 1))));
    assertEquals(
        Outcome.APPLIED,
        store.retryLater("m2", claimed.get(1).lease(), "ACK_WITHOUT_OFFSET", Duration.ZERO, 5));
    assertEquals(
        Outcome.APPLIED, store.markFailed("m3", claimed.get(2).lease(), "PAYLOAD_TOO_LARGE"));
    assertEquals(Outcome.APPLIED, store.release("m4", claimed.get(3).lease()));
    assertEquals(1, store.inspect(Set.of("eu"), true).count(MessageStatus.PUBLISHED));
    assertEquals(1, store.deletePublished(Set.of("eu"), Instant.now().plusSeconds(60), 10));

    // Rows past the byte budget given back, a claim whose result never arrived, a stop's leases
    // ended, an abandoned row reclaimed alone.
    assertEquals(List.of("m5"), store.giveBack(List.of(claimed.get(4).heldLease())));
    ClaimRequest one = new ClaimRequest("w", Set.of("eu"), 1, Duration.ofSeconds(30), 5, false);
    assertEquals(
        List.of("m2"), store.claim(one).claimed().stream().map(m -> m.messageId()).toList());
    assertEquals(
        List.of("m2"),
        store.releaseUnheld("eu", "w", List.of(), 0, Long.MIN_VALUE, 100).released());
    ClaimRequest second =
        new ClaimRequest("w2", Set.of("eu"), 10, Duration.ofSeconds(30), 5, false);
    List<ClaimedMessage> leased = store.claim(second).claimed(); // m2 (due again), m4, m5
    assertEquals(
        List.of("m2", "m4", "m5"),
        store.expireLeases(leased.stream().map(ClaimedMessage::heldLease).toList()).ended());
    ClaimRequest isolated =
        new ClaimRequest("w3", Set.of("eu"), 1, Duration.ofSeconds(30), 5, false);
    assertTrue(store.hasAbandoned(isolated));
    ClaimedMessage abandoned = store.claimAbandoned(isolated).claimed().get(0);
    PublishedAck ack =
        new PublishedAck(
            abandoned.messageId(),
            abandoned.seq(),
            abandoned.lease(),
            new KafkaCoordinates("t", 0, 2));
    assertEquals(List.of(Outcome.APPLIED), store.markPublished(List.of(ack)));
    assertEquals(Set.of(abandoned.messageId()), store.publishedUnderOwnLease(List.of(ack)));

    // Exactly once: an epoch, a claim, a park and its read-back, a successor's recovery.
    exec(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type)"
            + " VALUES ('e1', 'eu', 'order', 'e1', 'E'), ('e2', 'eu', 'order', 'e2', 'E')");
    BucketShare all = new BucketShare(4, 0, 1);
    long epoch = store.newEpoch();
    List<ClaimedMessage> eos =
        store
            .claim(
                new ClaimRequest("w4", Set.of("eu"), 10, Duration.ofSeconds(30), 5, false)
                    .exactlyOnce(epoch, 1, all))
            .claimed();
    assertEquals(2, eos.size());
    ClaimedMessage parked = eos.get(0);
    ParkRequest park =
        new ParkRequest(parked.messageId(), parked.seq(), parked.lease(), "POISON", epoch, 1);
    assertEquals(List.of(Outcome.APPLIED), store.park(List.of(park)));
    assertEquals(Set.of(parked.messageId()), store.parkedUnderOwnLease(List.of(park)));
    assertEquals(
        List.of(true),
        store.recordDeadLetterCopies(
            List.of(
                new DeadLetterCopy(
                    parked.messageId(),
                    parked.seq(),
                    parked.lease().token(),
                    epoch,
                    1,
                    new KafkaCoordinates("dlq", 0, 3)))));
    Recovery recovery =
        Recoveries.whole(
            store, new RecoveryRequest(Set.of("eu"), all, store.newEpoch(), List.of(), false));
    Set<String> released = new HashSet<>(Set.of("m2", "m4", "m5", eos.get(1).messageId()));
    released.remove(abandoned.messageId()); // the other abandoned rows, and the one left unsent
    assertEquals(released, Set.copyOf(recovery.released()));
  }

  @Test
  void withoutInsertOnThePublishedLogNothingIsPublished() throws SQLException {
    exec("REVOKE INSERT ON outbox_published FROM " + ROLE);
    PostgresOutboxStore store = new PostgresOutboxStore(relay, TABLE, RelayClock.database(), null);
    ClaimedMessage m =
        store
            .claim(new ClaimRequest("w", Set.of("eu"), 1, Duration.ofSeconds(30), 5, false))
            .claimed()
            .get(0);

    OutboxStoreException e =
        assertThrows(
            OutboxStoreException.class,
            () ->
                store.markPublished(
                    new PublishedAck(
                        m.messageId(), m.seq(), m.lease(), new KafkaCoordinates("t", 0, 1))));
    assertEquals(OutboxStoreException.Kind.PERMISSION, e.kind());
    assertEquals(1, count("SELECT count(*) FROM outbox WHERE status = 'IN_FLIGHT'"));
  }

  private long count(String sql) throws SQLException {
    try (Connection c = owner.getConnection();
        Statement s = c.createStatement();
        var rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private void exec(String sql) throws SQLException {
    try (Connection c = owner.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
