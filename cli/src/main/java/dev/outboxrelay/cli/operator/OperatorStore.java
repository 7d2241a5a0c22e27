package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.NamedSql;
import dev.outboxrelay.store.postgres.OutboxColumns;
import dev.outboxrelay.store.postgres.OutboxColumns.Row;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.ReplicaIdentity;
import dev.outboxrelay.store.postgres.SqlStates;
import dev.outboxrelay.writer.InstanceKeys;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The operator commands' reads, their writes to parked rows (requeue, discard) and their parking of
 * rows awaiting delivery (park), each statement its own transaction, each bound to one instance
 * key. A change by message id changes at most one row per id, or nothing ({@link
 * MessageIdNotUniqueException}). Failures leave as {@link
 * dev.outboxrelay.store.OutboxStoreException}, classified by SQLState and without driver text.
 * Counts, lag and the retention delete are the relay store's own (see {@code PostgresOutboxStore}).
 *
 * <p>Published rows are read from the table's published log and, for rows published before schema
 * version 9, from the table itself ({@link OperatorSql}). A log entry reads as a PUBLISHED row
 * without lease, retry state, payload or headers.
 */
public final class OperatorStore {
  private final DataSource dataSource;
  private final OutboxTable table;
  private final OperatorSql sql;

  public OperatorStore(DataSource dataSource, OutboxTable table) {
    this(dataSource, table, ColumnMapping.RELAY, true);
  }

  /**
   * For a table whose message fields have other names or types (an adopted Debezium table).
   *
   * @param payloadIsBytea the payload column is bytea, not jsonb, json, text or varchar
   */
  public OperatorStore(
      DataSource dataSource, OutboxTable table, ColumnMapping columns, boolean payloadIsBytea) {
    this.dataSource = dataSource;
    this.table = table;
    this.sql = new OperatorSql(table, columns, payloadIsBytea);
  }

  /**
   * The oldest row of the key with this status (by insertion order), if any, its age by the
   * database clock at the start of the transaction: for the statuses of the rows in the table
   * (FAILED, EXHAUSTED, ...), not for PUBLISHED ones in the published log.
   */
  public Optional<OldestRow> oldest(String instanceKey, MessageStatus status) {
    return run(
        "oldest-row",
        sql.oldestWithStatus,
        (c, statement) -> {
          try (ResultSet rs =
              statement
                  .setString("instance_key", InstanceKeys.requireValid(instanceKey))
                  .setString("status", status.name())
                  .executeQuery()) {
            if (!rs.next()) {
              return Optional.empty();
            }
            long ageMs = rs.getLong("age_ms");
            Duration age = rs.wasNull() ? null : Duration.ofMillis(ageMs);
            return Optional.of(
                new OldestRow(
                    rs.getString(Row.MESSAGE_ID.label),
                    rs.getString(Row.LAST_FAILURE_CODE.label),
                    age));
          }
        });
  }

  /**
   * Up to {@code limit} rows of the key with this status and a seq above {@code afterSeq}, in seq
   * order. PUBLISHED: the published log's entries and the table's rows published before schema
   * version 9, together.
   */
  public List<RowView> list(String instanceKey, MessageStatus status, long afterSeq, int limit) {
    return run(
        "list",
        sql.list.get(status),
        (c, statement) -> {
          List<RowView> rows = new ArrayList<>();
          try (ResultSet rs =
              statement
                  .setString("instance_key", InstanceKeys.requireValid(instanceKey))
                  .setString("status", status.name())
                  .setLong("after_seq", afterSeq)
                  .setInt("limit", limit)
                  .executeQuery()) {
            while (rs.next()) {
              rows.add(row(rs, false));
            }
          }
          return rows;
        });
  }

  /**
   * The row with this message id, only if it belongs to the key: the table's, else the (latest)
   * entry of the published log; {@link MessageIdNotUniqueException} where several rows of the key
   * hold it. Its payload and headers are read only when {@code withPayload}; otherwise they never
   * leave the database (the published log keeps neither).
   */
  public Optional<RowView> inspect(String instanceKey, String messageId, boolean withPayload) {
    // One of several rows sharing the id (--column-message-id naming an aggregate id) was shown
    // as if it were the row: refused, as the changes refuse it.
    requireOneRowPerId("inspect", instanceKey, List.of(messageId));
    return run(
        "inspect",
        withPayload ? sql.inspectWithPayload : sql.inspect,
        (c, statement) -> {
          try (ResultSet rs =
              statement
                  .setString("instance_key", InstanceKeys.requireValid(instanceKey))
                  .setString("message_id", messageId)
                  .executeQuery()) {
            return rs.next() ? Optional.of(row(rs, withPayload)) : Optional.empty();
          }
        });
  }

  /**
   * What {@link #change} would change now: how many rows, and how many of them have a passed
   * deadline (without the reasons for requested ids that would not be).
   */
  public ParkedChange countParked(ParkedSelection request) {
    if (request.selector() == ParkedSelection.Selector.MESSAGE_IDS) {
      requireOneRowPerId(request);
    }
    return run(
        "count-parked",
        sql.countParked.get(request.selector()),
        (c, statement) -> {
          try (ResultSet rs = bindSelection(c, statement, request).executeQuery()) {
            rs.next();
            return new ParkedChange(
                rs.getLong("changed"), rs.getLong("deadline_passed"), List.of());
          }
        });
  }

  /**
   * How many IN_FLIGHT rows of the key hold a lease that has expired by the database clock at the
   * start of the transaction (in a snapshot, the instant its figures are judged at): claims whose
   * holder stopped renewing them, which the relay takes back.
   */
  public long countExpiredLeases(String instanceKey) {
    return run(
        "count-expired-leases",
        sql.countExpiredLeases,
        (c, statement) -> {
          try (ResultSet rs =
              statement
                  .setString("instance_key", InstanceKeys.requireValid(instanceKey))
                  .executeQuery()) {
            rs.next();
            return rs.getLong(1);
          }
        });
  }

  /**
   * Requeues the chosen rows that are still parked (back to PENDING, due now, with a fresh attempt
   * budget and a bumped lease token), or discards them (deletes them). By message id: one
   * statement, so all or none, and none if an id is several rows' ({@link
   * MessageIdNotUniqueException}). By correlation id or all: in batches of at most {@code
   * batchSize} rows in insertion order, each its own transaction, over the rows of the key parked
   * before the change began; if a batch fails, the batches done stay done, the failure says how
   * many rows they changed ({@link ParkedChangeFailedException}), and running it again continues.
   * Each transaction waits at most {@code lockTimeout} for a lock (zero: the server's
   * lock_timeout), then fails with 55P03, rolled back.
   */
  public ParkedChange change(
      ParkedAction action, ParkedSelection request, int batchSize, Duration lockTimeout) {
    return change(action, request, batchSize, lockTimeout, BatchProgress.NONE);
  }

  /**
   * As {@link #change(ParkedAction, ParkedSelection, int, Duration)}, telling {@code progress} the
   * rows changed so far after each batch commits (in batches only) and asking it before each batch
   * whether to stop, so that a run ended from outside can say exactly what it did.
   *
   * @throws ParkedChangeStoppedException {@code progress} asked to stop before a batch
   */
  public ParkedChange change(
      ParkedAction action,
      ParkedSelection request,
      int batchSize,
      Duration lockTimeout,
      BatchProgress progress) {
    if (batchSize < 1) {
      throw new IllegalArgumentException("batchSize must be positive");
    }
    if (request.selector() == ParkedSelection.Selector.MESSAGE_IDS) {
      return changeMessageIds(action, request, lockTimeout);
    }
    NamedSql batch = sql.changeBatch.get(action).get(request.selector());
    long changed = 0;
    long deadlinePassed = 0;
    boolean batchesBegun = false;
    try (Connection c = dataSource.getConnection()) {
      long upToSeq;
      OffsetDateTime began;
      try (PreparedStatement ps = c.prepareStatement(sql.lastSeq.jdbc());
          ResultSet rs =
              sql.lastSeq
                  .bind(ps)
                  .setString("instance_key", InstanceKeys.requireValid(request.instanceKey()))
                  .executeQuery()) {
        rs.next();
        upToSeq = rs.getLong("up_to_seq");
        began = rs.getObject("began", OffsetDateTime.class);
      }
      long afterSeq = 0;
      batchesBegun = true;
      try (PreparedStatement ps = c.prepareStatement(batch.jdbc())) {
        while (true) {
          if (progress.stopRequested()) {
            throw new ParkedChangeStoppedException(changed);
          }
          long from = afterSeq;
          // Each batch a transaction of its own, to bound its lock waits; counted once committed.
          BatchDone done =
              inTransaction(
                  c,
                  lockTimeout,
                  () -> {
                    NamedSql.Binder statement =
                        bindSelection(c, batch.bind(ps), request)
                            .setLong("after_seq", from)
                            .setLong("up_to_seq", upToSeq)
                            .setObject("parked_by", began, Types.TIMESTAMP_WITH_TIMEZONE)
                            .setInt("limit", batchSize);
                    try (ResultSet rs = statement.executeQuery()) {
                      rs.next();
                      return new BatchDone(
                          rs.getObject("last_seq", Long.class),
                          rs.getLong("changed"),
                          rs.getLong("deadline_passed"));
                    }
                  });
          if (done.lastSeq() == null) {
            return new ParkedChange(changed, deadlinePassed, List.of());
          }
          changed += done.changed();
          deadlinePassed += done.deadlinePassed();
          afterSeq = done.lastSeq();
          if (action == ParkedAction.REQUEUE) {
            progress.committed(changed, deadlinePassed);
          } else {
            progress.committed(changed);
          }
        }
      }
    } catch (SQLException e) {
      boolean sentNothing = e instanceof LockLimitFailed;
      OutboxStoreException failure =
          classify(sentNothing ? ((LockLimitFailed) e).cause() : e, action.verb());
      if (batchesBegun) {
        throw new ParkedChangeFailedException(
            changed, deadlinePassed, sentNothing ? failure.beforeSending() : failure);
      }
      throw failure.beforeSending(); // no change was sent: the connection, or the first read
    }
  }

  private ParkedChange changeMessageIds(
      ParkedAction action, ParkedSelection request, Duration lockTimeout) {
    return runInTransaction(
        action.verb(),
        sql.changeMessageIds.get(action),
        lockTimeout,
        (c, statement) -> {
          long changed = 0;
          long deadlinePassed = 0;
          List<ParkedChange.Skipped> skipped = new ArrayList<>();
          try (ResultSet rs = bindSelection(c, statement, request).executeQuery()) {
            while (rs.next()) {
              requireOneRow(rs);
              if (rs.getBoolean("changed")) {
                changed++;
                deadlinePassed += rs.getBoolean("deadline_passed") ? 1 : 0;
              } else {
                skipped.add(skipped(request, rs));
              }
            }
          }
          return new ParkedChange(changed, deadlinePassed, skipped);
        });
  }

  /**
   * Parks the rows with these message ids that still await delivery under the key (PENDING or
   * AMBIGUOUS, and IN_FLIGHT too if {@code inFlight}, but never under an exactly-once claim):
   * FAILED, PARKED_BY_OPERATOR, lease ended, token bumped. One statement, so all or none; the
   * report names the rows that were in flight when parked, and of those the ones a running task
   * held (a live lease). With {@code dryRun} the same rows are only read (no lock, no write), and
   * the report says what it would have done. An id that several rows of the key hold is refused
   * ({@link MessageIdNotUniqueException}), and nothing is parked. The park waits at most {@code
   * lockTimeout} for a lock (zero: the server's lock_timeout), then fails with 55P03, rolled back.
   */
  public ParkedChange park(
      String instanceKey,
      List<String> messageIds,
      boolean inFlight,
      boolean dryRun,
      Duration lockTimeout) {
    String[] statuses =
        inFlight
            ? new String[] {"PENDING", "AMBIGUOUS", "IN_FLIGHT"}
            : new String[] {"PENDING", "AMBIGUOUS"};
    String[] ids = new LinkedHashSet<>(messageIds).toArray(String[]::new); // each id once
    Work<ParkedChange> park =
        (c, statement) -> {
          statement
              .setString("instance_key", InstanceKeys.requireValid(instanceKey))
              .setArray("statuses", c.createArrayOf("text", statuses))
              .setArray("message_ids", c.createArrayOf("text", ids));
          long parked = 0;
          List<ParkedChange.Skipped> skipped = new ArrayList<>();
          List<String> parkedInFlight = new ArrayList<>();
          List<String> parkedUnderLiveLease = new ArrayList<>();
          try (ResultSet rs = statement.executeQuery()) {
            while (rs.next()) {
              requireOneRow(rs);
              if (rs.getBoolean("changed")) {
                parked++;
                if (rs.getBoolean("in_flight")) {
                  parkedInFlight.add(rs.getString("message_id"));
                }
                if (rs.getBoolean("live_lease")) {
                  parkedUnderLiveLease.add(rs.getString("message_id"));
                }
              } else {
                skipped.add(notParked(rs, inFlight));
              }
            }
          }
          return new ParkedChange(parked, 0, skipped, parkedInFlight, parkedUnderLiveLease);
        };
    return dryRun
        ? run("park", sql.parkDryRun, park)
        : runInTransaction("park", sql.park, lockTimeout, park);
  }

  /**
   * Throws {@link MessageIdNotUniqueException} for a row of a change's report whose requested id
   * several rows of the key hold: the change's transaction is then rolled back.
   */
  private static void requireOneRow(ResultSet rs) throws SQLException {
    long rows = rs.getLong("key_rows");
    if (rows > 1) {
      throw new MessageIdNotUniqueException(rs.getString("message_id"), rows);
    }
  }

  /** As {@link #requireOneRow}, before a dry run by message id counts. */
  private void requireOneRowPerId(ParkedSelection request) {
    requireOneRowPerId("count-parked", request.instanceKey(), request.messageIds());
  }

  private void requireOneRowPerId(String operation, String instanceKey, List<String> messageIds) {
    run(
        operation,
        sql.sharedMessageId,
        (c, statement) -> {
          try (ResultSet rs =
              statement
                  .setString("instance_key", InstanceKeys.requireValid(instanceKey))
                  .setArray("message_ids", c.createArrayOf("text", messageIds.toArray()))
                  .executeQuery()) {
            if (rs.next()) {
              requireOneRow(rs);
            }
            return null;
          }
        });
  }

  /**
   * Why a requested id that is not a row of the key was left alone, or null for the key's own row:
   * nothing about another instance's row is shown, not even its status.
   */
  private static ParkedChange.Skipped notTheKeys(ResultSet rs) throws SQLException {
    String messageId = rs.getString("message_id");
    if (rs.getString("status") == null) {
      return new ParkedChange.Skipped(messageId, ParkedChange.Reason.NOT_FOUND, null);
    }
    if (!rs.getBoolean("own")) {
      return new ParkedChange.Skipped(messageId, ParkedChange.Reason.OTHER_INSTANCE, null);
    }
    return null;
  }

  private static ParkedChange.Skipped notParked(ResultSet rs, boolean inFlight)
      throws SQLException {
    ParkedChange.Skipped foreign = notTheKeys(rs);
    if (foreign != null) {
      return foreign;
    }
    String messageId = rs.getString("message_id");
    MessageStatus current = MessageStatus.valueOf(rs.getString("status"));
    ParkedChange.Reason reason =
        switch (current) {
          case IN_FLIGHT ->
              rs.getBoolean("exactly_once")
                  ? ParkedChange.Reason.IN_FLIGHT_EXACTLY_ONCE
                  : inFlight ? ParkedChange.Reason.CHANGED : ParkedChange.Reason.IN_FLIGHT;
          case PENDING, AMBIGUOUS -> ParkedChange.Reason.CHANGED;
          default -> ParkedChange.Reason.SETTLED;
        };
    // A row that changed meanwhile: its status now unknown here.
    return new ParkedChange.Skipped(
        messageId, reason, reason == ParkedChange.Reason.CHANGED ? null : current);
  }

  private static ParkedChange.Skipped skipped(ParkedSelection request, ResultSet rs)
      throws SQLException {
    ParkedChange.Skipped foreign = notTheKeys(rs);
    if (foreign != null) {
      return foreign;
    }
    String messageId = rs.getString("message_id");
    MessageStatus current = MessageStatus.valueOf(rs.getString("status"));
    if (request.statuses().contains(current)) {
      // Read as selected, yet the update's re-check found it changed meanwhile (a concurrent
      // requeue, say): no longer parked as read, and its status now unknown here.
      return new ParkedChange.Skipped(messageId, ParkedChange.Reason.NOT_PARKED, null);
    }
    ParkedChange.Reason reason =
        ParkedSelection.PARKED.contains(current)
            ? ParkedChange.Reason.STATUS_NOT_SELECTED
            : ParkedChange.Reason.NOT_PARKED;
    return new ParkedChange.Skipped(messageId, reason, current);
  }

  /** Binds the selection: the key, the statuses and the selector's own parameter. */
  private static NamedSql.Binder bindSelection(
      Connection c, NamedSql.Binder statement, ParkedSelection request) throws SQLException {
    statement
        .setString("instance_key", InstanceKeys.requireValid(request.instanceKey()))
        .setArray("statuses", c.createArrayOf("text", request.statusNames()))
        .setBoolean("dead_lettered_only", request.deadLetteredOnly());
    return switch (request.selector()) {
      case MESSAGE_IDS ->
          statement.setArray(
              "message_ids", c.createArrayOf("text", request.messageIds().toArray()));
      case CORRELATION_ID -> statement.setString("correlation_id", request.correlationId());
      case ALL -> statement; // nothing further: every parked row of the key
    };
  }

  /** Whether any row {@link #countPurgeable} counts is left: the first found, no count. */
  public boolean hasPurgeable(String instanceKey, Instant publishedBefore) {
    return purgeable(sql.hasPurgeable, instanceKey, publishedBefore, s -> s) == 1;
  }

  /**
   * How many PUBLISHED rows of the key were published before the cutoff: entries of the published
   * log and rows published before schema version 9, still in the table, each counted up to {@code
   * upTo} (so at most twice that in all; {@link Long#MAX_VALUE} for every one).
   */
  public long countPurgeable(String instanceKey, Instant publishedBefore, long upTo) {
    return purgeable(
        sql.countPurgeable, instanceKey, publishedBefore, s -> s.setLong("up_to", upTo));
  }

  /** {@code query}'s one value (a boolean as 0 or 1) for the key's rows before the cutoff. */
  private long purgeable(NamedSql query, String instanceKey, Instant publishedBefore, Bind more) {
    OffsetDateTime cutoff = OffsetDateTime.ofInstant(publishedBefore, ZoneOffset.UTC);
    return run(
        "count-purgeable",
        query,
        (c, statement) -> {
          try (ResultSet rs =
              more.apply(
                      statement
                          .setString("instance_key", InstanceKeys.requireValid(instanceKey))
                          .set("published_before", (ps, i) -> ps.setObject(i, cutoff)))
                  .executeQuery()) {
            rs.next();
            Object value = rs.getObject(1);
            return value instanceof Boolean b ? (b ? 1L : 0L) : ((Number) value).longValue();
          }
        });
  }

  /** True when the outbox table exists (whoever created it). */
  public boolean tableExists() {
    return run(
        "table-exists",
        sql.tableExists,
        (c, statement) -> {
          try (ResultSet rs = statement.setString("table_name", table.qualified()).executeQuery()) {
            return rs.next() && rs.getBoolean(1);
          }
        });
  }

  /**
   * One statement on a connection of its own, in a transaction committed only when {@code work}
   * returns: a change whose report {@code work} refuses (an id that several rows hold) is rolled
   * back. It waits at most {@code lockTimeout} for a lock (zero: the server's lock_timeout). A
   * failure leaves classified, as {@code operation}.
   */
  private <T> T runInTransaction(
      String operation, NamedSql statement, Duration lockTimeout, Work<T> work) {
    Connection connection;
    try {
      connection = dataSource.getConnection();
    } catch (SQLException e) {
      // Nothing was sent, so nothing of it committed, whatever the SQLState: the operator is not
      // told to check whether the change was applied.
      throw classify(e, operation).beforeSending();
    }
    try (Connection c = connection;
        PreparedStatement ps = c.prepareStatement(statement.jdbc())) {
      return inTransaction(c, lockTimeout, () -> work.run(c, statement.bind(ps)));
    } catch (LockLimitFailed e) {
      throw classify(e.cause(), operation).beforeSending();
    } catch (SQLException e) {
      throw classify(e, operation);
    }
  }

  /**
   * The transaction's lock_timeout could not be set: the change's statement was not sent, and the
   * transaction, rolled back, held nothing else.
   */
  private static final class LockLimitFailed extends SQLException {
    LockLimitFailed(SQLException cause) {
      super(cause.getMessage(), cause.getSQLState(), cause);
    }

    SQLException cause() {
      return (SQLException) getCause();
    }
  }

  /** A batch's report, once its transaction committed. */
  private record BatchDone(Long lastSeq, long changed, long deadlinePassed) {}

  /** Work within a transaction. */
  private interface TransactionWork<T> {
    T run() throws SQLException;
  }

  /**
   * {@code work} in a transaction of its own on {@code c}, committed only when it returns (rolled
   * back when it throws), waiting at most {@code lockTimeout} for a lock (zero: the server's).
   */
  private <T> T inTransaction(Connection c, Duration lockTimeout, TransactionWork<T> work)
      throws SQLException {
    c.setAutoCommit(false);
    T result;
    try {
      try {
        limitLockWaits(c, lockTimeout);
      } catch (SQLException e) {
        throw new LockLimitFailed(e);
      }
      result = work.run();
    } catch (SQLException | RuntimeException e) {
      rollback(c);
      throw e;
    }
    c.commit();
    return result;
  }

  /** Sets lock_timeout for the transaction open on {@code c}; zero leaves the server's. */
  private void limitLockWaits(Connection c, Duration lockTimeout) throws SQLException {
    if (lockTimeout.isZero()) {
      return;
    }
    try (PreparedStatement ps = c.prepareStatement(sql.limitLockWaits.jdbc())) {
      sql.limitLockWaits
          .bind(ps)
          .setString("lock_timeout_ms", Long.toString(lockTimeout.toMillis()))
          .executeQuery()
          .close();
    }
  }

  /** Rolls back; a failure to (a connection lost) is left to the one already failing. */
  private static void rollback(Connection c) {
    try {
      c.rollback();
    } catch (SQLException ignored) {
      // The server rolls an open transaction back when the connection ends.
    }
  }

  /**
   * One statement on a connection of its own; a failure leaves classified, as {@code operation}.
   */
  private <T> T run(String operation, NamedSql statement, Work<T> work) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(statement.jdbc())) {
      return work.run(c, statement.bind(ps));
    } catch (SQLException e) {
      throw classify(e, operation);
    }
  }

  /** By SQLState, and a 55000 that a missing replica identity explains named as such. */
  private OutboxStoreException classify(SQLException e, String operation) {
    // No statement here deletes from the published log (purge goes through the relay's store).
    return ReplicaIdentity.classify(dataSource, table, SqlStates.classify(e, operation), false);
  }

  /** Binds a statement's parameters beyond those every caller of a query sets. */
  @FunctionalInterface
  private interface Bind {
    NamedSql.Binder apply(NamedSql.Binder statement) throws SQLException;
  }

  @FunctionalInterface
  private interface Work<T> {
    T run(Connection c, NamedSql.Binder statement) throws SQLException;
  }

  private static RowView row(ResultSet rs, boolean withPayload) throws SQLException {
    return new RowView(
        rs.getLong(Row.SEQ.label),
        rs.getString(Row.MESSAGE_ID.label),
        rs.getString(Row.INSTANCE_KEY.label),
        MessageStatus.valueOf(rs.getString(Row.STATUS.label)),
        rs.getString(Row.AGGREGATE_TYPE.label),
        rs.getString(Row.AGGREGATE_ID.label),
        rs.getString(Row.EVENT_TYPE.label),
        rs.getString(Row.TOPIC.label),
        rs.getString(Row.CORRELATION_ID.label),
        instant(rs, Row.CREATED_AT),
        instant(rs, Row.DELIVER_BEFORE),
        rs.getInt(Row.ATTEMPTS.label),
        rs.getInt(Row.ABANDONED_CLAIMS.label),
        rs.getBoolean(Row.ISOLATED.label),
        instant(rs, Row.NEXT_ATTEMPT_AT),
        rs.getString(Row.LEASE_OWNER.label),
        rs.getLong(Row.LEASE_TOKEN.label),
        instant(rs, Row.LEASE_EXPIRES_AT),
        rs.getString(Row.LAST_FAILURE_CODE.label),
        instant(rs, Row.PUBLISHED_AT),
        instant(rs, Row.PARKED_AT),
        rs.getString(Row.KAFKA_TOPIC.label),
        rs.getObject(Row.KAFKA_PARTITION.label, Integer.class),
        rs.getObject(Row.KAFKA_OFFSET.label, Long.class),
        rs.getObject(Row.LEASE_EPOCH.label, Long.class),
        rs.getObject(Row.CLAIM_BATCH.label, Long.class),
        rs.getObject(OperatorSql.PAYLOAD_BYTES, Integer.class),
        withPayload ? OutboxColumns.payload(rs, Row.PAYLOAD.label) : null,
        withPayload ? rs.getString(Row.HEADERS.label) : null);
  }

  private static Instant instant(ResultSet rs, Row column) throws SQLException {
    OffsetDateTime value = rs.getObject(column.label, OffsetDateTime.class);
    return value == null ? null : value.toInstant();
  }
}
