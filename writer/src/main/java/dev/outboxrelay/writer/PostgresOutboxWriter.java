package dev.outboxrelay.writer;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Objects;
import java.util.Set;

/**
 * Appends messages in the caller's own transaction: pass the connection that carries the business
 * change, and the row commits or rolls back with it. The writer never commits, rolls back, changes
 * auto-commit or closes the connection; that is the caller's (or its framework's) business. It
 * refuses a connection in auto-commit mode, where the row would commit apart from the change.
 *
 * <p>Bound to one table and one instance key, both checked when the writer is created, before any
 * connection or row exists. Immutable and thread-safe: create one per table and instance key and
 * share it.
 *
 * <p>The table must be at schema version 9 or later: the insert reads the table's published log
 * ({@link OutboxTableName#publishedLogQualified()}), which that version creates. Upgrade the table
 * (the connector of the same version migrates it on start, or {@code outbox-relay-cli migrate} or
 * {@code schema-sql}) before the applications that write with this writer.
 */
public final class PostgresOutboxWriter {
  private final OutboxTableName table;
  private final String instanceKey;
  private final OutboxInsert insert;

  /**
   * A writer for {@code table} ({@code table} or {@code schema.table}, see {@link
   * OutboxTableName#parse}) and the relay that owns its rows, {@code instanceKey}.
   *
   * @throws IllegalArgumentException if the table name or the instance key is not valid
   * @throws NullPointerException if {@code table} is null
   */
  public PostgresOutboxWriter(String table, String instanceKey) {
    this(OutboxTableName.parse(table), instanceKey);
  }

  /**
   * A writer for {@code table} and the relay that owns its rows, {@code instanceKey}.
   *
   * @throws IllegalArgumentException if the instance key is not valid (see {@link InstanceKeys})
   */
  public PostgresOutboxWriter(OutboxTableName table, String instanceKey) {
    this.instanceKey = InstanceKeys.requireValid(instanceKey);
    this.table = Objects.requireNonNull(table, "table");
    this.insert = new OutboxInsert(table);
  }

  public OutboxTableName table() {
    return table;
  }

  public String instanceKey() {
    return instanceKey;
  }

  /**
   * Inserts the message using {@code transaction}; the caller commits. Returns {@link
   * EnqueueResult#DUPLICATE} without writing when the message id already exists for this instance
   * key: in the outbox (awaiting delivery or parked) or in its published log, that is until
   * retention deletes the published entry (a connector with {@code retention.published.ms=0} writes
   * none: then only while the row is in the outbox). A retry that races the publish of the very
   * same message (the publish commits while the insert runs) can still insert it again; that
   * duplicate is delivered at least once, like any other.
   *
   * @throws MessageIdTakenException if the message id is used by a row of another instance key, or
   *     a legacy row without one: message ids are unique across the table. The transaction is
   *     aborted first, as PostgreSQL aborts one on its own errors: a commit rolls back
   * @throws SQLException (SQLState 55000) if the insert wrote nothing and the id was then found in
   *     no row, three times: the role does not see every row (row-level security), or a trigger or
   *     rule drops the insert; the transaction is aborted first, and retrying it would not help
   * @throws IllegalStateException if {@code transaction} is in auto-commit mode: the row would
   *     commit on its own, apart from the business change it announces, which is the dual write an
   *     outbox exists to prevent. Nothing is written
   * @throws SQLException as the driver raised it, so the caller's transaction handling applies; the
   *     transaction is aborted first here too, whatever the driver left of it (pgjdbc's {@code
   *     autosave=always} rolls back to a savepoint of its own and leaves it open). Whenever enqueue
   *     throws an {@code SQLException}, a commit rolls back (a failure of the abort itself, such as
   *     a lost connection, is attached as suppressed). Under pgjdbc's {@code autosave=always} the
   *     driver's savepoints, the application's own among them, are released on the way, and
   *     autosave may be left at {@code never} for the rest of the (aborted) transaction
   * @throws TransactionStillOpenException (unchecked, the failure its cause) when a driver the
   *     writer cannot inspect undid its abort (pgjdbc's {@code autosave=always} out of the writer's
   *     class loader's reach): the transaction must be rolled back, which frameworks do for an
   *     unchecked exception by default
   */
  public EnqueueResult enqueue(Connection transaction, OutboxMessage message) throws SQLException {
    Objects.requireNonNull(transaction, "transaction");
    Objects.requireNonNull(message, "message");
    requireOpenTransaction(transaction);
    try {
      return insert(transaction, message);
    } catch (SQLException e) {
      Abort abort;
      try {
        abort = abort(transaction);
      } catch (RuntimeException | Error wrapperFailure) { // a wrapper's own, say: e stays seen
        wrapperFailure.addSuppressed(e);
        throw wrapperFailure;
      }
      if (abort.stillOpen()) {
        TransactionStillOpenException open = new TransactionStillOpenException(e);
        if (abort.failure() != null) {
          open.addSuppressed(abort.failure());
        }
        throw open;
      }
      throw withAbortFailure(e, abort.failure());
    }
  }

  /** What {@link #abort} did: its unexpected failure, if any, and whether it did not take. */
  private record Abort(SQLException failure, boolean stillOpen) {}

  /** The insert, and the check when it wrote nothing; the caller aborts on any exception. */
  private EnqueueResult insert(Connection transaction, OutboxMessage message) throws SQLException {
    for (int attempt = 1; attempt <= MAX_INSERTS; attempt++) {
      try (PreparedStatement ps = transaction.prepareStatement(insert.sql())) {
        OutboxInsert.bind(ps, instanceKey, message);
        if (ps.executeUpdate() == 1) {
          return EnqueueResult.ENQUEUED;
        }
      }
      switch (owner(transaction, message.messageId())) {
        case THIS_KEY:
          return EnqueueResult.DUPLICATE;
        case ANOTHER:
          throw new MessageIdTakenException(message.messageId());
        case NONE:
          // What stopped the insert is gone (retention deleted a published-log entry meanwhile,
          // under READ COMMITTED): the id is free again, so insert once more.
          break;
        default:
          throw new IllegalStateException("unknown owner");
      }
    }
    // Three inserts that wrote nothing, each time the id then found in no row: not a race (the
    // id freed by retention between an insert and its check does not stay so), but rows this role
    // cannot see (a row-level security policy) or an insert something drops (a trigger returning
    // NULL, a rule). A retry of the transaction would do the same, for ever.
    throw new SQLException(
        "outbox message id "
            + Printable.escape(message.messageId())
            + " was neither written nor found, "
            + MAX_INSERTS
            + " times: this role may not see every row of the table (a row-level security"
            + " policy), or a trigger or rule drops the insert",
        "55000");
  }

  private static <E extends SQLException> E withAbortFailure(E thrown, SQLException abortFailure) {
    if (abortFailure != null) {
      thrown.addSuppressed(abortFailure);
    }
    return thrown;
  }

  /**
   * Aborts the caller's transaction before any exception of a statement of the writer's, its own or
   * the driver's, reaches the caller, as PostgreSQL aborts one on any error it raises: a framework
   * that commits on a checked exception (Spring's default rollback rules, an EJB's) would otherwise
   * keep the business change without its message. The server refuses every later statement, and a
   * commit rolls back (pgjdbc's {@code commit()} returns normally all the same). A transaction the
   * error aborted already stays so (the statement fails with 25P02).
   *
   * <p>pgjdbc's {@code autosave=always} rolls back to a savepoint of its own after any failed
   * statement: after the writer's (which leaves the transaction open), and after the application's
   * next one, past the abort. It is suspended here, and with it on the savepoints it made are
   * released first ({@link #releaseDriverSavepoints}), so that nothing can roll back past the
   * abort; then it is restored. ({@code conservative} rolls back only after errors a retry heals,
   * which an aborted transaction's 25P02 is not.)
   *
   * <p>A failure on the way (suspending autosave, a release) does not keep the abort statement from
   * running. Releases that did not finish may leave savepoints of the driver's under the abort:
   * then autosave stays off on that connection ({@code never}, until the application sets it
   * again), as restoring it would let the driver's next rollback revive the transaction.
   *
   * @return the abort's failure when it was not the expected one (a lost connection, say), to be
   *     attached to the exception thrown, or null; and whether the transaction is still open
   */
  private static Abort abort(Connection transaction) {
    SQLException failure = null;
    DriverAutosave autosave = DriverAutosave.NONE;
    try {
      autosave = DriverAutosave.suspend(transaction);
    } catch (SQLException e) {
      failure = e; // the abort statement runs all the same, and is checked: autosave unknown
      autosave = DriverAutosave.UNKNOWN;
    }
    boolean savepointsMayRemain = false;
    try {
      if (autosave.always) {
        try {
          releaseDriverSavepoints(transaction);
        } catch (SQLException e) {
          failure = first(failure, e); // some may remain: the abort still runs
          savepointsMayRemain = true;
        }
      }
      boolean connectionLost = false;
      try (PreparedStatement s = transaction.prepareStatement(ABORT_SQL)) {
        s.execute();
      } catch (SQLException e) {
        if (!aborted(e)) {
          failure = first(failure, e);
          connectionLost = connectionLost(e);
        }
      }
      boolean stillOpen = false;
      if (autosave.unknown && !connectionLost) {
        try {
          stillOpen = stillOpen(transaction);
        } catch (SQLException e) {
          failure = first(failure, e);
          // Not known to be aborted: taken for open, unless the connection is gone with it.
          stillOpen = !connectionLost(e);
        }
      }
      return new Abort(failure, stillOpen);
    } finally {
      if (!savepointsMayRemain) {
        autosave.restore();
      }
    }
  }

  /**
   * A driver the writer could not inspect (pgjdbc out of its class loader's reach, as in an
   * application server's driver module, or a wrapper that hides it) may have rolled the abort back
   * to a savepoint of its own, as pgjdbc's autosave=always does: one more statement tells. Then
   * {@link #enqueue} throws an unchecked exception, which frameworks roll back for by default,
   * where a commit on the checked one would keep the business change without its message.
   *
   * @return whether the transaction is still open; false when it is aborted, as it must be
   * @throws SQLException the statement failed otherwise (a lost connection, a cancel): whether the
   *     transaction is aborted is then not known
   */
  private static boolean stillOpen(Connection transaction) throws SQLException {
    try (PreparedStatement s = transaction.prepareStatement("SELECT 1")) {
      s.execute();
    } catch (SQLException e) {
      if (aborted(e)) {
        return false;
      }
      throw e;
    }
    return true;
  }

  /** Whether {@code e} says the connection is gone, and the transaction with it (class 08). */
  private static boolean connectionLost(SQLException e) {
    return e.getSQLState() != null && e.getSQLState().startsWith("08");
  }

  /** Whether {@code e} is what an aborted transaction answers (a SQLState may be missing). */
  private static boolean aborted(SQLException e) {
    return e.getSQLState() != null && ABORTED_SQL_STATES.contains(e.getSQLState());
  }

  /** The first failure, each later one attached to it. */
  private static SQLException first(SQLException earlier, SQLException later) {
    return earlier == null ? later : withAbortFailure(earlier, later);
  }

  /**
   * The SQLStates of an aborted transaction: the abort statement's own (integrity_constraint
   * violation) and that of a transaction aborted already (in_failed_sql_transaction).
   */
  private static final Set<String> ABORTED_SQL_STATES = Set.of("23000", "25P02");

  /**
   * Releases every savepoint of pgjdbc's autosave (one for each statement since the transaction's
   * first, unless {@code cleanupSavepoints} released them), and with them any made after the first
   * of them, the application's own included. PostgreSQL keeps a savepoint whose name is used again
   * and releases the latest of that name, so they are released one at a time, several to a round
   * trip, until none is left: each release is tried under a savepoint of the writer's, rolled back
   * to when the release finds none (the server logs that failure), so that the abort statement
   * after it runs in a transaction still open and says why in the server's log. Runs with autosave
   * suspended.
   *
   * @throws SQLException when savepoints of the driver's may remain: the first failure that was not
   *     tried past, with the failure of its rollback (when the writer's savepoint was not made)
   *     attached
   */
  private static void releaseDriverSavepoints(Connection transaction) throws SQLException {
    int unexpected = 0;
    while (true) {
      try (Statement s = transaction.createStatement()) {
        s.execute(RELEASE_DRIVER_SAVEPOINTS);
      } catch (SQLException e) {
        boolean noneLeft = NO_SUCH_SAVEPOINT.equals(e.getSQLState());
        // Another failure (a cancel, out of memory) inside the writer's savepoint: back to it and
        // on with the releases, a few times, so that no driver savepoint survives under the abort.
        // A lost connection ends the transaction anyway.
        if (!noneLeft && (isConnectionError(e) || ++unexpected > MAX_UNEXPECTED_RELEASE_FAILURES)) {
          throw e;
        }
        try (Statement s = transaction.createStatement()) {
          s.execute(
              "ROLLBACK TO SAVEPOINT "
                  + PROBE_SAVEPOINT
                  + "; RELEASE SAVEPOINT "
                  + PROBE_SAVEPOINT);
        } catch (SQLException rollback) {
          // The failure came before the writer's savepoint was made (a cancel of the SAVEPOINT
          // itself): nothing to go back to, and the transaction is aborted over the driver's.
          e.addSuppressed(rollback);
          throw e;
        }
        if (noneLeft) {
          return;
        }
      }
    }
  }

  /** Failures of a release other than "none left" that are tried past before giving up. */
  private static final int MAX_UNEXPECTED_RELEASE_FAILURES = 3;

  /** SQLState class 08: the connection is gone, and the transaction with it. */
  private static boolean isConnectionError(SQLException e) {
    return e.getSQLState() != null && e.getSQLState().startsWith("08");
  }

  /** pgjdbc's autosave savepoint, as its statements name it (unquoted: folded to lower case). */
  private static final String DRIVER_SAVEPOINT = "PGJDBC_AUTOSAVE";

  /** The writer's savepoint under each release of the driver's. */
  private static final String PROBE_SAVEPOINT = "outbox_relay_writer_release";

  /** The releases of one round trip. */
  private static final int RELEASES_PER_ROUND_TRIP = 16;

  private static final String RELEASE_DRIVER_SAVEPOINTS =
      ("SAVEPOINT " + PROBE_SAVEPOINT + "; RELEASE SAVEPOINT " + DRIVER_SAVEPOINT + "; ")
          .repeat(RELEASES_PER_ROUND_TRIP)
          .strip();

  /**
   * The SQLState of a release that finds no savepoint of its name
   * (invalid_savepoint_specification).
   */
  private static final String NO_SUCH_SAVEPOINT = "3B001";

  /** pgjdbc's autosave, off while the abort runs: its savepoint would undo the abort. */
  private static final class DriverAutosave {
    private static final DriverAutosave NONE = new DriverAutosave(false, false, () -> {});

    /** A driver the writer cannot inspect: pgjdbc out of its reach, or another driver. */
    private static final DriverAutosave UNKNOWN = new DriverAutosave(false, true, () -> {});

    /** Whether it was {@code always}: its savepoints are to be released. */
    final boolean always;

    /** Whether the driver could not be inspected: the abort is then checked. */
    final boolean unknown;

    private final Runnable restore;

    private DriverAutosave(boolean always, boolean unknown, Runnable restore) {
      this.always = always;
      this.unknown = unknown;
      this.restore = restore;
    }

    void restore() {
      restore.run();
    }

    /**
     * Suspends it; says what it was and restores it. Nothing to do on a driver it cannot inspect
     * (another driver, or pgjdbc out of the writer's class loader's reach): the abort is checked.
     */
    static DriverAutosave suspend(Connection transaction) throws SQLException {
      try {
        if (!transaction.isWrapperFor(org.postgresql.PGConnection.class)) {
          return UNKNOWN;
        }
        org.postgresql.PGConnection pg = transaction.unwrap(org.postgresql.PGConnection.class);
        org.postgresql.jdbc.AutoSave before = pg.getAutosave();
        if (before == org.postgresql.jdbc.AutoSave.NEVER) {
          return NONE;
        }
        pg.setAutosave(org.postgresql.jdbc.AutoSave.NEVER);
        return new DriverAutosave(
            before == org.postgresql.jdbc.AutoSave.ALWAYS, false, () -> pg.setAutosave(before));
      } catch (LinkageError notPgjdbc) { // NOPMD: another driver (pgjdbc is "provided")
        return UNKNOWN;
      }
    }
  }

  /** Fails on the server, which aborts the transaction; the text says why in the server's log. */
  static final String ABORT_SQL =
      "DO $$BEGIN RAISE EXCEPTION 'outbox-relay writer: enqueue failed, the transaction is"
          + " aborted' USING ERRCODE = 'integrity_constraint_violation'; END$$";

  /**
   * Refuses a connection in auto-commit mode, the usual sign of a call outside the business
   * transaction (a Spring method without {@code @Transactional}, a pool's fresh connection). A
   * message meant to go alone is written in a transaction of its own: turn auto-commit off,
   * enqueue, commit.
   */
  private static void requireOpenTransaction(Connection transaction) throws SQLException {
    if (transaction.getAutoCommit()) {
      throw new IllegalStateException(
          "enqueue needs the open transaction of the business change it announces, and this"
              + " connection is in auto-commit mode: the message would commit on its own. Nothing"
              + " was written; call it inside the transaction (setAutoCommit(false), or your"
              + " framework's transaction)");
    }
  }

  /** How often an insert that wrote nothing is tried again when nothing holds its id any more. */
  private static final int MAX_INSERTS = 3;

  /** Whose row, or published-log entry, stopped an insert that wrote nothing. */
  private enum Owner {
    THIS_KEY,
    ANOTHER,
    NONE
  }

  /**
   * Whose the id that stopped the insert is: another instance key's (or a legacy row's) is no retry
   * of this message, and reporting it DUPLICATE would lose the message. This key's wins where both
   * hold it (the race of two keys' writers on one id, writing-rows.md): this key has the message,
   * and the caller, told to retry with another id, would send it twice.
   */
  private Owner owner(Connection transaction, String messageId) throws SQLException {
    try (PreparedStatement ps = transaction.prepareStatement(insert.ownerSql())) {
      for (int i = 1; i <= 8; i += 2) {
        ps.setString(i, messageId);
        ps.setString(i + 1, instanceKey);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        if (rs.getBoolean(2)) {
          return Owner.THIS_KEY;
        }
        return rs.getBoolean(1) ? Owner.ANOTHER : Owner.NONE;
      }
    }
  }

  @Override
  public String toString() {
    return "PostgresOutboxWriter[table="
        + table
        + ", instanceKey="
        + Printable.escape(instanceKey) // valid keys have none to escape; kept as a guard
        + "]";
  }
}
