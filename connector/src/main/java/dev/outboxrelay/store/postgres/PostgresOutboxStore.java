package dev.outboxrelay.store.postgres;

import dev.outboxrelay.store.AggregateAffinity;
import dev.outboxrelay.store.BacklogSnapshot;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.ExhaustedMessage;
import dev.outboxrelay.store.HeldLease;
import dev.outboxrelay.store.InstanceKeys;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.ReasonCodes;
import dev.outboxrelay.store.RelayClock;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * The PostgreSQL store: each operation is one statement in autocommit, so a claim or an outcome is
 * atomic and costs one round trip. See {@link OutboxStore} for the fencing rule.
 */
public final class PostgresOutboxStore implements OutboxStore {
  private final DataSource dataSource;
  private final OutboxSql sql;
  private final RelayClock clock;
  private final AutoCloseable ownedResource;

  /**
   * The instance keys this store has claimed for. Every write after a claim is fenced on them as
   * well as on the lease, so that even a lease whose owner name collides with another instance's
   * never reaches a row of another instance key, nor a legacy row.
   */
  private final Set<String> claimedKeys = ConcurrentHashMap.newKeySet();

  /**
   * @param ownedResource closed by {@link #close()} (the pool this store owns), or null
   */
  public PostgresOutboxStore(
      DataSource dataSource, OutboxTable table, RelayClock clock, AutoCloseable ownedResource) {
    this.dataSource = dataSource;
    this.sql = new OutboxSql(table);
    this.clock = clock;
    this.ownedResource = ownedResource;
  }

  @Override
  public ClaimResult claim(ClaimRequest request) {
    claimedKeys.addAll(request.instanceKeys());
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(claimStatement(request))) {
      bindClaim(c, ps, request);
      return readClaim(ps);
    } catch (SQLException e) {
      throw SqlStates.classify(e, "claim");
    }
  }

  /** Binds {@link #claimStatement}'s parameters; package-private for the plan tests. */
  void bindClaim(Connection c, PreparedStatement ps, ClaimRequest request) throws SQLException {
    int i = 1;
    setNow(ps, i++);
    ps.setInt(i++, request.maxAttempts());
    ps.setArray(i++, c.createArrayOf("text", request.instanceKeyList().toArray()));
    if (request.affinity() != null) {
      AggregateAffinity affinity = request.affinity();
      ps.setInt(i++, affinity.slots());
      ps.setInt(i++, affinity.slots() - affinity.slot());
      ps.setInt(i++, affinity.slots());
    }
    if (request.ordered()) {
      ps.setString(i++, request.owner());
    }
    ps.setInt(i++, request.limit());
    ps.setString(i++, request.owner());
    ps.setLong(i, request.leaseDuration().toMillis());
  }

  String claimStatement(ClaimRequest request) {
    if (!request.ordered()) {
      return sql.claimUnordered;
    }
    return request.affinity() == null ? sql.claimOrdered : sql.claimOrderedWithAffinity;
  }

  @Override
  public ClaimResult claimAbandoned(ClaimRequest request) {
    claimedKeys.addAll(request.instanceKeys());
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                request.ordered() ? sql.claimAbandonedOrdered : sql.claimAbandonedUnordered)) {
      int i = 1;
      setNow(ps, i++);
      ps.setArray(i++, c.createArrayOf("text", request.instanceKeyList().toArray()));
      if (request.ordered()) {
        ps.setString(i++, request.owner());
      }
      ps.setInt(i++, request.maxAttempts());
      ps.setInt(i++, request.maxAttempts());
      ps.setString(i++, request.owner());
      ps.setInt(i++, request.maxAttempts());
      ps.setLong(i++, request.leaseDuration().toMillis());
      ps.setInt(i, request.maxAttempts());
      return readClaim(ps);
    } catch (SQLException e) {
      throw SqlStates.classify(e, "claim-abandoned");
    }
  }

  private static ClaimResult readClaim(PreparedStatement ps) throws SQLException {
    List<ClaimedMessage> claimed = new ArrayList<>();
    List<ExhaustedMessage> exhausted = new ArrayList<>();
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        if (MessageStatus.valueOf(rs.getString("status")) == MessageStatus.EXHAUSTED) {
          exhausted.add(
              new ExhaustedMessage(
                  rs.getString("message_id"),
                  rs.getString("instance_key"),
                  rs.getString("last_failure_code")));
          continue;
        }
        claimed.add(
            new ClaimedMessage(
                rs.getLong("seq"),
                rs.getString("message_id"),
                rs.getString("instance_key"),
                rs.getString("aggregate_type"),
                rs.getString("aggregate_id"),
                rs.getString("event_type"),
                rs.getString("topic"),
                rs.getBytes("payload"),
                rs.getString("headers"),
                rs.getString("correlation_id"),
                instant(rs, "created_at"),
                instant(rs, "deliver_before"),
                rs.getBoolean("deadline_expired"),
                rs.getInt("attempts"),
                new Lease(rs.getString("lease_owner"), rs.getLong("lease_token")),
                instant(rs, "lease_expires_at")));
      }
    }
    // UPDATE ... RETURNING has no order; records must leave in insertion order.
    claimed.sort(Comparator.comparingLong(ClaimedMessage::seq));
    return new ClaimResult(claimed, exhausted);
  }

  @Override
  public Outcome markPublished(PublishedAck ack) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.markPublished)) {
      KafkaCoordinates k = ack.coordinates();
      setNow(ps, 1);
      ps.setString(2, k.topic());
      ps.setInt(3, k.partition());
      ps.setLong(4, k.offset());
      ps.setString(5, ack.messageId());
      ps.setString(6, ack.lease().owner());
      ps.setLong(7, ack.lease().token());
      ps.setArray(8, claimedKeys(c));
      return ps.executeUpdate() == 1 ? Outcome.APPLIED : Outcome.CLAIM_LOST;
    } catch (SQLException e) {
      throw SqlStates.classify(e, "mark-published");
    }
  }

  @Override
  public List<Outcome> markPublished(List<PublishedAck> acks) {
    if (acks.isEmpty()) {
      return List.of();
    }
    // A repeated ack (same row, same lease) is sent once: joined twice to its row, PostgreSQL
    // would apply either one's coordinates. Repeats are CLAIM_LOST, as if written one by one.
    List<PublishedAck> sent = new ArrayList<>();
    int[] sentAs = new int[acks.size()];
    Set<HeldLease> seen = new HashSet<>();
    for (int j = 0; j < acks.size(); j++) {
      PublishedAck ack = acks.get(j);
      sentAs[j] = seen.add(new HeldLease(ack.messageId(), ack.lease())) ? sent.size() : -1;
      if (sentAs[j] >= 0) {
        sent.add(ack);
      }
    }
    int n = sent.size();
    String[] ids = new String[n];
    String[] owners = new String[n];
    Long[] tokens = new Long[n];
    String[] topics = new String[n];
    Integer[] partitions = new Integer[n];
    Long[] offsets = new Long[n];
    for (int j = 0; j < n; j++) {
      PublishedAck ack = sent.get(j);
      ids[j] = ack.messageId();
      owners[j] = ack.lease().owner();
      tokens[j] = ack.lease().token();
      topics[j] = ack.coordinates().topic();
      partitions[j] = ack.coordinates().partition();
      offsets[j] = ack.coordinates().offset();
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.markPublishedBatch)) {
      setNow(ps, 1);
      ps.setArray(2, c.createArrayOf("text", ids));
      ps.setArray(3, c.createArrayOf("text", owners));
      ps.setArray(4, c.createArrayOf("bigint", tokens));
      ps.setArray(5, c.createArrayOf("text", topics));
      ps.setArray(6, c.createArrayOf("integer", partitions));
      ps.setArray(7, c.createArrayOf("bigint", offsets));
      ps.setArray(8, claimedKeys(c));
      boolean[] applied = new boolean[n];
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          applied[(int) rs.getLong(1) - 1] = true; // ordinality counts from 1
        }
      }
      List<Outcome> outcomes = new ArrayList<>(acks.size());
      for (int position : sentAs) {
        outcomes.add(position >= 0 && applied[position] ? Outcome.APPLIED : Outcome.CLAIM_LOST);
      }
      return outcomes;
    } catch (SQLException e) {
      throw SqlStates.classify(e, "mark-published");
    }
  }

  @Override
  public Outcome retryLater(
      String messageId, Lease lease, String reasonCode, Duration delay, int maxAttempts) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.retryLater)) {
      setNow(ps, 1);
      ps.setInt(2, maxAttempts);
      ps.setString(3, ReasonCodes.require(reasonCode));
      ps.setLong(4, Math.max(0, delay.toMillis()));
      ps.setString(5, messageId);
      ps.setString(6, lease.owner());
      ps.setLong(7, lease.token());
      ps.setArray(8, claimedKeys(c));
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Outcome.CLAIM_LOST;
        }
        return MessageStatus.valueOf(rs.getString(1)) == MessageStatus.EXHAUSTED
            ? Outcome.EXHAUSTED
            : Outcome.APPLIED;
      }
    } catch (SQLException e) {
      throw SqlStates.classify(e, "retry-later");
    }
  }

  @Override
  public Outcome markFailed(String messageId, Lease lease, String reasonCode) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.markFailed)) {
      ps.setString(1, ReasonCodes.require(reasonCode));
      ps.setString(2, messageId);
      ps.setString(3, lease.owner());
      ps.setLong(4, lease.token());
      ps.setArray(5, claimedKeys(c));
      return ps.executeUpdate() == 1 ? Outcome.APPLIED : Outcome.CLAIM_LOST;
    } catch (SQLException e) {
      throw SqlStates.classify(e, "mark-failed");
    }
  }

  @Override
  public Outcome release(String messageId, Lease lease) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.release)) {
      ps.setString(1, messageId);
      ps.setString(2, lease.owner());
      ps.setLong(3, lease.token());
      ps.setArray(4, claimedKeys(c));
      return ps.executeUpdate() == 1 ? Outcome.APPLIED : Outcome.CLAIM_LOST;
    } catch (SQLException e) {
      throw SqlStates.classify(e, "release");
    }
  }

  @Override
  public Set<String> renew(List<HeldLease> leases, Duration leaseDuration) {
    if (leases.isEmpty()) {
      return Set.of();
    }
    int n = leases.size();
    String[] ids = new String[n];
    String[] owners = new String[n];
    Long[] tokens = new Long[n];
    for (int j = 0; j < n; j++) {
      ids[j] = leases.get(j).messageId();
      owners[j] = leases.get(j).lease().owner();
      tokens[j] = leases.get(j).lease().token();
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.renew)) {
      setNow(ps, 1);
      ps.setLong(2, leaseDuration.toMillis());
      ps.setArray(3, c.createArrayOf("text", ids));
      ps.setArray(4, c.createArrayOf("text", owners));
      ps.setArray(5, c.createArrayOf("bigint", tokens));
      ps.setArray(6, claimedKeys(c));
      Set<String> renewed = returnedIds(ps);
      Set<String> lost = new HashSet<>();
      for (String id : ids) {
        if (!renewed.contains(id)) {
          lost.add(id);
        }
      }
      return lost;
    } catch (SQLException e) {
      throw SqlStates.classify(e, "renew");
    }
  }

  @Override
  public BacklogSnapshot inspect(Set<String> instanceKeys, boolean countPublished) {
    Object[] keys = InstanceKeys.requireValid(instanceKeys).toArray();
    Map<MessageStatus, Long> counts = new EnumMap<>(MessageStatus.class);
    try (Connection c = dataSource.getConnection()) {
      try (PreparedStatement ps = c.prepareStatement(sql.countByStatus)) {
        ps.setArray(1, c.createArrayOf("text", keys));
        ps.setArray(2, c.createArrayOf("text", keys));
        ps.setBoolean(3, countPublished);
        ps.setArray(4, c.createArrayOf("text", keys));
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            counts.put(MessageStatus.valueOf(rs.getString(1)), rs.getLong(2));
          }
        }
      }
      long lagMillis = 0;
      try (PreparedStatement ps = c.prepareStatement(sql.lag)) {
        setNow(ps, 1);
        ps.setArray(2, c.createArrayOf("text", keys));
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            lagMillis = rs.getLong(1);
          }
        }
      }
      return new BacklogSnapshot(counts, Duration.ofMillis(lagMillis));
    } catch (SQLException e) {
      throw SqlStates.classify(e, "inspect");
    }
  }

  @Override
  public int deletePublished(Set<String> instanceKeys, Instant publishedBefore, int limit) {
    Object[] keys = InstanceKeys.requireValid(instanceKeys).toArray();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.deletePublished)) {
      ps.setArray(1, c.createArrayOf("text", keys));
      ps.setObject(2, OffsetDateTime.ofInstant(publishedBefore, ZoneOffset.UTC));
      ps.setInt(3, limit);
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw SqlStates.classify(e, "delete-published");
    }
  }

  @Override
  public Instant now() {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.now)) {
      setNow(ps, 1);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return instant(rs, 1);
      }
    } catch (SQLException e) {
      throw SqlStates.classify(e, "now");
    }
  }

  @Override
  public void close() {
    if (ownedResource != null) {
      try {
        ownedResource.close();
      } catch (Exception e) {
        // Closing a pool does not fail in a way a caller could act on.
      }
    }
  }

  private Array claimedKeys(Connection c) throws SQLException {
    return c.createArrayOf("text", claimedKeys.toArray());
  }

  private void setNow(PreparedStatement ps, int index) throws SQLException {
    Instant override = clock.override();
    if (override == null) {
      ps.setNull(index, Types.TIMESTAMP_WITH_TIMEZONE);
    } else {
      ps.setObject(index, OffsetDateTime.ofInstant(override, ZoneOffset.UTC));
    }
  }

  private static Set<String> returnedIds(PreparedStatement ps) throws SQLException {
    Set<String> ids = new HashSet<>();
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        ids.add(rs.getString(1));
      }
    }
    return ids;
  }

  private static Instant instant(ResultSet rs, String column) throws SQLException {
    Timestamp ts = rs.getTimestamp(column);
    return ts == null ? null : ts.toInstant();
  }

  private static Instant instant(ResultSet rs, int column) throws SQLException {
    Timestamp ts = rs.getTimestamp(column);
    return ts == null ? null : ts.toInstant();
  }
}
