package dev.outboxrelay.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.AggregateAffinity;
import dev.outboxrelay.store.BacklogSnapshot;
import dev.outboxrelay.store.BucketShare;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.CommittedPosition;
import dev.outboxrelay.store.DeadLetterCopy;
import dev.outboxrelay.store.EndedLeases;
import dev.outboxrelay.store.ExactlyOnceClaim;
import dev.outboxrelay.store.ExhaustedMessage;
import dev.outboxrelay.store.HeldLease;
import dev.outboxrelay.store.KafkaCoordinates;
import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.Outcome;
import dev.outboxrelay.store.ParkRequest;
import dev.outboxrelay.store.PublishedAck;
import dev.outboxrelay.store.ReasonCodes;
import dev.outboxrelay.store.Recovery;
import dev.outboxrelay.store.RecoveryPage;
import dev.outboxrelay.store.RecoveryRequest;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.Renewal;
import dev.outboxrelay.store.UnheldPage;
import dev.outboxrelay.writer.InstanceKeys;
import dev.outboxrelay.writer.Printable;
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
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.stream.IntStream;
import javax.sql.DataSource;

/**
 * The PostgreSQL store: each operation is one statement in autocommit, so a claim or an outcome is
 * atomic and costs one round trip (a claim, a publish and a renewal two: they run in a transaction
 * of their own, for their planner settings). See {@link OutboxStore} for the fencing rule.
 */
public final class PostgresOutboxStore implements OutboxStore {
  /** The operation of retention's deletes, the only statements that delete from the log. */
  private static final String DELETE_PUBLISHED = "delete-published";

  private final DataSource dataSource;
  private final OutboxTable table;

  /** The statements; a claim's own measure a bytea payload (the relay's table). */
  private final OutboxSql sql;

  /** The same, whose claims measure the payload as text (jsonb, text: an adopted table's). */
  private final OutboxSql textPayloadSql;

  /** Whether a publish leaves an entry in the published log. */
  private final boolean keepsPublishedLog;

  /** Whether the payload column is a bytea: read at the first claim, null until then. */
  private volatile Boolean payloadIsBytea;

  private final ColumnMapping columns;
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
    this(dataSource, table, ColumnMapping.RELAY, clock, ownedResource);
  }

  /**
   * @param columns the columns holding the message's fields, for a table the application writes
   *     under other names (an adopted Debezium outbox table)
   * @param ownedResource closed by {@link #close()} (the pool this store owns), or null
   */
  public PostgresOutboxStore(
      DataSource dataSource,
      OutboxTable table,
      ColumnMapping columns,
      RelayClock clock,
      AutoCloseable ownedResource) {
    this(dataSource, table, columns, clock, ownedResource, true);
  }

  /**
   * @param keepsPublishedLog a published row leaves an entry in the published log (its Kafka
   *     coordinates, for the retention period); false ({@code retention.published.ms=0}): the
   *     acknowledgement's fenced write only deletes it, and a publish whose reply was lost cannot
   *     be read back, so it is reported as a lost claim
   */
  public PostgresOutboxStore(
      DataSource dataSource,
      OutboxTable table,
      ColumnMapping columns,
      RelayClock clock,
      AutoCloseable ownedResource,
      boolean keepsPublishedLog) {
    this.dataSource = dataSource;
    this.table = table;
    this.sql = new OutboxSql(table, columns, true, keepsPublishedLog);
    this.textPayloadSql = new OutboxSql(table, columns, false, keepsPublishedLog);
    this.keepsPublishedLog = keepsPublishedLog;
    this.columns = columns;
    this.clock = clock;
    this.ownedResource = ownedResource;
  }

  @Override
  public ClaimResult claim(ClaimRequest request) {
    claimedKeys.addAll(request.instanceKeys());
    return run(
        "claim",
        OutboxSql.CLAIM_PLAN,
        claimSql(request),
        (c, statement) -> readClaim(planned(bindClaim(c, statement, request))));
  }

  /**
   * {@code statement} behind the planner {@code settings} ({@link OutboxSql#CLAIM_PLAN}, {@link
   * OutboxSql#ACKS_PLAN}), as one string, run in a transaction of its own ({@link #run}): the
   * driver sends the BEGIN, the settings and the statement in one round trip, and the COMMIT in a
   * second. The settings end with the transaction. Without it they would not reliably reach the
   * statement: in autocommit the driver may send a Sync between the two (it does once a statement
   * is server-prepared and its results' size is unknown), and with {@code preferQueryMode=simple}
   * it sends each as a query of its own; either ends autocommit's implicit transaction. Package-
   * private for the plan tests, which explain a statement as it is sent here.
   */
  static String planned(String settings, String statement) {
    return settings + ";\n" + statement;
  }

  /** Executes a statement prepared from {@link #planned} and returns its own result. */
  static ResultSet planned(PreparedStatement ps) throws SQLException {
    ps.execute(); // the settings' row
    if (!ps.getMoreResults()) {
      throw new SQLException("the planned statement returned no rows");
    }
    return ps.getResultSet();
  }

  private static ResultSet planned(NamedSql.Binder statement) throws SQLException {
    return planned(statement.ready());
  }

  /** The claim for {@code request}, as JDBC SQL; package-private for the plan tests. */
  String claimStatement(ClaimRequest request) {
    return claimSql(request).jdbc();
  }

  /** Binds {@link #claimStatement}'s parameters; package-private for the plan tests. */
  void bindClaim(Connection c, PreparedStatement ps, ClaimRequest request) throws SQLException {
    bindClaim(c, claimSql(request).bind(ps), request).ready();
  }

  private NamedSql claimSql(ClaimRequest request) {
    if (isolatesSuspect(request)) {
      return request.ordered() ? claims().claimSuspectOrdered : claims().claimSuspectUnordered;
    }
    return claimOf(request).forKeys(request.instanceKeys().size());
  }

  private static boolean isolatesSuspect(ClaimRequest request) {
    return request.exactlyOnce() != null && request.exactlyOnce().isolates();
  }

  private OutboxSql.Claim claimOf(ClaimRequest request) {
    OutboxSql claims = claims();
    boolean inShare = request.exactlyOnce() != null && !request.exactlyOnce().share().ownsAll();
    if (!request.ordered()) {
      return inShare ? claims.claimUnorderedInShare : claims.claimUnordered;
    }
    if (inShare) {
      return claims.claimOrderedInShare;
    }
    return request.affinity() == null ? claims.claimOrdered : claims.claimOrderedWithAffinity;
  }

  /**
   * The statements whose claims fit the payload column's type, read once, at the first claim: a
   * claim measures a payload before reading it ({@link ClaimRequest#payloadReadLimit}), and
   * PostgreSQL measures a jsonb only as text. Throws, like a claim, while the database is away.
   */
  private OutboxSql claims() {
    Boolean bytea = payloadIsBytea;
    if (bytea == null) {
      bytea =
          run(
              "read-payload-type",
              sql.readPayloadIsBytea,
              (c, statement) -> {
                try (ResultSet rs =
                    statement
                        .setString("table_name", table.qualified())
                        .setString("column_name", columns.column(OutboxColumns.Row.PAYLOAD))
                        .executeQuery()) {
                  rs.next();
                  return rs.getBoolean(1);
                }
              });
      payloadIsBytea = bytea;
    }
    return bytea ? sql : textPayloadSql;
  }

  private NamedSql.Binder bindClaim(Connection c, NamedSql.Binder statement, ClaimRequest request)
      throws SQLException {
    statement
        .set("now", this::setNow)
        .setInt("max_attempts", request.maxAttempts())
        .setArray("instance_keys", textArray(c, request.instanceKeyList().toArray()))
        .setString("owner", request.owner())
        .setLong("lease_ms", request.leaseDuration().toMillis());
    boolean suspect = isolatesSuspect(request);
    if (suspect) {
      statement.setArray(
          "suspects", c.createArrayOf("bigint", request.exactlyOnce().suspects().toArray()));
    } else {
      statement.setInt("limit", request.limit()).setLong("read_room", request.readRoom());
    }
    bindPayloadReadLimit(statement, request);
    AggregateAffinity affinity = request.affinity();
    if (affinity != null) {
      statement
          .setInt("slots", affinity.slots())
          .setInt("slots_minus_slot", affinity.slots() - affinity.slot());
    }
    ExactlyOnceClaim exactlyOnce = request.exactlyOnce();
    statement
        .setBoolean("durable", exactlyOnce != null)
        .setObject("epoch", exactlyOnce == null ? null : exactlyOnce.epoch(), Types.BIGINT)
        .setObject("claim_batch", exactlyOnce == null ? null : exactlyOnce.batch(), Types.BIGINT);
    if (exactlyOnce != null && !suspect && !exactlyOnce.share().ownsAll()) {
      bindShare(statement, exactlyOnce.share());
    }
    return statement;
  }

  private static NamedSql.Binder bindShare(NamedSql.Binder statement, BucketShare share)
      throws SQLException {
    return statement
        .setInt("buckets", share.buckets())
        .setInt("tasks", share.taskCount())
        .setInt("tasks_minus_task", share.taskCount() - share.taskIndex());
  }

  @Override
  public long newEpoch() {
    return run(
        "new-epoch",
        sql.newEpoch,
        (c, statement) ->
            inTransaction(
                c,
                () -> {
                  try (PreparedStatement wal = c.prepareStatement(sql.epochWal.jdbc())) {
                    wal.execute(); // its commit durable, flushed (OutboxSql#newEpoch)
                  }
                  try (ResultSet rs = statement.ready().executeQuery()) {
                    rs.next();
                    return rs.getLong(1);
                  }
                }));
  }

  @Override
  public RecoveryPage recover(
      RecoveryRequest request, String instanceKey, long afterSeq, int pageRows) {
    OutboxStore.requirePageRows(pageRows);
    if (!request.instanceKeys().contains(instanceKey)) {
      throw new IllegalArgumentException(
          "instance key '" + Printable.escape(instanceKey) + "' is not one of the recovery's keys");
    }
    claimedKeys.addAll(request.instanceKeys());
    BucketShare share = request.share();
    List<CommittedPosition> committed = request.committed();
    int n = committed.size();
    String[] keys = new String[n];
    Integer[] buckets = new Integer[n];
    Long[] epochs = new Long[n];
    Long[] batches = new Long[n];
    Long[] seqs = new Long[n];
    for (int j = 0; j < n; j++) {
      CommittedPosition p = committed.get(j);
      keys[j] = p.instanceKey();
      buckets[j] = p.bucket();
      epochs[j] = p.epoch();
      batches[j] = p.batch();
      seqs[j] = p.seq();
    }
    return run(
        "recover",
        // Read along the due index: no bitmap of the key's whole backlog.
        request.expiredOnly() ? OutboxSql.SWEEP_PLAN : OutboxSql.CLAIM_PLAN,
        share.ownsAll() ? sql.recover : sql.recoverInShare,
        (c, statement) -> {
          statement
              .set("now", this::setNow)
              .setArray("committed_keys", textArray(c, keys))
              .setArray("committed_buckets", c.createArrayOf("integer", buckets))
              .setArray("committed_epochs", c.createArrayOf("bigint", epochs))
              .setArray("committed_batches", c.createArrayOf("bigint", batches))
              .setArray("committed_seqs", c.createArrayOf("bigint", seqs))
              .setString("instance_key", instanceKey)
              .setLong("after_seq", afterSeq)
              .setInt("page_rows", pageRows)
              .setLong("epoch", request.epoch())
              .setBoolean("expired_only", request.expiredOnly())
              .setInt("max_attempts", request.maxAttempts())
              .setString("own_owners", request.ownOwners());
          if (share.ownsAll()) {
            statement.setInt("buckets", share.buckets()); // a row's bucket, for its position
          } else {
            bindShare(statement, share);
          }
          // By seq, as Recovery promises: RETURNING gives its rows in no order of its own (sorted
          // here rather than in the statement, whose plan sorts nothing).
          SortedMap<Long, String> published = new TreeMap<>();
          SortedMap<Long, String> released = new TreeMap<>();
          SortedMap<Long, String> laterEpoch = new TreeMap<>();
          SortedMap<Long, String> exhausted = new TreeMap<>();
          SortedSet<Long> suspects = new TreeSet<>();
          SortedMap<Long, String> foreign = new TreeMap<>();
          SortedMap<Long, String> foreignReleased = new TreeMap<>();
          long read = 0;
          long lastSeq = afterSeq;
          try (ResultSet rs = planned(statement)) {
            while (rs.next()) {
              String kind = rs.getString("kind");
              long seq = rs.getLong("seq");
              String messageId = rs.getString("message_id");
              switch (kind) {
                case "published" -> published.put(seq, messageId);
                case "released" -> released.put(seq, messageId);
                case "suspect" -> {
                  released.put(seq, messageId);
                  suspects.add(seq);
                }
                case "exhausted" -> exhausted.put(seq, messageId);
                case "later epoch" -> laterEpoch.put(seq, messageId);
                case "foreign" -> foreign.put(seq, messageId);
                case "foreign released" -> foreignReleased.put(seq, messageId);
                default -> { // the page's own row
                  read = rs.getLong("rows_read");
                  lastSeq = read == 0 ? afterSeq : seq;
                }
              }
            }
          }
          return new RecoveryPage(
              new Recovery(
                  List.copyOf(published.values()),
                  List.copyOf(released.values()),
                  List.copyOf(laterEpoch.values()),
                  List.copyOf(exhausted.values()),
                  List.copyOf(suspects),
                  List.copyOf(foreign.values()),
                  List.copyOf(foreignReleased.values())),
              lastSeq,
              read >= pageRows);
        });
  }

  @Override
  public ClaimResult claimAbandoned(ClaimRequest request) {
    claimedKeys.addAll(request.instanceKeys());
    return run(
        "claim-abandoned",
        OutboxSql.CLAIM_PLAN,
        request.ordered() ? claims().claimAbandonedOrdered : claims().claimAbandonedUnordered,
        (c, statement) ->
            readClaim(
                planned(
                    bindPayloadReadLimit(
                        statement
                            .set("now", this::setNow)
                            .setArray(
                                "instance_keys", textArray(c, request.instanceKeyList().toArray()))
                            .setInt("max_attempts", request.maxAttempts())
                            .setString("owner", request.owner())
                            .setLong("lease_ms", request.leaseDuration().toMillis()),
                        request))));
  }

  private static NamedSql.Binder bindPayloadReadLimit(
      NamedSql.Binder statement, ClaimRequest request) throws SQLException {
    return statement
        .setInt("payload_read_limit", request.payloadReadLimit())
        .setInt("headers_read_limit", request.headersReadLimit());
  }

  @Override
  public boolean hasAbandoned(ClaimRequest request) {
    return run(
        "find-abandoned",
        OutboxSql.CLAIM_PLAN,
        request.ordered() ? sql.findAbandonedOrdered : sql.findAbandonedUnordered,
        (c, statement) -> {
          statement
              .set("now", this::setNow)
              .setArray("instance_keys", textArray(c, request.instanceKeyList().toArray()));
          if (request.ordered()) {
            statement.setString("owner", request.owner()); // its own live leases block nothing
          }
          try (ResultSet rs = planned(statement)) {
            return rs.next();
          }
        });
  }

  private ClaimResult readClaim(ResultSet result) throws SQLException {
    List<ClaimedMessage> claimed = new ArrayList<>();
    List<ExhaustedMessage> exhausted = new ArrayList<>();
    try (ResultSet rs = result) {
      while (rs.next()) {
        if (OutboxColumns.Claimed.isExhausted(rs)) {
          exhausted.add(OutboxColumns.Claimed.exhausted(rs));
        } else {
          claimed.add(OutboxColumns.Claimed.claimed(rs, columns));
        }
      }
    }
    // UPDATE ... RETURNING has no order; records must leave in insertion order.
    claimed.sort(Comparator.comparingLong(ClaimedMessage::seq));
    return new ClaimResult(claimed, exhausted);
  }

  @Override
  public Outcome markPublished(PublishedAck ack) {
    return markPublished(List.of(ack)).get(0);
  }

  @Override
  public List<Outcome> markPublished(List<PublishedAck> acks) {
    return markPublished(acks, false);
  }

  @Override
  public List<Outcome> markPublishedSkippingLocked(List<PublishedAck> acks) {
    return markPublished(acks, true);
  }

  private List<Outcome> markPublished(List<PublishedAck> acks, boolean skippingLocked) {
    if (acks.isEmpty()) {
      return List.of();
    }
    // A repeated ack (same row, same lease) is sent once: joined twice to its row, PostgreSQL
    // would apply either one's coordinates. Repeats are CLAIM_LOST, as if written one by one.
    List<PublishedAck> sent = new ArrayList<>();
    // Each ack's position among those sent; a repeat's is its first's, negated, minus one.
    int[] sentAs = new int[acks.size()];
    Map<HeldLease, Integer> seen = new HashMap<>();
    for (int j = 0; j < acks.size(); j++) {
      PublishedAck ack = acks.get(j);
      Integer first =
          seen.putIfAbsent(new HeldLease(ack.messageId(), ack.seq(), ack.lease()), sent.size());
      if (first == null) {
        sentAs[j] = sent.size();
        sent.add(ack);
      } else {
        sentAs[j] = -first - 1;
      }
    }
    int n = sent.size();
    Object[] owners = sent.stream().map(ack -> ack.lease().owner()).toArray();
    Outcome[] written =
        run(
            skippingLocked ? "mark-published-skipping-locked" : "mark-published",
            OutboxSql.PUBLISH_PLAN,
            skippingLocked ? sql.markPublishedSkippingLocked : sql.markPublishedBatch,
            (c, statement) -> {
              bindAcks(c, statement.set("now", this::setNow), sent)
                  .setArray("owners", textArray(c, owners))
                  .setArray("instance_keys", claimedKeys(c));
              return skippingLocked
                  ? publishedOrLocked(planned(statement), n)
                  : applied(returnedPositions(planned(statement), n));
            });
    List<Outcome> outcomes = new ArrayList<>(acks.size());
    for (int position : sentAs) {
      // A repeat of an ack whose row was locked is undecided too: lost, its ledger entry would be
      // settled while the first waits, its lease no longer renewed.
      outcomes.add(
          position >= 0
              ? written[position]
              : written[-position - 1] == Outcome.ROW_LOCKED
                  ? Outcome.ROW_LOCKED
                  : Outcome.CLAIM_LOST);
    }
    return outcomes;
  }

  @Override
  public Set<String> publishedUnderOwnLease(List<PublishedAck> acks) {
    if (acks.isEmpty() || !keepsPublishedLog) {
      return Set.of(); // without the log, nothing tells our publish from another owner's
    }
    return run(
        "published-under-own-lease",
        sql.publishedUnderOwnLease,
        (c, statement) ->
            Set.copyOf(
                messageIds(
                    bindAcks(c, statement, acks).setArray("instance_keys", claimedKeys(c)))));
  }

  /** Binds each ack's message id, seq, lease token and Kafka coordinates, as arrays in order. */
  private static NamedSql.Binder bindAcks(
      Connection c, NamedSql.Binder statement, List<PublishedAck> acks) throws SQLException {
    int n = acks.size();
    String[] ids = new String[n];
    Long[] seqs = new Long[n];
    Long[] tokens = new Long[n];
    String[] topics = new String[n];
    Integer[] partitions = new Integer[n];
    Long[] offsets = new Long[n];
    for (int j = 0; j < n; j++) {
      PublishedAck ack = acks.get(j);
      ids[j] = ack.messageId();
      seqs[j] = ack.seq();
      tokens[j] = ack.lease().token();
      topics[j] = ack.coordinates().topic();
      partitions[j] = ack.coordinates().partition();
      offsets[j] = ack.coordinates().offset();
    }
    return statement
        .setArray("message_ids", textArray(c, ids))
        .setArray("seqs", c.createArrayOf("bigint", seqs))
        .setArray("tokens", c.createArrayOf("bigint", tokens))
        .setArray("kafka_topics", textArray(c, topics))
        .setArray("kafka_partitions", c.createArrayOf("integer", partitions))
        .setArray("kafka_offsets", c.createArrayOf("bigint", offsets));
  }

  @Override
  public Outcome retryLater(
      String messageId, Lease lease, String reasonCode, Duration delay, int maxAttempts) {
    return run(
        "retry-later",
        sql.retryLater,
        (c, statement) -> {
          statement
              .set("now", this::setNow)
              .setInt("max_attempts", maxAttempts)
              .setString("reason", ReasonCodes.require(reasonCode))
              .setLong("delay_ms", Math.max(0, delay.toMillis()))
              .setString("message_id", messageId);
          try (ResultSet rs = fenced(c, statement, lease).executeQuery()) {
            if (!rs.next()) {
              return Outcome.CLAIM_LOST;
            }
            return MessageStatus.valueOf(rs.getString(1)) == MessageStatus.EXHAUSTED
                ? Outcome.EXHAUSTED
                : Outcome.APPLIED;
          }
        });
  }

  @Override
  public Outcome markFailed(
      String messageId, Lease lease, String reasonCode, KafkaCoordinates deadLetter) {
    return run(
        "mark-failed",
        sql.markFailed,
        (c, statement) -> {
          statement
              .set("now", this::setNow)
              .setString("reason", ReasonCodes.require(reasonCode))
              .setString("dead_letter_topic", deadLetter == null ? null : deadLetter.topic())
              .setObject(
                  "dead_letter_partition",
                  deadLetter == null ? null : deadLetter.partition(),
                  Types.INTEGER)
              .setObject(
                  "dead_letter_offset",
                  deadLetter == null ? null : deadLetter.offset(),
                  Types.BIGINT)
              .setString("message_id", messageId);
          return fenced(c, statement, lease).executeUpdate() == 1
              ? Outcome.APPLIED
              : Outcome.CLAIM_LOST;
        });
  }

  @Override
  public List<Boolean> recordDeadLetterCopies(List<DeadLetterCopy> asked) {
    if (asked.isEmpty()) {
      return List.of();
    }
    // In seq order, the order the rows are locked in: an operator's change of several parked rows
    // locking them in another order could deadlock with it.
    int[] order =
        IntStream.range(0, asked.size())
            .boxed()
            .sorted(Comparator.comparingLong(i -> asked.get(i).seq()))
            .mapToInt(Integer::intValue)
            .toArray();
    List<DeadLetterCopy> copies = Arrays.stream(order).mapToObj(asked::get).toList();
    boolean[] recorded =
        run(
            "record-dead-letter-copies",
            OutboxSql.PUBLISH_PLAN,
            sql.recordDeadLetterCopies,
            (c, statement) ->
                returnedPositions(
                    planned(
                        statement
                            .setArray("seqs", column(c, "bigint", copies, DeadLetterCopy::seq))
                            .setArray(
                                "message_ids",
                                textArray(
                                    c, copies.stream().map(DeadLetterCopy::messageId).toArray()))
                            .setArray("tokens", column(c, "bigint", copies, DeadLetterCopy::token))
                            .setArray("epochs", column(c, "bigint", copies, DeadLetterCopy::epoch))
                            .setArray("batches", column(c, "bigint", copies, DeadLetterCopy::batch))
                            .setArray(
                                "topics",
                                textArray(
                                    c, copies.stream().map(d -> d.position().topic()).toArray()))
                            .setArray(
                                "partitions",
                                column(c, "integer", copies, d -> d.position().partition()))
                            .setArray(
                                "offsets", column(c, "bigint", copies, d -> d.position().offset()))
                            .setArray("instance_keys", claimedKeys(c))),
                    copies.size()));
    Boolean[] outcomes = new Boolean[recorded.length];
    for (int i = 0; i < recorded.length; i++) {
      outcomes[order[i]] = recorded[i];
    }
    return List.of(outcomes);
  }

  /** One field of each of {@code copies}, as an SQL array of {@code type}. */
  private static Array column(
      Connection c,
      String type,
      List<DeadLetterCopy> copies,
      Function<DeadLetterCopy, Object> field)
      throws SQLException {
    return c.createArrayOf(type, copies.stream().map(field).toArray());
  }

  @Override
  public List<Outcome> park(List<ParkRequest> parks) {
    if (parks.isEmpty()) {
      return List.of();
    }
    int n = parks.size();
    boolean[] applied =
        run(
            "park",
            OutboxSql.PUBLISH_PLAN,
            sql.park,
            (c, statement) -> {
              bindParks(c, statement.set("now", this::setNow), parks)
                  .setArray(
                      "owners", textArray(c, parks.stream().map(p -> p.lease().owner()).toArray()))
                  .setArray("instance_keys", claimedKeys(c));
              return returnedPositions(planned(statement), n);
            });
    List<Outcome> outcomes = new ArrayList<>(n);
    for (boolean parked : applied) {
      outcomes.add(parked ? Outcome.APPLIED : Outcome.CLAIM_LOST);
    }
    return outcomes;
  }

  @Override
  public Set<String> parkedUnderOwnLease(List<ParkRequest> parks) {
    if (parks.isEmpty()) {
      return Set.of();
    }
    return run(
        "parked-under-own-lease",
        OutboxSql.ACKS_PLAN,
        sql.parkedUnderOwnLease,
        (c, statement) -> {
          bindParks(c, statement, parks)
              .setArray(
                  "epochs",
                  c.createArrayOf("bigint", parks.stream().map(ParkRequest::epoch).toArray()))
              .setArray(
                  "batches",
                  c.createArrayOf("bigint", parks.stream().map(ParkRequest::batch).toArray()))
              .setArray("instance_keys", claimedKeys(c));
          return returnedIds(planned(statement));
        });
  }

  /**
   * Which of {@code n} elements bound as arrays a statement applied: it returns the position (the
   * ordinality, from 1) of each.
   */
  private static boolean[] returnedPositions(ResultSet result, int n) throws SQLException {
    boolean[] positions = new boolean[n];
    try (ResultSet rs = result) {
      while (rs.next()) {
        positions[(int) rs.getLong(1) - 1] = true;
      }
    }
    return positions;
  }

  /** APPLIED where {@code positions} holds true, CLAIM_LOST elsewhere. */
  private static Outcome[] applied(boolean[] positions) {
    Outcome[] outcomes = new Outcome[positions.length];
    for (int i = 0; i < positions.length; i++) {
      outcomes[i] = positions[i] ? Outcome.APPLIED : Outcome.CLAIM_LOST;
    }
    return outcomes;
  }

  /**
   * The outcome of each of {@code n} acks from {@link OutboxSql#markPublishedSkippingLocked}'s rows
   * (position, applied): APPLIED or ROW_LOCKED as returned, CLAIM_LOST where none was.
   */
  private static Outcome[] publishedOrLocked(ResultSet result, int n) throws SQLException {
    Outcome[] outcomes = new Outcome[n];
    Arrays.fill(outcomes, Outcome.CLAIM_LOST);
    try (ResultSet rs = result) {
      while (rs.next()) {
        outcomes[(int) rs.getLong(1) - 1] = rs.getBoolean(2) ? Outcome.APPLIED : Outcome.ROW_LOCKED;
      }
    }
    return outcomes;
  }

  /** Binds each park's seq, message id, lease token and reason, as arrays in order. */
  private static NamedSql.Binder bindParks(
      Connection c, NamedSql.Binder statement, List<ParkRequest> parks) throws SQLException {
    return statement
        .setArray("seqs", c.createArrayOf("bigint", parks.stream().map(ParkRequest::seq).toArray()))
        .setArray("message_ids", textArray(c, parks.stream().map(ParkRequest::messageId).toArray()))
        .setArray(
            "tokens",
            c.createArrayOf("bigint", parks.stream().map(p -> p.lease().token()).toArray()))
        .setArray("reasons", textArray(c, parks.stream().map(ParkRequest::reasonCode).toArray()));
  }

  @Override
  public Outcome release(String messageId, Lease lease) {
    return run(
        "release",
        sql.release,
        (c, statement) ->
            fenced(c, statement.setString("message_id", messageId), lease).executeUpdate() == 1
                ? Outcome.APPLIED
                : Outcome.CLAIM_LOST);
  }

  @Override
  public Renewal renew(List<HeldLease> leases, Duration leaseDuration) {
    if (leases.isEmpty()) {
      return Renewal.allRenewed();
    }
    LeaseColumns held = LeaseColumns.of(leases);
    Map<String, Boolean> stillHeld =
        run(
            "renew",
            OutboxSql.ACKS_PLAN,
            sql.renew,
            (c, statement) -> {
              held.bind(
                      c,
                      statement
                          .set("now", this::setNow)
                          .setLong("lease_ms", leaseDuration.toMillis()))
                  .setArray("instance_keys", claimedKeys(c));
              Map<String, Boolean> renewed = new HashMap<>();
              try (ResultSet rs = planned(statement)) {
                while (rs.next()) {
                  renewed.put(rs.getString(1), rs.getBoolean(2));
                }
              }
              return renewed;
            });
    Set<String> lost = new HashSet<>();
    Set<String> locked = new HashSet<>();
    for (String id : held.ids()) {
      Boolean renewed = stillHeld.get(id);
      if (renewed == null) {
        lost.add(id);
      } else if (!renewed) {
        locked.add(id);
      }
    }
    return new Renewal(lost, locked);
  }

  @Override
  public BacklogSnapshot inspect(Set<String> instanceKeys, boolean countPublished) {
    Object[] keys = InstanceKeys.requireValid(instanceKeys).toArray();
    Map<MessageStatus, Long> counts = new EnumMap<>(MessageStatus.class);
    try (Connection c = dataSource.getConnection()) {
      try (PreparedStatement ps = c.prepareStatement(sql.countByStatus.jdbc());
          ResultSet rs =
              sql.countByStatus
                  .bind(ps)
                  .setArray("instance_keys", textArray(c, keys))
                  .setBoolean("count_published", countPublished)
                  .executeQuery()) {
        while (rs.next()) {
          counts.merge(MessageStatus.valueOf(rs.getString(1)), rs.getLong(2), Long::sum);
        }
      }
      return new BacklogSnapshot(counts, lag(c, keys));
    } catch (SQLException e) {
      throw SqlStates.classify(e, "inspect");
    }
  }

  @Override
  public Duration lag(Set<String> instanceKeys) {
    Object[] keys = InstanceKeys.requireValid(instanceKeys).toArray();
    try (Connection c = dataSource.getConnection()) {
      return lag(c, keys);
    } catch (SQLException e) {
      throw SqlStates.classify(e, "lag");
    }
  }

  @Override
  public Map<MessageStatus, Long> countParked(Set<String> instanceKeys) {
    Object[] keys = InstanceKeys.requireValid(instanceKeys).toArray();
    Map<MessageStatus, Long> counts = new EnumMap<>(MessageStatus.class);
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.countParked.jdbc());
        ResultSet rs =
            sql.countParked.bind(ps).setArray("instance_keys", textArray(c, keys)).executeQuery()) {
      while (rs.next()) {
        counts.put(MessageStatus.valueOf(rs.getString(1)), rs.getLong(2));
      }
      return counts;
    } catch (SQLException e) {
      throw SqlStates.classify(e, "countParked");
    }
  }

  @Override
  public long countLeasedElsewhere(Set<String> instanceKeys, String ownOwners) {
    Object[] keys = InstanceKeys.requireValid(instanceKeys).toArray();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.leasedElsewhere.jdbc());
        ResultSet rs =
            sql.leasedElsewhere
                .bind(ps)
                .set("now", this::setNow)
                .setArray("instance_keys", textArray(c, keys))
                .setString("own_owners", ownOwners)
                .executeQuery()) {
      return rs.next() ? rs.getLong(1) : 0;
    } catch (SQLException e) {
      throw SqlStates.classify(e, "countLeasedElsewhere");
    }
  }

  private Duration lag(Connection c, Object[] keys) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.lag.jdbc());
        ResultSet rs =
            sql.lag
                .bind(ps)
                .set("now", this::setNow)
                .setArray("instance_keys", textArray(c, keys))
                .executeQuery()) {
      return Duration.ofMillis(rs.next() ? rs.getLong(1) : 0);
    }
  }

  /**
   * The published log's entries, then the rows published before schema version 9 still in the
   * table, in one transaction: a failure of the second undoes the first, so a batch that fails
   * deleted nothing, and retention's count (and the CLI's purge) never leaves deleted entries out.
   */
  @Override
  public int deletePublished(Set<String> instanceKeys, Instant publishedBefore, int limit) {
    return deletePublished(instanceKeys, publishedBefore, limit, OutboxSql.RETENTION_LOCK_WAIT);
  }

  /**
   * As {@link #deletePublished(Set, Instant, int)}, waiting at most {@code lockWait} for a lock
   * (zero: the session's lock_timeout): the CLI's purge passes its --lock-timeout. Past it the
   * batch fails with 55P03 and deleted nothing.
   */
  public int deletePublished(
      Set<String> instanceKeys, Instant publishedBefore, int limit, Duration lockWait) {
    Object[] keys = InstanceKeys.requireValid(instanceKeys).toArray();
    OffsetDateTime before = OffsetDateTime.ofInstant(publishedBefore, ZoneOffset.UTC);
    return run(
        DELETE_PUBLISHED,
        // Along the log's index, oldest first: never a scan of the log.
        OutboxSql.retentionPlan(lockWait),
        sql.deletePublishedLog,
        (c, statement) -> {
          bindRetention(c, statement, keys, before, limit);
          int deleted;
          try (ResultSet rs = planned(statement)) {
            rs.next();
            deleted = rs.getInt(1);
          }
          if (deleted >= limit) {
            return deleted;
          }
          try (PreparedStatement ps = c.prepareStatement(sql.deletePublished.jdbc())) {
            return deleted
                + bindRetention(c, sql.deletePublished.bind(ps), keys, before, limit - deleted)
                    .executeUpdate();
          }
        });
  }

  private static NamedSql.Binder bindRetention(
      Connection c, NamedSql.Binder statement, Object[] keys, OffsetDateTime before, int limit)
      throws SQLException {
    return statement
        .setArray("instance_keys", textArray(c, keys))
        .setObject("published_before", before, Types.TIMESTAMP_WITH_TIMEZONE)
        .setInt("limit", limit);
  }

  @Override
  public UnheldPage releaseUnheld(
      String instanceKey,
      String owner,
      Collection<Long> heldSeqs,
      long handedThroughBatch,
      long afterSeq,
      int pageRows) {
    InstanceKeys.requireValid(Set.of(instanceKey));
    OutboxStore.requirePageRows(pageRows);
    Long[] held = heldSeqs.toArray(new Long[0]);
    return run(
        "release-unheld",
        OutboxSql.CLAIM_PLAN, // read along the due index: no bitmap of the key's whole backlog
        sql.releaseUnheld,
        (c, statement) -> {
          statement
              .setString("instance_key", instanceKey)
              .setString("owner", owner)
              .setArray("held_seqs", c.createArrayOf("bigint", held))
              .setLong("handed_through", handedThroughBatch)
              .setLong("after_seq", afterSeq)
              .setInt("page_rows", pageRows);
          try (ResultSet rs = planned(statement)) {
            rs.next();
            long read = rs.getLong("rows_read");
            long lastSeq = read == 0 ? afterSeq : rs.getLong("last_seq");
            List<String> released =
                new ArrayList<>(List.of((String[]) rs.getArray("released").getArray()));
            released.sort(null);
            return new UnheldPage(released, lastSeq, read >= pageRows);
          }
        });
  }

  @Override
  public boolean claimsEnded(String owner) {
    return run(
        "claim-barrier",
        sql.claimsEnded,
        (c, statement) -> {
          try (ResultSet rs = statement.setString("owner", owner).ready().executeQuery()) {
            rs.next();
            return rs.getBoolean(1);
          }
        });
  }

  @Override
  public List<String> giveBack(List<HeldLease> rows) {
    return underHeldLeases("give-back", sql.giveBack, rows);
  }

  /**
   * Runs {@code statement} over the rows of {@code leases}, found as a renewal finds them (under
   * {@link OutboxSql#ACKS_PLAN}); returns the message ids it returned, sorted.
   */
  private List<String> underHeldLeases(
      String operation, NamedSql statement, List<HeldLease> leases) {
    if (leases.isEmpty()) {
      return List.of();
    }
    LeaseColumns held = LeaseColumns.of(leases);
    List<String> ids =
        new ArrayList<>(
            run(
                operation,
                OutboxSql.ACKS_PLAN,
                statement,
                (c, binder) -> {
                  if (statement.names().contains("now")) {
                    binder.set("now", this::setNow);
                  }
                  held.bind(c, binder).setArray("instance_keys", claimedKeys(c));
                  return returnedIds(planned(binder));
                }));
    ids.sort(null);
    return ids;
  }

  /** Held leases as the arrays a renewal or a give-back binds, one element per row. */
  private record LeaseColumns(String[] ids, Long[] seqs, String[] owners, Long[] tokens) {
    static LeaseColumns of(List<HeldLease> leases) {
      int n = leases.size();
      LeaseColumns columns =
          new LeaseColumns(new String[n], new Long[n], new String[n], new Long[n]);
      for (int j = 0; j < n; j++) {
        HeldLease held = leases.get(j);
        columns.ids[j] = held.messageId();
        columns.seqs[j] = held.seq();
        columns.owners[j] = held.lease().owner();
        columns.tokens[j] = held.lease().token();
      }
      return columns;
    }

    NamedSql.Binder bind(Connection c, NamedSql.Binder statement) throws SQLException {
      return statement
          .setArray("seqs", c.createArrayOf("bigint", seqs))
          .setArray("message_ids", textArray(c, ids))
          .setArray("owners", textArray(c, owners))
          .setArray("tokens", c.createArrayOf("bigint", tokens));
    }
  }

  @Override
  public EndedLeases expireLeases(List<HeldLease> leases) {
    if (leases.isEmpty()) {
      return EndedLeases.ended(List.of());
    }
    LeaseColumns held = LeaseColumns.of(leases);
    List<String> ended = new ArrayList<>();
    Set<String> locked = new HashSet<>();
    run(
        "expire-leases",
        OutboxSql.ACKS_PLAN,
        sql.expireLeases,
        (c, statement) -> {
          held.bind(c, statement.set("now", this::setNow))
              .setArray("instance_keys", claimedKeys(c));
          try (ResultSet rs = planned(statement)) {
            while (rs.next()) {
              (rs.getBoolean(2) ? ended : locked).add(rs.getString(1));
            }
          }
          return null;
        });
    ended.sort(null);
    return new EndedLeases(ended, locked);
  }

  /** The message ids a statement returned (its first column), sorted. */
  private static List<String> messageIds(NamedSql.Binder statement) throws SQLException {
    List<String> ids = new ArrayList<>();
    try (ResultSet rs = statement.ready().executeQuery()) {
      while (rs.next()) {
        ids.add(rs.getString(1));
      }
    }
    ids.sort(null);
    return ids;
  }

  @Override
  public Instant now() {
    return run(
        "now",
        sql.now,
        (c, statement) -> {
          try (ResultSet rs = statement.set("now", this::setNow).executeQuery()) {
            rs.next();
            Timestamp ts = rs.getTimestamp(1);
            return ts == null ? null : ts.toInstant();
          }
        });
  }

  @Override
  public void releaseIdleConnections() {
    if (ownedResource instanceof HikariDataSource pool && !pool.isClosed()) {
      try {
        // Not refilled after the eviction: the pool keeps none idle from now on.
        pool.getHikariConfigMXBean().setMinimumIdle(0);
        pool.getHikariPoolMXBean().softEvictConnections();
      } catch (RuntimeException e) { // NOPMD: a pool closed meanwhile has nothing to release
        // A stop must go on: the close that follows closes the pool whatever it holds.
      }
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

  /** One statement on its own connection; a driver failure is classified as {@code operation}. */
  private <T> T run(String operation, NamedSql sql, Work<T> work) {
    return run(operation, null, sql, work);
  }

  /**
   * Runs {@code sql} behind the planner {@code settings}, in a transaction of their own ({@link
   * #planned(String, String)}); or alone in autocommit when {@code settings} is null.
   */
  private <T> T run(String operation, String settings, NamedSql sql, Work<T> work) {
    String jdbc = settings == null ? sql.jdbc() : planned(settings, sql.jdbc());
    Connection connection;
    try {
      connection = dataSource.getConnection();
    } catch (SQLException e) {
      // No connection (the pool's wait timed out, or none could be opened): nothing was sent, so
      // nothing of it committed, whatever the SQLState says (a lost claim's release reads the
      // whole backlog for the rows of one that may have).
      throw classify(e, operation).beforeSending();
    }
    try (Connection c = connection;
        PreparedStatement ps = c.prepareStatement(jdbc)) {
      NamedSql.Binder statement = sql.bind(ps);
      return settings == null
          ? work.run(c, statement)
          : inTransaction(c, () -> work.run(c, statement));
    } catch (SQLException e) {
      throw classify(e, operation);
    }
  }

  /**
   * By SQLState; a 55000 is asked about further: the server refusing to change a table that a
   * publication needs a replica identity of fails the task with what to fix, where retrying it like
   * the 55000 of a server in recovery would leave the task running and relaying nothing.
   */
  private OutboxStoreException classify(SQLException e, String operation) {
    return ReplicaIdentity.classify(
        dataSource, table, SqlStates.classify(e, operation), DELETE_PUBLISHED.equals(operation));
  }

  /**
   * Runs {@code work} in one transaction on {@code c}, then gives the connection back as it was. A
   * failure is reported as it happened: on a connection that broke (a read timed out, the server
   * went away) the rollback and the reset fail too, and their errors must not take its place and
   * its SQLState, which says whether to retry. The pool discards a broken connection, and resets
   * the auto-commit of one it keeps.
   */
  private static <T> T inTransaction(Connection c, Transaction<T> work) throws SQLException {
    c.setAutoCommit(false);
    T result;
    try {
      result = work.run();
      c.commit();
    } catch (SQLException | RuntimeException e) {
      try {
        c.rollback();
        c.setAutoCommit(true);
      } catch (SQLException cleanup) {
        e.addSuppressed(cleanup);
      }
      throw e;
    }
    c.setAutoCommit(true);
    return result;
  }

  @FunctionalInterface
  private interface Transaction<T> {
    T run() throws SQLException;
  }

  @FunctionalInterface
  private interface Work<T> {
    T run(Connection c, NamedSql.Binder statement) throws SQLException;
  }

  /** Fences a write after a claim on the lease and on the instance keys claimed for. */
  private NamedSql.Binder fenced(Connection c, NamedSql.Binder statement, Lease lease)
      throws SQLException {
    return statement
        .setString("owner", lease.owner())
        .setLong("token", lease.token())
        .setArray("instance_keys", claimedKeys(c));
  }

  private Array claimedKeys(Connection c) throws SQLException {
    return textArray(c, claimedKeys.toArray());
  }

  private static Array textArray(Connection c, Object[] values) throws SQLException {
    return c.createArrayOf("text", values);
  }

  /**
   * Binds {@code :now} as text (ISO-8601, or a text null), cast to timestamptz in the statement. A
   * typed parameter: a timestamptz null goes out untyped, and the driver then has the statement
   * described once it is server-prepared, after which it sends a Sync ahead of it, an extra round
   * trip between a planned statement's settings and the statement ({@link #planned(String,
   * String)}).
   */
  private void setNow(PreparedStatement ps, int index) throws SQLException {
    Instant override = clock.override();
    if (override == null) {
      ps.setNull(index, Types.VARCHAR);
    } else {
      ps.setString(index, override.toString());
    }
  }

  private static Set<String> returnedIds(ResultSet result) throws SQLException {
    Set<String> ids = new HashSet<>();
    try (ResultSet rs = result) {
      while (rs.next()) {
        ids.add(rs.getString(1));
      }
    }
    return ids;
  }
}
