package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.AggregateAffinity;
import dev.outboxrelay.store.BucketShare;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.ManualClock;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreContract;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.memory.InMemoryOutboxStore.RowState;
import dev.outboxrelay.testing.Postgres;
import dev.outboxrelay.writer.EnqueueResult;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The store contract on a Debezium-style outbox table adopted in place ({@link DebeziumAdoption}),
 * read through a {@link ColumnMapping}: every claim, fence and outcome holds there exactly as on
 * the relay's own table. The ids here are free text, so the id column is a varchar and the payload
 * a text column (Debezium's documentation uses uuid and jsonb, which {@code DebeziumSwitchTest}
 * covers end to end).
 */
class AdoptedTableStoreTest extends OutboxStoreContract {
  static final OutboxTable TABLE = OutboxTable.parse("events");
  static final ColumnMapping COLUMNS =
      new ColumnMapping("id", "aggregatetype", "aggregateid", "type", "payload", List.of());
  static HikariDataSource dataSource;

  @BeforeAll
  static void database() throws SQLException {
    dataSource = Postgres.pool(Postgres.freshDatabase("adopted"), 8);
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE events (id varchar(255) NOT NULL, aggregatetype varchar(255) NOT NULL,"
              + " aggregateid varchar(255), type varchar(255) NOT NULL, payload text)");
      for (String statement : new DebeziumAdoption(TABLE, EU, COLUMNS, List.of()).statements()) {
        s.execute(statement);
      }
    }
  }

  @AfterAll
  static void closePool() {
    dataSource.close();
  }

  @BeforeEach
  void emptyTable() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("TRUNCATE events, events_published RESTART IDENTITY");
    }
  }

  @Override
  protected OutboxStore newStore(ManualClock clock) {
    return new PostgresOutboxStore(dataSource, TABLE, COLUMNS, clock, null);
  }

  /**
   * As an application writes the adopted table: its own columns, plus the instance key where it is
   * not the column default, and the optional relay columns the contract uses.
   */
  @Override
  protected EnqueueResult enqueue(String instanceKey, OutboxMessage message) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO events (id, aggregatetype, aggregateid, type, payload, instance_key,"
                    + " topic, headers, correlation_id, deliver_before)"
                    + " VALUES (?, ?, ?, ?, ?, ?, ?, CAST(? AS jsonb), ?, ?)"
                    + " ON CONFLICT ((id::text)) WHERE instance_key IS NOT NULL DO NOTHING")) {
      ps.setString(1, message.messageId());
      ps.setString(2, message.aggregateType());
      ps.setString(3, message.aggregateId());
      ps.setString(4, message.eventType());
      byte[] payload = message.payload();
      ps.setString(5, payload == null ? null : new String(payload, StandardCharsets.UTF_8));
      ps.setString(6, instanceKey);
      ps.setString(7, message.topic());
      ps.setString(8, message.headersJson());
      ps.setString(9, message.correlationId());
      ps.setObject(
          10,
          message.deliverBefore() == null
              ? null
              : OffsetDateTime.ofInstant(message.deliverBefore(), ZoneOffset.UTC));
      if (ps.executeUpdate() == 1) {
        return EnqueueResult.ENQUEUED;
      }
      // As the writer: a duplicate only when the row with this id is this key's.
      try (PreparedStatement owner =
          c.prepareStatement("SELECT instance_key FROM events WHERE id::text = ?")) {
        owner.setString(1, message.messageId());
        try (ResultSet rs = owner.executeQuery()) {
          if (rs.next() && !instanceKey.equals(rs.getString(1))) {
            throw new MessageIdTaken(new IllegalStateException(message.messageId()));
          }
        }
      }
      return EnqueueResult.DUPLICATE;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Unlike the relay's own table, an adopted one keeps its message ids unique only among the rows
   * written since the adoption: legacy rows are as unique as the table's own key makes them (this
   * table has none; Debezium's documented shape has a primary key on {@code id}). The new row is
   * written and, like any row of its key, relayed; the legacy row stays untouched.
   */
  @Override
  protected boolean legacyRowsKeepTheirIdsUnique() {
    return false;
  }

  /** A row from before the adoption: no instance key, no seq. */
  @Override
  protected void insertLegacy(OutboxMessage message) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("ALTER TABLE events DROP CONSTRAINT events_instance_key_required");
      }
      try (PreparedStatement ps =
          c.prepareStatement(
              "INSERT INTO events (id, aggregatetype, aggregateid, type, payload, instance_key,"
                  + " seq) VALUES (?, ?, ?, ?, ?, NULL, NULL)")) {
        ps.setString(1, message.messageId());
        ps.setString(2, message.aggregateType());
        ps.setString(3, message.aggregateId());
        ps.setString(4, message.eventType());
        ps.setString(5, new String(message.payload(), StandardCharsets.UTF_8));
        ps.executeUpdate();
      }
      try (Statement s = c.createStatement()) {
        s.execute(
            "ALTER TABLE events ADD CONSTRAINT events_instance_key_required"
                + " CHECK (instance_key IS NOT NULL) NOT VALID");
      }
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  protected RowState state(String messageId) {
    return rows().state(messageId);
  }

  /**
   * Debezium's default publication (FOR ALL TABLES) publishes updates and deletes, and an adopted
   * table may have no primary key, as this one: PostgreSQL then refuses a publish (a DELETE) and a
   * claim (an UPDATE) with SQLState 55000. The store says why, as a failure the task does not retry
   * (a retried 55000 would leave it running and relaying nothing), and changes nothing.
   */
  @Test
  void aPublicationThatNeedsAReplicaIdentityTheTableLacksFailsClaimsAndPublishesNamingIt()
      throws SQLException {
    ClaimedMessage m = claimOne("relay-a", add(EU, "m1", "a"));
    add(EU, "m2", "b");
    PublishedAck ack = new PublishedAck("m1", m.seq(), m.lease(), new KafkaCoordinates("t", 0, 1));
    execute("CREATE PUBLICATION relay_test_deletes FOR TABLE events WITH (publish = 'delete')");
    try {
      assertRefusedForReplicaIdentity(() -> store.markPublished(ack));
      assertEquals(MessageStatus.IN_FLIGHT, state("m1").status());

      execute("ALTER PUBLICATION relay_test_deletes SET (publish = 'insert, update')");
      assertRefusedForReplicaIdentity(() -> store.claim(request("relay-a", 10)));
      assertEquals(MessageStatus.PENDING, state("m2").status());

      execute("ALTER TABLE events REPLICA IDENTITY FULL"); // one way to fix it
      assertEquals(Outcome.APPLIED, store.markPublished(ack));
      assertEquals(List.of("m2"), ids(store.claim(request("relay-a", 10))));
    } finally {
      execute("DROP PUBLICATION relay_test_deletes");
      execute("ALTER TABLE events REPLICA IDENTITY DEFAULT");
    }
  }

  /** A 55000 of another cause (a server in recovery, during a failover) is retried, as before. */
  @Test
  void anotherObjectNotInPrerequisiteStateIsRetried() {
    DataSource refusingOnce = refusingFirstStatement(dataSource, "55000");
    OutboxStore refusing = new PostgresOutboxStore(refusingOnce, TABLE, COLUMNS, clock, null);

    OutboxStoreException e =
        assertThrows(OutboxStoreException.class, () -> refusing.claim(request("relay-a", 10)));

    assertTrue(e.isRetriable(), e.reasonCode());
    assertEquals("DB_UNAVAILABLE", e.reasonCode());
  }

  /**
   * A row without an aggregate id (this table's column allows NULL, as some adopted tables' do) is
   * in exactly one share of an ordered claim and in exactly one task's exactly-once buckets, like
   * any aggregate's rows, and the hash its claim returns names that bucket: in none, it would wait
   * under steady load until some task's share ran dry, and never be claimed exactly once.
   */
  @Test
  void aRowWithoutAnAggregateIdIsInExactlyOneShareAndOneBucket() throws SQLException {
    insertWithoutAggregateId("keyless-1");
    OutboxStore store = newStore(new ManualClock(Instant.parse("2026-01-01T00:00:00Z")));
    List<String> claimed = new ArrayList<>();
    for (int slot = 0; slot < 3; slot++) {
      for (ClaimedMessage m : store.claim(inShare(slot, 3)).claimed()) {
        claimed.add("share " + slot + ": " + m.messageId() + ", aggregate " + m.aggregateId());
      }
    }
    assertEquals(1, claimed.size(), claimed.toString());
    assertTrue(claimed.get(0).endsWith(": keyless-1, aggregate null"), claimed.toString());

    insertWithoutAggregateId("keyless-2");
    long epoch = store.newEpoch();
    claimed.clear();
    for (int task = 0; task < 3; task++) {
      BucketShare share = new BucketShare(8, task, 3);
      for (ClaimedMessage m : store.claim(request(task).exactlyOnce(epoch, 1, share)).claimed()) {
        assertTrue(share.owns(share.bucketOf(m.aggregateHash())), m.messageId());
        claimed.add(m.messageId());
      }
    }
    assertEquals(List.of("keyless-2"), claimed);
  }

  private static ClaimRequest inShare(int slot, int slots) {
    return new ClaimRequest(
        "task-" + slot, Set.of(EU), 10, LEASE, 3, true, new AggregateAffinity(slot, slots));
  }

  private static ClaimRequest request(int task) {
    return new ClaimRequest("task-" + task, Set.of(EU), 10, LEASE, 3, true);
  }

  private static void insertWithoutAggregateId(String id) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO events (id, aggregatetype, aggregateid, type, payload, instance_key)"
                    + " VALUES (?, 'order', NULL, 'Created', '{}', ?)")) {
      ps.setString(1, id);
      ps.setString(2, EU);
      ps.executeUpdate();
    }
  }

  private static void assertRefusedForReplicaIdentity(Executable write) {
    OutboxStoreException e = assertThrows(OutboxStoreException.class, write);
    assertEquals(ReplicaIdentity.MISSING, e.reasonCode());
    assertEquals("55000", e.sqlState());
    assertFalse(e.isRetriable());
  }

  private static void execute(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /** {@code target}, whose first connection fails its first statement with {@code sqlState}. */
  private static DataSource refusingFirstStatement(DataSource target, String sqlState) {
    AtomicBoolean refused = new AtomicBoolean();
    return (DataSource)
        Proxy.newProxyInstance(
            DataSource.class.getClassLoader(),
            new Class<?>[] {DataSource.class},
            (proxy, method, args) -> {
              Object result = invoke(target, method, args);
              if (!method.getName().equals("getConnection") || refused.getAndSet(true)) {
                return result;
              }
              Connection real = (Connection) result;
              return Proxy.newProxyInstance(
                  Connection.class.getClassLoader(),
                  new Class<?>[] {Connection.class},
                  (p, m, a) -> {
                    if (m.getName().equals("prepareStatement")) {
                      throw new SQLException("refused", sqlState);
                    }
                    return invoke(real, m, a);
                  });
            });
  }

  private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Override
  protected void holdElsewhere(String messageId, Lease lease, Instant expiresAt) {
    rows().holdElsewhere(messageId, lease, expiresAt);
  }

  @Override
  protected void parkElsewhere(
      String messageId, long token, long epoch, long batch, String reasonCode) {
    rows().parkElsewhere(messageId, token, epoch, batch, reasonCode);
  }

  @Override
  protected void backdate(String messageId, Instant createdAt) {
    rows().backdate(messageId, createdAt);
  }

  private ContractRows rows() {
    return new ContractRows(dataSource, "events", "id", "events_instance_key_required");
  }

  @Override
  protected void createWriter(String instanceKey) {
    PostgresOutboxWriter writer = new PostgresOutboxWriter(TABLE.tableName(), instanceKey);
    assertEquals(instanceKey, writer.instanceKey());
  }
}
