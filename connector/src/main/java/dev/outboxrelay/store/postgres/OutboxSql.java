package dev.outboxrelay.store.postgres;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Every statement the PostgreSQL store runs, in one place, each written out whole with named
 * parameters ({@link NamedSql}). Placeholders in braces are filled in once, when the statements are
 * built: {@code {table}} with the validated, quoted table name, the others with the small fragments
 * below. Every value is a bind parameter.
 *
 * <p>Each statement judges time by {@code clock.now}: the bound instant ({@code :now}) when a test
 * clock is in use, otherwise the database's own statement timestamp.
 *
 * <p>The one statement the relay does not run is the INSERT of a new row: applications write rows
 * with the writer library ({@code dev.outboxrelay.writer.PostgresOutboxWriter}), which defines it.
 */
final class OutboxSql {
  private static final Pattern PLACEHOLDER = Pattern.compile("\\{[^}]*}");

  /** {@code {now}}: the bound test instant if any, else the database's statement timestamp. */
  private static final String NOW = "COALESCE(CAST(:now AS timestamptz), statement_timestamp())";

  /**
   * {@code {lease end}}: a claimed row's lease runs {@code :lease_ms} from when the claim writes
   * the row (the test instant if bound), not from the statement's start: a claim that ran for
   * seconds (a slow scan, near statement.timeout.ms) granted leases already that much shorter, and
   * the bound lease.duration.ms documents (renewal interval, connection and statement timeouts)
   * left the claim's own time out.
   */
  private static final String LEASE_END =
      "COALESCE(CAST(:now AS timestamptz), clock_timestamp())"
          + " + (:lease_ms * INTERVAL '1 millisecond')";

  /**
   * {@code {within room(w)}}: a claim's candidate {@code w} is within its read room ({@code
   * :read_room}, bytes): it is the first with bytes to read, or the bytes of the candidates up to
   * it ({@code read_through}, its own included, in seq order) fit. A task's claims are sized by its
   * last claim's rows, and a burst of large rows after small ones made a claim read a whole batch
   * of them into the worker's heap (up to {@code claim.batch.size} × {@code payload.max.bytes}) to
   * keep a few and give the rest back. The bytes only grow along seq, so the candidates within are
   * a seq prefix: an aggregate's later row is never claimed without an earlier one that was left
   * out. The window shares the candidates' sort by seq. A candidate's bytes: {@code {read bytes}}.
   */
  private static final String WITHIN_ROOM =
      "(w.read_through = w.read_bytes OR w.read_through <= CAST(:read_room AS bigint))";

  /** The statuses of a row awaiting delivery, in flight included. */
  private static final String ACTIVE = "('PENDING', 'AMBIGUOUS', 'IN_FLIGHT')";

  /**
   * {@code {unsettled(row)}}: the predicate of the partial indexes of the rows awaiting delivery
   * (schema versions 7 and 13; 13's also leaves legacy rows out, which every statement's condition
   * on the instance key proves), spelled as they are so that the planner can use them, then the
   * statuses. No index uses status: a claim, a renewal, a retry or a release changes no indexed
   * column, so on a page with room it is a HOT update. Only publishing and parking settle a row.
   */
  private static final String UNSETTLED =
      "%1$s.published_at IS NULL AND %1$s.parked_at IS NULL AND %1$s.status IN " + ACTIVE;

  /**
   * {@code {own owner(o)}}: the row {@code o}'s lease owner begins as this connector's tasks' do.
   * An owner missing counts as own.
   */
  private static final String OWN_OWNER =
      "starts_with(o.lease_owner, CAST(:own_owners AS text)) IS NOT FALSE";

  /**
   * {@code {recoverable(o)}}: the in-flight row {@code o} is a recovery's to settle: this
   * connector's lease of a lower epoch (or none: at least once), at start live or expired,
   * afterwards expired; another connector's (on the same instance key) only once expired, whatever
   * its epoch, since epochs of two connectors say nothing of each other, and a live one's rows,
   * released, were sent twice.
   */
  private static final String RECOVERABLE =
      """
      (CASE WHEN {own owner(o)}
        THEN (o.lease_epoch IS NULL OR o.lease_epoch < CAST(:epoch AS bigint))
          AND (NOT CAST(:expired_only AS boolean) OR o.lease_expires_at <= clock.now)
        ELSE o.lease_expires_at <= clock.now END)""";

  /**
   * {@code {fence}}: every write after a claim holds the lease, and touches only rows of the
   * instance keys the writer claims for.
   */
  private static final String FENCE =
      "AND status = 'IN_FLIGHT' AND lease_owner = :owner AND lease_token = :token"
          + " AND instance_key = ANY (:instance_keys)";

  /**
   * The longest an outcome write (a publish, a retry, a park, a release) waits for a row lock that
   * another session holds: an operator's open transaction. Past it the write fails with 55P03 and
   * the task sets the locked rows aside, writes the others, and tries the locked ones again alone
   * ({@code OutcomeLoop}); waiting out the statement timeout instead held every outcome of the task
   * behind one row (docs/design.md, "Threads and Connect"). Long enough for a lock held for a
   * statement's milliseconds.
   */
  static final Duration OUTCOME_LOCK_WAIT = Duration.ofSeconds(1);

  /**
   * Sets the transaction's lock_timeout to {@code wait}, or to half the statement timeout where
   * that is less than twice {@code wait} (local to the transaction). The statement's timer starts
   * first: with {@code statement.timeout.ms} of 1 s or less, a wait for a locked row ended as a
   * statement timeout (57014), never as the lock wait (55P03) on which the task sets the row aside.
   */
  private static String lockTimeout(Duration wait) {
    long ms = wait.toMillis();
    return "set_config('lock_timeout', (SELECT CASE WHEN s.ms > 0 AND s.ms < "
        + 2 * ms
        + " THEN GREATEST(1, s.ms / 2) ELSE "
        + ms
        + " END || 'ms' FROM (SELECT CAST(EXTRACT(EPOCH FROM"
        + " CAST(current_setting('statement_timeout') AS interval)) * 1000 AS bigint) AS ms) s),"
        + " true)";
  }

  /**
   * {@code {lock wait}}: a single-row outcome write waits at most {@link #OUTCOME_LOCK_WAIT} for
   * its row's lock. Set by an uncorrelated subquery, evaluated before the row is locked, and local
   * to the statement's transaction.
   */
  private static final String LOCK_WAIT =
      "AND (SELECT " + lockTimeout(OUTCOME_LOCK_WAIT) + ") IS NOT NULL";

  /**
   * {@code {own keys}}: the instance keys of the statement, one row each ({@code
   * own.instance_key}). A statement that reads due or unsettled rows in seq order up to a limit
   * reads them key by key ({@code {own key(o)}}, in a LATERAL subquery with that limit), each key's
   * rows in order by the {@code (instance_key, seq)} due index (schema version 13), and keeps the
   * first of all: it never steps over the rows of other instance keys (a paused connector's backlog
   * in a shared table) or legacy rows. With {@code instance_key = ANY} PostgreSQL reads that index
   * in key order only, so it read the (seq) index of every key instead and filtered
   * (docs/benchmarks.md, finding 21). With several keys a claim locks each key's rows up to its
   * {@code {quota}} and a margin, and keeps the first limit of all: the rest are unlocked at its
   * commit, and a concurrent claimer that skipped them meanwhile is only conservative (it holds
   * back their successors).
   */
  private static final String OWN_KEYS =
      "unnest(CAST(:instance_keys AS text[])) AS own(instance_key)";

  /**
   * {@code {own key(o)}}: the row is of the key {@code own.instance_key}, spelled as a range,
   * ordered by {@code o.instance_key, o.seq}. An equality would make the key a constant of the
   * subquery, reducing its order to seq, which the primary key also gives: PostgreSQL, estimating a
   * third of the table for a key (of three) and assuming them spread evenly, then read the primary
   * key from the start and filtered out every other key's row before the first of its own. As a
   * range, only the due index reads in that order; an equality elsewhere in the subquery would
   * bring the primary key back.
   */
  private static final String OWN_KEY =
      "o.instance_key >= own.instance_key AND o.instance_key <= own.instance_key";

  /**
   * {@code {the key(o)}}: the row is of the key {@code :instance_key}, spelled as a range for the
   * reason {@code {own key(o)}} is: a page of a key that holds most of the table (a paused
   * connector's backlog beside a few legacy rows) otherwise read the primary key from the start.
   */
  private static final String THE_KEY =
      "o.instance_key >= :instance_key AND o.instance_key <= :instance_key";

  /**
   * {@code {quota}} of a claim over several instance keys: how many of the first {@code :limit}
   * claimable rows of them all (in seq order: due, and in an ordered claim not held back by an
   * earlier row of their aggregate, {@link #EARLIER}) each key has, read without locking. A locking
   * read of each key up to the whole limit locked up to the limit per key and kept the limit of
   * all, so k keys wrote k row locks per claimed row; each key's read now stops at its quota and a
   * margin ({@code {per key}}). Rows locked by a concurrent claimer are counted here and skipped
   * there, which only makes that key's read go on past them. Counting held-back rows too gave a key
   * whose oldest rows wait for their aggregates the whole quota, and the other keys only the
   * margin. A claim for one key has no quota and locks up to the limit ({@link Claim}).
   */
  private static final String QUOTA =
      """
      quota AS MATERIALIZED (
        SELECT q.instance_key, count(*) AS rows FROM (
          SELECT k.instance_key, k.seq FROM {own keys} CROSS JOIN LATERAL (
            SELECT o.instance_key, o.seq
            FROM {table} o CROSS JOIN clock {earlier}
            WHERE {own key(o)} AND {due(o)} {affinity} {share} {not held back}
            ORDER BY o.instance_key, o.seq LIMIT :limit) k
          ORDER BY k.seq LIMIT :limit) q
        GROUP BY q.instance_key
      ), """;

  /**
   * {@code {per key}}: how many rows a claim over k keys locks of one key ({@code
   * own.instance_key}): its quota and a margin of a quarter of the limit shared among the keys (a
   * concurrent claimer may hold rows of a key's quota), so at most 1.25 × the limit plus k rows are
   * locked per claim instead of k × the limit.
   */
  private static final String PER_KEY =
      """
      COALESCE((SELECT q.rows FROM quota q WHERE q.instance_key = own.instance_key), 0)
        + CAST(:limit AS integer) / (4 * cardinality(CAST(:instance_keys AS text[]))) + 1""";

  /**
   * {@code {earlier}}: the probe of an ordered claim's candidate {@code o} (see {@link
   * #CLAIM_ORDERED}): {@code earlier.due} of the first unsettled row before it in its aggregate
   * that this owner does not hold, and its {@code earlier.seq}; null without one.
   */
  private static final String EARLIER =
      """
      LEFT JOIN LATERAL (
            SELECT {due(p)} AS due, p.seq
            FROM {table} p
            WHERE p.instance_key = o.instance_key AND {aggregate_id(p)} = {aggregate_id(o)}
              AND p.seq < o.seq
              AND {unsettled(p)}
              AND NOT {held(p)}
            ORDER BY p.seq LIMIT 1) earlier ON TRUE""";

  /** {@code {not held back}}: the candidate has no earlier row of its aggregate that is not due. */
  private static final String NOT_HELD_BACK = "AND earlier.due IS NOT FALSE";

  /**
   * {@code {head free}}: for an ordered claim's candidate whose earlier row is due, whether another
   * session holds that row locked, asked as the claim takes its candidates (FOR UPDATE SKIP LOCKED,
   * one step of the primary key). Read first (its seq is lower), that row is this claim's candidate
   * already unless another session holds it: a concurrent claimer, or an operator's open
   * transaction. Its successors cannot be claimed without it, and as candidates they took the
   * claim's places only to be dropped in {@code claimable}: with a batch of them behind one locked
   * row, every claim came back empty for as long as the lock lasted, for every key claimed with
   * that one. Only candidates with a due earlier row probe (a one-time filter otherwise). The quota
   * does not ask (it locks nothing): with several keys, the rows behind a locked row still count
   * for their key, and the other keys get the margin while the lock lasts (docs/design.md). The row
   * is asked to be due still: one another session claimed after this claim's snapshot was taken
   * (due in it) is read as its new version once locked, and without the condition was found free,
   * its successor took a place only to be dropped, and the claim came back short or empty.
   */
  private static final String HEAD_FREE =
      """
      LEFT JOIN LATERAL (
            SELECT TRUE AS free FROM {table} h
            WHERE earlier.due AND h.seq = earlier.seq AND {due(h)}
            FOR UPDATE OF h SKIP LOCKED) head ON TRUE""";

  /**
   * {@code {claimable so far}}: a candidate is next in its aggregate, or its earlier row is due and
   * free to be claimed with it ({@link #HEAD_FREE}).
   */
  private static final String CLAIMABLE_SO_FAR = "AND (earlier.due IS NULL OR head.free)";

  /**
   * An ordered claim. A due row within the budget is leased; one at or over it (max.attempts was
   * lowered after it was charged) is parked EXHAUSTED by the same claim, so that it neither waits
   * for ever nor blocks its aggregate, and the claimer reports it.
   *
   * <p>The clock CTE also commits the claim without waiting for its WAL flush (transaction-local,
   * so pooled connections keep the server's setting). Safe because a claim is only a lease: lost in
   * a database crash, its row is simply claimable again, the holder's outcome write is fenced off
   * or reported as a lost claim, and an outcome made durable later flushes the claim's WAL before
   * its own. A volatile function keeps this CTE evaluated and not inlined. It also carries the
   * attempt budget.
   *
   * <p>Per-aggregate order is judged by one probe per candidate, {@code earlier}: the first
   * unsettled row before it in its aggregate that this owner does not hold under a live lease (rows
   * it holds are being sent in order ahead of the candidate). None: the candidate is next in its
   * aggregate. One that is not due (in flight elsewhere, waiting for a retry, lease expired) blocks
   * it. A due one must be claimed in this very batch, which only {@code claimable} can tell; the
   * probe reads the aggregate index forwards and stops at its first match, so an aggregate stuck
   * behind one row costs one step per candidate, not a walk of all its rows.
   *
   * <p>{@code claimable} checks again only the candidates with a due earlier row (several rows of
   * one aggregate in a batch): no earlier row may block, and every due one must be in the batch. A
   * due row not in it is one another session held locked when the candidates were taken (then
   * {@link #HEAD_FREE} left out the candidates behind it where it was their aggregate's first row
   * to send) or was claimed since this statement's snapshot; its successors wait for that claim or
   * lock to end. Candidates with no earlier row to judge (the common case on a backlog spread over
   * many aggregates) skip this second probe.
   *
   * <p>OFFSET 0 keeps the claimable check a per-candidate probe of the aggregate index: as a join,
   * PostgreSQL may hash the whole backlog on every claim (docs/benchmarks.md, findings 2 and 4).
   */
  private static final String CLAIM_ORDERED =
      """
      WITH clock AS (
        SELECT {now} AS now, CAST(:max_attempts AS integer) AS budget,
          {commit mode}, {claim barrier}
      ), {quota}candidate AS (
        SELECT w.seq, w.instance_key, w.aggregate_id, w.after_due FROM (
          SELECT k.*, sum(k.read_bytes) OVER (ORDER BY k.seq) AS read_through
          FROM {own keys} CROSS JOIN LATERAL (
            SELECT o.seq, o.instance_key, {aggregate_id(o)} AS aggregate_id,
              earlier.due AS after_due, {read bytes(o)} AS read_bytes
            FROM {table} o CROSS JOIN clock {earlier} {head free}
            WHERE {own key(o)} AND {due(o)}
              {affinity} {share}
              {claimable so far}
            ORDER BY o.instance_key, o.seq LIMIT {per key} FOR UPDATE OF o SKIP LOCKED) k
          ORDER BY k.seq LIMIT :limit) w
        WHERE {within room(w)}
      ), claimable AS (
        SELECT c.seq FROM candidate c, clock
        WHERE c.after_due IS NULL OR NOT EXISTS (
          SELECT 1 FROM {table} p
          WHERE p.instance_key = c.instance_key AND {aggregate_id(p)} = c.aggregate_id
            AND p.seq < c.seq
            AND {unsettled(p)}
            AND NOT {held(p)}
            AND NOT ({due(p)} AND EXISTS (SELECT 1 FROM candidate c2 WHERE c2.seq = p.seq))
          OFFSET 0)
      )
      {lease(claimable)}""";

  /**
   * The planner settings of a claim's transaction, local to it so that pooled connections keep
   * their own. A claim reads the due rows in seq order and stops at its limit, and probes a
   * candidate's aggregate forwards up to the first match. An outbox's statistics are often those of
   * a nearly empty table, taken between bursts; on them PostgreSQL judged that a claim reads every
   * due row anyway, and collected (bitmap scan) and sorted them all, probing each one's aggregate:
   * seconds per claim once a backlog had built up (docs/benchmarks.md, finding 19). Without sorts
   * and bitmap scans, only the ordered reads remain.
   *
   * <p>Sent with the statement in the same string, in a transaction of their own ({@link
   * PostgresOutboxStore#planned}); set_config's third argument makes a setting local to the
   * transaction, like SET LOCAL, and one SELECT sets them all.
   *
   * <p>JIT off as well: a step switched off that a plan still needs (a claim's sort of its few rows
   * by seq) adds 10^10 to its cost up to PostgreSQL 17, past every {@code jit_above_cost}, and a
   * server built with LLVM (PGDG's packages, the official image) then compiled each claim: 692 ms
   * for an ordered claim of 500 rows that takes 8 ms without (PostgreSQL 15.18,
   * docs/benchmarks.md).
   */
  static final String CLAIM_PLAN =
      "SELECT set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true),"
          + " set_config('jit', 'off', true)";

  /**
   * {@link #CLAIM_PLAN}, and a wait for a row lock no longer than {@link #OUTCOME_LOCK_WAIT}: the
   * setting of an exactly-once sweep's page. A sweep runs ahead of a claim, and a row an operator's
   * open transaction holds made every claim wait out the statement timeout first, sweep after
   * sweep. Past it the page fails with 55P03, rolled back, and is tried again after a pause. (A
   * recovery at the start waits: nothing is claimed before it ends anyway.)
   */
  static final String SWEEP_PLAN = claimPlanWaiting(OUTCOME_LOCK_WAIT);

  /**
   * The longest retention's delete waits for a lock: an entry of the published log that another
   * session holds (a transaction that selected it FOR UPDATE, or deleted it and is still open), or
   * the table during a migration. Every run reads the oldest entries first, so without a bound each
   * run waited out the statement timeout on the same entry, holding a connection and, with a small
   * pool, the poll. Skipping such entries instead would lock each entry before deleting it, a WAL
   * record more per relayed row.
   */
  static final Duration RETENTION_LOCK_WAIT = Duration.ofSeconds(1);

  /**
   * {@link #CLAIM_PLAN}, and a wait for a lock no longer than {@code lockWait} (zero: the session's
   * own lock_timeout): the setting of a retention batch's transaction.
   */
  static String retentionPlan(Duration lockWait) {
    return lockWait.isZero() ? CLAIM_PLAN : claimPlanWaiting(lockWait);
  }

  /** {@link #CLAIM_PLAN}, and a wait for a lock no longer than {@code lockWait}. */
  private static String claimPlanWaiting(Duration lockWait) {
    return CLAIM_PLAN + ", " + lockTimeout(lockWait);
  }

  /**
   * The planner setting of a publish's or a renewal's transaction. Statistics taken with no row in
   * flight put the outbox's side of the join with the acks at one row, and PostgreSQL then chose a
   * nested loop: the table (or, bounded by the seqs, every acked row) compared with every ack.
   * Without nested loops the join is a hash or merge join, linear in the acks. Sent as {@link
   * #CLAIM_PLAN} is, with JIT off for the same reason.
   */
  static final String ACKS_PLAN =
      "SELECT set_config('enable_nestloop', 'off', true), set_config('jit', 'off', true)";

  /**
   * {@link #ACKS_PLAN}, and a wait for a row lock no longer than {@link #OUTCOME_LOCK_WAIT}: the
   * setting of a publish's transaction.
   */
  static final String PUBLISH_PLAN = ACKS_PLAN + ", " + lockTimeout(OUTCOME_LOCK_WAIT);

  /** {@code {held(p)}}: the row is in flight under a live lease of this owner. */
  private static final String HELD =
      "(%1$s.status = 'IN_FLIGHT' AND %1$s.lease_owner = :owner AND %1$s.lease_expires_at > clock.now)";

  /**
   * {@code {commit mode}} of a claim: without waiting for its WAL flush (see {@link
   * #CLAIM_ORDERED}) unless {@code :durable} — an exactly-once claim, whose loss in a database
   * crash after its records were committed to Kafka would make the rows due again (docs/design.md,
   * claim 4). Then {@link #DURABLE}.
   */
  private static final String COMMIT_MODE =
      """
      set_config('synchronous_commit', CASE WHEN CAST(:durable AS boolean)
            THEN {durable} ELSE 'off' END, true) AS commit_mode""";

  /**
   * The key of an owner's claims: two integers, the relay's own space, then the owner (unique per
   * task instance). Every claim holds it, a transaction's lock, so until the claim has ended,
   * visibly: a commit waiting for a synchronous standby holds it, its rows not yet shown to others.
   * The release of a claim whose result never arrived reads the table only once it can take the
   * lock ({@link #claimsEnded}); reading before, it would find none of such a claim's rows and let
   * them sit leased: exactly once, the next batch's committed offset would then cover them, and a
   * recovery record them PUBLISHED unsent. No row lock, no WAL; claims of one owner never overlap.
   */
  private static final String CLAIM_KEY =
      "hashtext('outbox-relay claims'), hashtext(CAST(:owner AS text))";

  /**
   * {@code {claim barrier}}: the claim's lock, and a limit on how long its transaction may sit idle
   * (local to it). Between the claim's statement and its COMMIT the client only reads the result; a
   * session left so longer lost its client (the statement's reply dropped on the way), can never
   * commit, and would hold the lock, and the release that waits for it, until the server noticed
   * the client gone (minutes to hours of TCP timeouts): it is ended instead.
   */
  private static final String CLAIM_BARRIER =
      "pg_advisory_xact_lock("
          + CLAIM_KEY
          + ") AS barrier,"
          + " set_config('idle_in_transaction_session_timeout', '10s', true) AS idle_limit";

  /**
   * {@code {durable}}: the server's own synchronous_commit, raised to 'local' (wait for the local
   * flush) where the server, database or role turned it off: the writes that name it must survive a
   * crash of the database, which 'off' does not promise.
   */
  private static final String DURABLE =
      """
      CASE WHEN current_setting('synchronous_commit') = 'off' THEN 'local'
            ELSE current_setting('synchronous_commit') END""";

  /**
   * {@code {aggregate hash(o)}}: the aggregate's hash, non-negative and stable for a given text
   * (hashtext), so an aggregate keeps its share and its exactly-once bucket. One expression for the
   * affinity, the bucket share, recovery and the hash a claim returns. A NULL aggregate id (an
   * adopted table's nullable column) hashes as the empty text: it must be in some share, or under
   * steady load its rows would wait for a task whose share ran dry.
   */
  private static final String AGGREGATE_HASH =
      "(hashtext(COALESCE({aggregate_id as text(o)}, '')) & 2147483647)";

  /**
   * {@code {share}} of an exactly-once claim or recovery: only rows of the buckets this task owns,
   * bucket = hash mod buckets, owned by task {@code bucket mod tasks}. The inequality form, as in
   * {@link #AFFINITY}, keeps PostgreSQL's estimate sane.
   */
  private static final String SHARE =
      """
      AND ({aggregate hash(o)} % CAST(:buckets AS integer)
        % CAST(:tasks AS integer) + CAST(:tasks_minus_task AS integer))
        % CAST(:tasks AS integer) < 1""";

  /**
   * {@code {affinity}} of an ordered claim: only aggregates of one share. The mask keeps the hash
   * non-negative; hashtext is stable for a given text, so an aggregate keeps its share. "(h % n + n
   * - slot) % n < 1" means "h % n = slot", written as an inequality because PostgreSQL estimates an
   * equality on an expression at 0.5 % of the rows: it then sorted the whole share instead of
   * reading the due index up to the limit.
   */
  private static final String AFFINITY =
      """
      AND ({aggregate hash(o)} % CAST(:slots AS integer)
        + CAST(:slots_minus_slot AS integer)) % CAST(:slots AS integer) < 1""";

  /** An unordered claim: the oldest due rows, whatever their aggregate. */
  private static final String CLAIM_UNORDERED =
      """
      WITH clock AS (
        SELECT {now} AS now, CAST(:max_attempts AS integer) AS budget,
          {commit mode}, {claim barrier}
      ), {quota}candidate AS (
        SELECT w.seq FROM (
          SELECT k.seq, k.read_bytes, sum(k.read_bytes) OVER (ORDER BY k.seq) AS read_through
          FROM {own keys} CROSS JOIN LATERAL (
            SELECT o.seq, {read bytes(o)} AS read_bytes
            FROM {table} o, clock
            WHERE {own key(o)} AND {due(o)} {share}
            ORDER BY o.instance_key, o.seq LIMIT {per key} FOR UPDATE OF o SKIP LOCKED) k
          ORDER BY k.seq LIMIT :limit) w
        WHERE {within room(w)}
      )
      {lease(candidate)}""";

  /**
   * Exactly-once recovery (docs/design.md), one page: of the key's rows awaiting delivery after a
   * seq, read in seq order along its due index (no index separates the rows in flight: see {@link
   * #UNSETTLED}), the rows of this task's buckets leased under a lower epoch — all of them at
   * start, only those whose lease expired afterwards. A row of this connector's whose position a
   * committed offset covers was committed to Kafka and is recorded PUBLISHED without its Kafka
   * coordinates (moved to the published log); another connector's row is never covered by this
   * one's offsets, whose epochs say nothing of its own (an offset of a restored database's history
   * could name the epoch that connector took since); any other row is released, due now, at no
   * attempt's cost, and counted in abandoned_claims. Released a second time (its batch failed
   * twice), it is a suspect: flagged isolated, to be claimed alone, since it may be why its
   * instances ended. One that was claimed alone already is charged an attempt instead, and past the
   * budget parked EXHAUSTED, as an abandoned isolated claim at least once. Both bump the token, so
   * the previous holder's late writes are fenced off. Row locks are waited for, not skipped (a
   * sweep's, {@link #SWEEP_PLAN}, for a second at most): a previous holder's write in progress must
   * settle first; the locked rows are found again by the primary key and checked again, since such
   * a write may have settled them. It also returns, untouched, the page's expired rows leased under
   * a later epoch (see {@link dev.outboxrelay.store.Recovery}), and a last row ('page') with the
   * count of rows read and the last seq read. A live lease of another connector's task ({@code {own
   * owner(o)}} false) is left alone and returned ('foreign'); an expired one is released whatever
   * its epoch ({@code {recoverable(o)}}).
   */
  private static final String RECOVER =
      """
      WITH clock AS (SELECT {now} AS now), committed AS (
        SELECT * FROM unnest(CAST(:committed_keys AS text[]),
          CAST(:committed_buckets AS integer[]), CAST(:committed_epochs AS bigint[]),
          CAST(:committed_batches AS bigint[]), CAST(:committed_seqs AS bigint[]))
          AS c(instance_key, bucket, epoch, batch, seq)
      ), page AS (
        SELECT o.seq, {message_id(o)} AS message_id,
          o.status = 'IN_FLIGHT' AND {recoverable(o)} {share} AS lower_epoch,
          o.status = 'IN_FLIGHT' AND o.lease_epoch > CAST(:epoch AS bigint)
            AND o.lease_expires_at <= clock.now AND {own owner(o)} {share} AS later_epoch,
          o.status = 'IN_FLIGHT' AND o.lease_expires_at > clock.now AND NOT {own owner(o)}
            {share} AS foreign_lease
        FROM {table} o, clock
        WHERE {the key(o)} AND {unsettled(o)}
          AND o.seq > CAST(:after_seq AS bigint)
        ORDER BY o.instance_key, o.seq
        LIMIT :page_rows
      ), target AS (
        SELECT o.seq, NOT {own owner(o)} AS foreign_owner, {own owner(o)} AND EXISTS (
            SELECT 1 FROM committed c
            WHERE c.instance_key = o.instance_key
              AND c.bucket = {aggregate hash(o)} % CAST(:buckets AS integer)
              AND c.epoch = o.lease_epoch AND (o.claim_batch, o.seq) <= (c.batch, c.seq)
          ) AS covered
        FROM {table} o, clock
        WHERE o.seq = ANY (ARRAY(SELECT seq FROM page WHERE lower_epoch))
          AND o.instance_key IS NOT DISTINCT FROM :instance_key AND {unsettled(o)}
          AND o.status = 'IN_FLIGHT' AND {recoverable(o)}
        ORDER BY o.seq FOR UPDATE OF o
      ), released AS (
        UPDATE {table} o
        SET status = CASE WHEN o.isolated AND o.attempts + 1 >= CAST(:max_attempts AS integer)
            THEN 'EXHAUSTED'
            WHEN o.isolated OR o.attempts > 0 THEN 'AMBIGUOUS' ELSE 'PENDING' END,
          attempts = o.attempts + CASE WHEN o.isolated THEN 1 ELSE 0 END,
          abandoned_claims = o.abandoned_claims + 1,
          last_failure_code = CASE WHEN o.isolated
              AND o.attempts + 1 >= CAST(:max_attempts AS integer)
            THEN 'ABANDONED_IN_ISOLATION' ELSE o.last_failure_code END,
          parked_at = CASE WHEN o.isolated AND o.attempts + 1 >= CAST(:max_attempts AS integer)
            THEN clock.now ELSE o.parked_at END,
          kafka_topic = NULL, kafka_partition = NULL, kafka_offset = NULL,
          next_attempt_at = NULL, lease_owner = NULL, lease_expires_at = NULL,
          lease_token = o.lease_token + 1, lease_epoch = NULL, claim_batch = NULL,
          isolated = o.abandoned_claims > 0
        FROM target t, clock WHERE o.seq = t.seq AND NOT t.covered
        RETURNING {message_id(o)} AS message_id, o.instance_key, o.seq, o.status, o.isolated,
          t.foreign_owner
      ), moved AS (
        DELETE FROM {table} o USING target t WHERE o.seq = t.seq AND t.covered
        RETURNING {moved(o)}, o.lease_token + 1 AS lease_token,
          'RECOVERED_FROM_OFFSETS' AS last_failure_code,
          CAST(NULL AS text) AS topic, CAST(NULL AS integer) AS kafka_partition,
          CAST(NULL AS bigint) AS kafka_offset
      ), logged AS (
        {log moved}
      )
      SELECT message_id,
        CASE WHEN status = 'EXHAUSTED' THEN 'exhausted' WHEN isolated THEN 'suspect'
          ELSE 'released' END AS kind, seq, CAST(NULL AS bigint) AS rows_read
      FROM released
      UNION ALL SELECT message_id, 'published', seq, NULL FROM moved
      UNION ALL SELECT message_id, 'later epoch', seq, NULL FROM page WHERE later_epoch
      UNION ALL SELECT message_id, 'foreign', seq, NULL FROM page WHERE foreign_lease
      UNION ALL SELECT message_id, 'foreign released', seq, NULL FROM released
        WHERE foreign_owner AND status <> 'EXHAUSTED'
      UNION ALL SELECT NULL, 'page', (SELECT max(seq) FROM page), (SELECT count(*) FROM page)""";

  /**
   * {@code {give back(o)}}: a claim's row handed back unsent (its claim's result was lost): due
   * now, no attempt charged, the token bumped so that the lost claim's lease writes nothing. An
   * exactly-once suspect stays flagged isolated, so that it is claimed alone again (unflagged, it
   * would go out in a batch, and if it is why its instances end, fail that batch unblamed); at
   * least once the flag marks an abandoned row's claim alone, which the give-back ends.
   */
  private static final String GIVE_BACK =
      """
      status = CASE WHEN o.attempts > 0 THEN 'AMBIGUOUS' ELSE 'PENDING' END,
        next_attempt_at = NULL, lease_owner = NULL, lease_expires_at = NULL,
        lease_token = o.lease_token + 1, lease_epoch = NULL, claim_batch = NULL,
        isolated = o.isolated AND o.lease_epoch IS NOT NULL""";

  /** {@code {acks}}: a publish's acks, one row {@code a} each, numbered in order ({@code n}). */
  private static final String ACKS =
      """
      SELECT * FROM unnest(CAST(:message_ids AS text[]), CAST(:seqs AS bigint[]),
          CAST(:owners AS text[]), CAST(:tokens AS bigint[]),
          CAST(:kafka_topics AS text[]), CAST(:kafka_partitions AS integer[]),
          CAST(:kafka_offsets AS bigint[]))
        WITH ORDINALITY AS a(message_id, seq, owner, token, topic, kafka_partition,
          kafka_offset, n)""";

  /**
   * {@code {under ack(o)}}: the row {@code o} is found by its seq (the primary key, a unique index
   * on an adopted table), holds the ack's message id, and is in flight under the ack's lease on one
   * of the statement's keys.
   */
  private static final String UNDER_ACK =
      """
      o.seq = ANY (CAST(:seqs AS bigint[]))
        AND o.seq = a.seq AND {message_id(o)} = a.message_id
        AND o.status = 'IN_FLIGHT'
        AND o.lease_owner = a.owner AND o.lease_token = a.token
        AND o.instance_key = ANY (:instance_keys)""";

  /** {@code {moved returning}}: what a publish's DELETE returns of each row it moves. */
  private static final String MOVED_RETURNING =
      """
      RETURNING {moved(o)}, o.lease_token, o.last_failure_code, a.topic,
        a.kafka_partition, a.kafka_offset, a.n, o.lease_epoch IS NOT NULL AS exactly_once""";

  /** {@code {held leases}}: the leases a renewal or a give-back names, one row {@code h} each. */
  private static final String HELD_LEASES =
      """
      unnest(CAST(:seqs AS bigint[]), CAST(:message_ids AS text[]),
          CAST(:owners AS text[]), CAST(:tokens AS bigint[])) AS h(seq, message_id, owner, token)""";

  /**
   * {@code {under held lease(o)}}: the row {@code o} is found by its seq (the primary key), holds
   * the lease's message id, and is in flight under that lease on one of the statement's keys.
   */
  private static final String UNDER_HELD_LEASE =
      """
      o.seq = ANY (CAST(:seqs AS bigint[]))
        AND o.seq = h.seq AND {message_id(o)} = h.message_id AND o.status = 'IN_FLIGHT'
        AND o.lease_owner = h.owner AND o.lease_token = h.token
        AND o.instance_key = ANY (:instance_keys)""";

  /**
   * {@code {moved(o)}}: what a published row leaves in the published log (schema version 9),
   * returned by the DELETE that takes it out of the outbox; {@code {log moved}} writes it. The
   * message's own fields go in as text, whatever the adopted table's column types.
   */
  private static final String MOVED =
      """
      o.seq, {message_id(o)} AS message_id, o.instance_key,
          {aggregate_type as text(o)} AS aggregate_type, {aggregate_id as text(o)} AS aggregate_id,
          {event_type as text(o)} AS event_type, o.correlation_id, o.created_at, o.attempts,
          o.abandoned_claims""";

  private static final String LOG_MOVED =
      """
      INSERT INTO {published} (seq, message_id, instance_key, aggregate_type, aggregate_id,
            event_type, correlation_id, created_at, attempts, abandoned_claims, lease_token,
            last_failure_code, published_at, kafka_topic, kafka_partition, kafka_offset)
          SELECT m.seq, m.message_id, m.instance_key, m.aggregate_type, m.aggregate_id,
            m.event_type, m.correlation_id, m.created_at, m.attempts, m.abandoned_claims,
            m.lease_token, m.last_failure_code, clock.now, m.topic, m.kafka_partition,
            m.kafka_offset
          FROM moved m, clock""";

  /**
   * The published log's columns a publish inserts ({@link #LOG_MOVED}'s column list): the role
   * needs INSERT on each ({@link RelayPrivileges}).
   */
  static final List<String> LOGGED = insertedColumns(LOG_MOVED);

  private static List<String> insertedColumns(String insert) {
    int open = insert.indexOf('(');
    return Stream.of(insert.substring(open + 1, insert.indexOf(')', open)).split(","))
        .map(String::strip)
        .toList();
  }

  /**
   * {@code {lease(rows)}}: the UPDATE of the claims; rows over the budget are parked. {@code
   * {isolation}}: FALSE for a claim of due rows, TRUE for a suspect's claim alone ({@link
   * #CLAIM_SUSPECT}). It takes the claimed rows as an array of seqs, a probe of the primary key
   * each, not as a join, whose plan would rest on an estimate of the claimed rows (with a claim's
   * limit hidden from the planner, it once hashed them and read the whole table;
   * docs/benchmarks.md, finding 19).
   */
  private static final String LEASE =
      """
      UPDATE {table} o
      SET status = CASE WHEN o.attempts >= clock.budget THEN 'EXHAUSTED' ELSE 'IN_FLIGHT' END,
        lease_owner = CASE WHEN o.attempts >= clock.budget THEN NULL ELSE :owner END,
        lease_token = o.lease_token + 1,
        lease_expires_at = CASE WHEN o.attempts >= clock.budget THEN NULL ELSE {lease end} END,
        last_failure_code = CASE WHEN o.attempts >= clock.budget THEN 'ATTEMPTS_BUDGET_LOWERED'
          ELSE o.last_failure_code END,
        parked_at = CASE WHEN o.attempts >= clock.budget THEN clock.now ELSE o.parked_at END,
        lease_epoch = CAST(:epoch AS bigint), claim_batch = CAST(:claim_batch AS bigint),
        isolated = {isolation}
      FROM clock WHERE o.seq = ANY (ARRAY(SELECT seq FROM {rows}))
      RETURNING {claimed columns}""";

  /**
   * The claim of one abandoned row (its lease expired), ordered or not. It is reclaimed alone and
   * flagged isolated; abandoned again while isolated, it is charged an attempt, and past the budget
   * it ends EXHAUSTED (token still bumped so the vanished owner stays fenced off). A row already at
   * or over the budget (max.attempts was lowered after it was charged) is parked EXHAUSTED, as a
   * claim parks one. At least once only: it forgets an exactly-once position (a connector switched
   * modes with rows in flight), which would let a later exactly-once recovery take the row for
   * covered by the old epoch's committed offsets.
   */
  private static final String CLAIM_ABANDONED =
      """
      WITH clock AS (SELECT {now} AS now, {claim barrier}), target AS (
        {abandoned row} FOR UPDATE OF o SKIP LOCKED) k
        ORDER BY k.seq LIMIT 1
      )
      UPDATE {table} o
      SET status = CASE WHEN {spent} THEN 'EXHAUSTED' ELSE 'IN_FLIGHT' END,
        attempts = o.attempts + CASE WHEN o.isolated THEN 1 ELSE 0 END,
        abandoned_claims = o.abandoned_claims + 1,
        lease_token = o.lease_token + 1,
        lease_owner = CASE WHEN {spent} THEN NULL ELSE :owner END,
        lease_expires_at = CASE WHEN {spent} THEN NULL ELSE {lease end} END,
        last_failure_code = CASE WHEN NOT {spent} THEN o.last_failure_code
          WHEN o.isolated THEN 'ABANDONED_IN_ISOLATION' ELSE 'ATTEMPTS_BUDGET_LOWERED' END,
        parked_at = CASE WHEN {spent} THEN clock.now ELSE o.parked_at END,
        isolated = TRUE, lease_epoch = NULL, claim_batch = NULL
      FROM target c, clock WHERE o.seq = c.seq
      RETURNING {claimed columns}"""
          // The attempts once this claim has charged its own (isolated: one) reach the budget.
          .replace(
              "{spent}", "(o.attempts + CASE WHEN o.isolated THEN 1 ELSE 0 END >= :max_attempts)");

  /**
   * {@code {abandoned row}}: the oldest abandoned row of each own key (IN_FLIGHT, its lease
   * expired, ordered: {@code {in order}}), read by the due index up to the first; the caller closes
   * the lateral subquery, with or without a lock.
   */
  private static final String ABANDONED_ROW =
      """
      SELECT k.seq FROM {own keys} CROSS JOIN LATERAL (
          SELECT o.seq
          FROM {table} o, clock
          WHERE {own key(o)}
            AND o.published_at IS NULL AND o.parked_at IS NULL
            AND o.status = 'IN_FLIGHT' AND o.lease_expires_at <= clock.now {in order}
          ORDER BY o.instance_key, o.seq LIMIT 1""";

  /**
   * Whether {@link #CLAIM_ABANDONED} would find a row (locks aside), read without locking or
   * changing one: a task looks for abandoned rows this way first, and settles what it holds before
   * an isolated claim only when there is one (docs/design.md, "Attempts").
   */
  private static final String FIND_ABANDONED =
      """
      WITH clock AS (SELECT {now} AS now)
      {abandoned row}) k
      LIMIT 1""";

  /**
   * Exactly-once: one suspect alone (a row a recovery released: its instance ended without Kafka
   * committing it, maybe because of it; {@link dev.outboxrelay.store.ExactlyOnceClaim#suspects}),
   * the first of {@code :suspects} still flagged, due and, ordered ({@code {in order}}), with no
   * earlier active row of its aggregate that the claimer does not hold. It stays flagged, so that
   * released again unsent it is charged an attempt. Read by the primary key, the seqs being known.
   * NOWAIT, not SKIP LOCKED: a suspect another session holds locked (an operator's transaction; no
   * other task's claim takes a row of this task's buckets) fails the claim (55P03, retried), where
   * an empty claim was taken for "no suspect left" and the row went out in an ordinary batch.
   */
  private static final String CLAIM_SUSPECT =
      """
      WITH clock AS (
        SELECT {now} AS now, CAST(:max_attempts AS integer) AS budget,
          {commit mode}, {claim barrier}
      ), candidate AS (
        SELECT o.seq FROM {table} o, clock
        WHERE o.seq = ANY (CAST(:suspects AS bigint[]))
          AND o.instance_key = ANY (:instance_keys) AND {due(o)} AND o.isolated {in order}
        ORDER BY o.seq LIMIT 1 FOR UPDATE OF o NOWAIT
      )
      {lease(candidate)}""";

  /**
   * {@code {in order}} of an ordered abandoned claim: no earlier row of its aggregate is active,
   * unless this owner holds it under a live lease.
   */
  private static final String ABANDONED_IN_ORDER =
      """
      AND NOT EXISTS (
            SELECT 1 FROM {table} p
            WHERE p.instance_key = o.instance_key AND {aggregate_id(p)} = {aggregate_id(o)}
              AND p.seq < o.seq
              AND {unsettled(p)}
              AND NOT {held(p)})""";

  final NamedSql claimSuspectOrdered;
  final NamedSql claimSuspectUnordered;
  final Claim claimOrdered;
  final Claim claimOrderedWithAffinity;
  final Claim claimUnordered;
  final Claim claimOrderedInShare;
  final Claim claimUnorderedInShare;

  /**
   * A claim statement in its two forms: for one instance key (up to the limit of its rows, locked
   * as read) and for several ({@link #QUOTA}). The one-key form plans and runs without the quota.
   */
  record Claim(NamedSql oneKey, NamedSql severalKeys) {
    NamedSql forKeys(int count) {
      return count == 1 ? oneKey : severalKeys;
    }
  }

  final NamedSql recover;
  final NamedSql recoverInShare;
  final NamedSql releaseUnheld;
  final NamedSql claimsEnded;
  final NamedSql giveBack;
  final NamedSql expireLeases;
  final NamedSql newEpoch;
  final NamedSql epochWal;
  final NamedSql claimAbandonedOrdered;
  final NamedSql claimAbandonedUnordered;
  final NamedSql findAbandonedOrdered;
  final NamedSql findAbandonedUnordered;
  final NamedSql markPublishedBatch;
  final NamedSql markPublishedSkippingLocked;
  final NamedSql publishedUnderOwnLease;
  final NamedSql retryLater;
  final NamedSql markFailed;
  final NamedSql park;
  final NamedSql recordDeadLetterCopies;
  final NamedSql parkedUnderOwnLease;
  final NamedSql release;
  final NamedSql renew;
  final NamedSql countByStatus;
  final NamedSql countParked;
  final NamedSql lag;
  final NamedSql leasedElsewhere;
  final NamedSql deletePublishedLog;
  final NamedSql deletePublished;
  final NamedSql now;
  final NamedSql readPayloadIsBytea;

  private final Map<String, String> fragments = new LinkedHashMap<>();

  OutboxSql(OutboxTable table) {
    this(table, ColumnMapping.RELAY, true);
  }

  /**
   * The statements for {@code table}, its message fields in the {@code columns} named there: {@code
   * {message_id}} and {@code {message_id(o)}} as text, to compare with a bound id; {@code
   * {aggregate_id(o)}} as stored, to compare with itself.
   *
   * @param payloadIsBytea the payload column is a bytea (the relay's own table); otherwise a claim
   *     measures its text (jsonb, json, text, varchar: an adopted table's)
   */
  OutboxSql(OutboxTable table, ColumnMapping columns, boolean payloadIsBytea) {
    this(table, columns, payloadIsBytea, true);
  }

  /**
   * @param logsPublished a published row leaves an entry in the published log; otherwise it is only
   *     deleted ({@code retention.published.ms=0}: nothing kept)
   */
  OutboxSql(
      OutboxTable table, ColumnMapping columns, boolean payloadIsBytea, boolean logsPublished) {
    // First: they hold placeholders of their own.
    fragments.put("{earlier}", EARLIER);
    fragments.put("{not held back}", NOT_HELD_BACK);
    fragments.put("{head free}", HEAD_FREE);
    fragments.put("{claimable so far}", CLAIMABLE_SO_FAR);
    fragments.put("{log moved}", logsPublished ? LOG_MOVED : "SELECT NULL");
    fragments.put("{give back(o)}", GIVE_BACK);
    fragments.put("{acks}", ACKS);
    fragments.put("{under ack(o)}", UNDER_ACK);
    fragments.put("{moved returning}", MOVED_RETURNING);
    fragments.put("{held leases}", HELD_LEASES);
    fragments.put("{under held lease(o)}", UNDER_HELD_LEASE);
    fragments.put("{moved(o)}", MOVED);
    fragments.put("{lease(claimable)}", LEASE.replace("{rows}", "claimable"));
    fragments.put("{lease(candidate)}", LEASE.replace("{rows}", "candidate"));
    fragments.put("{affinity}", AFFINITY);
    fragments.put("{abandoned row}", ABANDONED_ROW);
    fragments.put("{in order}", ABANDONED_IN_ORDER);
    fragments.put("{claimed columns}", OutboxColumns.Claimed.returning(columns, payloadIsBytea));
    fragments.put("{within room(w)}", WITHIN_ROOM);
    fragments.put("{read bytes(o)}", OutboxColumns.Claimed.readBytes(columns, payloadIsBytea));
    fragments.put("{due(o)}", due("o"));
    fragments.put("{due(p)}", due("p"));
    fragments.put("{due(h)}", due("h"));
    fragments.put("{fence}", FENCE);
    fragments.put("{lock wait}", LOCK_WAIT);
    fragments.put("{own keys}", OWN_KEYS);
    fragments.put("{own key(o)}", OWN_KEY);
    fragments.put("{the key(o)}", THE_KEY);
    fragments.put("{unsettled(o)}", UNSETTLED.formatted("o"));
    fragments.put("{recoverable(o)}", RECOVERABLE);
    fragments.put("{own owner(o)}", OWN_OWNER);
    fragments.put("{unsettled(p)}", UNSETTLED.formatted("p"));
    fragments.put("{held(p)}", HELD.formatted("p"));
    fragments.put("{message_id}", columns.asText(OutboxColumns.Row.MESSAGE_ID, null));
    fragments.put("{message_id(o)}", columns.asText(OutboxColumns.Row.MESSAGE_ID, "o"));
    fragments.put("{aggregate_id(o)}", columns.quoted(OutboxColumns.Row.AGGREGATE_ID, "o"));
    fragments.put("{aggregate_id(p)}", columns.quoted(OutboxColumns.Row.AGGREGATE_ID, "p"));
    fragments.put("{aggregate hash(o)}", AGGREGATE_HASH);
    fragments.put("{aggregate_id as text(o)}", columns.asText(OutboxColumns.Row.AGGREGATE_ID, "o"));
    fragments.put(
        "{aggregate_type as text(o)}", columns.asText(OutboxColumns.Row.AGGREGATE_TYPE, "o"));
    fragments.put("{event_type as text(o)}", columns.asText(OutboxColumns.Row.EVENT_TYPE, "o"));
    fragments.put("{now}", NOW);
    fragments.put("{lease end}", LEASE_END);
    fragments.put("{table}", table.qualified());
    fragments.put("{published}", table.qualifiedPublishedLog());

    fragments.put("{commit mode}", COMMIT_MODE);
    fragments.put("{claim barrier}", CLAIM_BARRIER);
    fragments.put("{durable}", DURABLE); // after {commit mode}, which holds it

    claimSuspectOrdered = statement(suspect(CLAIM_SUSPECT));
    claimSuspectUnordered = statement(suspect(CLAIM_SUSPECT.replace("{in order}", "")));
    fragments.put("{isolation}", "FALSE"); // after the suspects' claims, which set their own
    claimOrdered = claim(CLAIM_ORDERED, t -> t.replace("{affinity}", "").replace("{share}", ""));
    claimOrderedWithAffinity = claim(CLAIM_ORDERED, t -> t.replace("{share}", ""));
    claimOrderedInShare =
        claim(CLAIM_ORDERED, t -> t.replace("{affinity}", "").replace("{share}", SHARE));
    // The quota reads like the claim: an unordered one has no affinity and no order to keep.
    UnaryOperator<String> unordered =
        t -> t.replace("{affinity}", "").replace("{earlier}", "").replace("{not held back}", "");
    claimUnordered = claim(CLAIM_UNORDERED, t -> unordered.apply(t).replace("{share}", ""));
    claimUnorderedInShare =
        claim(CLAIM_UNORDERED, t -> unordered.apply(t).replace("{share}", SHARE));
    recover = statement(RECOVER.replace("{share}", ""));
    recoverInShare = statement(RECOVER.replace("{share}", SHARE));
    // One page of the rows of a claim whose result never arrived: the key's rows awaiting
    // delivery after a seq, read in seq order along its due index (the key a range, ordered as
    // that index is, so that no plan reads another key's rows by the primary key); of them, those
    // leased to the owner, not held by it, and exactly once of no batch handed to Connect, given
    // back by their seqs (OutboxStore#releaseUnheld). The held seqs are compared only for the
    // owner's own rows, as a hashed subquery: PostgreSQL 13 and 14 compared each row with every
    // element of a "<> ALL (array)" (0.35 s a page with 31,500 held, 47 ms hashed); no held seq
    // is null.
    // The update checks the key again as a filter, not an index condition (IS NOT DISTINCT FROM):
    // as one, on a small table the planner chose the (instance_key, aggregate_id, seq) index,
    // which reads every entry of the key to find these seqs; the primary key finds each at once.
    // Committed as durably as a claim exactly once is, as a give-back is ({durable}): lost in a
    // crash, the released rows would come back leased under a batch number that the next batch's
    // committed offset covers, with nothing left to release them again.
    // In autocommit: the lock, if granted, is let go at once; never waits
    // (OutboxStore#claimsEnded).
    claimsEnded = statement("SELECT pg_try_advisory_xact_lock(" + CLAIM_KEY + ")");
    releaseUnheld =
        statement(
            """
            WITH page AS (
              SELECT o.seq,
                o.status = 'IN_FLIGHT' AND o.lease_owner = :owner
                  AND o.seq NOT IN (SELECT unnest(CAST(:held_seqs AS bigint[])))
                  AND (o.claim_batch IS NULL OR o.claim_batch > CAST(:handed_through AS bigint))
                  AS unheld
              FROM {table} o
              WHERE {the key(o)} AND {unsettled(o)}
                AND o.seq > CAST(:after_seq AS bigint)
              ORDER BY o.instance_key, o.seq
              LIMIT :page_rows
            ), released AS (
              UPDATE {table} o SET {give back(o)}
              WHERE o.seq = ANY (ARRAY(SELECT seq FROM page WHERE unheld))
                AND o.instance_key IS NOT DISTINCT FROM :instance_key AND {unsettled(o)}
                AND o.status = 'IN_FLIGHT' AND o.lease_owner = :owner
                AND o.seq NOT IN (SELECT unnest(CAST(:held_seqs AS bigint[])))
                AND (o.claim_batch IS NULL OR o.claim_batch > CAST(:handed_through AS bigint))
                AND (SELECT set_config('synchronous_commit', {durable}, true)) IS NOT NULL
              RETURNING {message_id(o)} AS message_id
            )
            SELECT (SELECT count(*) FROM page) AS rows_read, (SELECT max(seq) FROM page) AS last_seq,
              ARRAY(SELECT message_id FROM released) AS released""");
    // Rows of a claim just made, past the task's byte budget, given back as releaseUnheld gives
    // rows back; found like the rows of a renewal, and run under ACKS_PLAN too
    // (OutboxStore#giveBack).
    // Committed as durably as a claim exactly once is ({durable}, set once before the rows are
    // read: an uncorrelated subquery): lost in a crash, rows given back from a batch handed to
    // Connect would stay leased under that batch's number, which the next batch's committed offset
    // covers (recovery would record them PUBLISHED unsent).
    giveBack =
        statement(
            """
            UPDATE {table} o SET {give back(o)}
            FROM {held leases}
            WHERE {under held lease(o)}
              AND (SELECT set_config('synchronous_commit', {durable}, true)) IS NOT NULL
            RETURNING {message_id(o)}""");
    // A stopping task's live leases, ended now; nothing else changes (OutboxStore#expireLeases).
    // Found like the rows of a renewal (a lease owner is in no index), and run under ACKS_PLAN too.
    // Returns the message id of each live lease held, and whether it ended: a row whose lock
    // another session holds is skipped as a renewal skips it (waiting, the stop's end of every
    // other lease waited out the statement timeout, and then failed).
    expireLeases =
        statement(
            """
            WITH clock AS (SELECT {now} AS now),
            held AS (
              SELECT o.seq, h.message_id FROM {table} o, {held leases}
              WHERE {under held lease(o)} AND o.lease_expires_at > (SELECT now FROM clock)
            ),
            unlocked AS (
              SELECT o.seq FROM {table} o WHERE o.seq = ANY (ARRAY(SELECT seq FROM held))
              FOR NO KEY UPDATE OF o SKIP LOCKED
            ),
            ended AS (
              UPDATE {table} o SET lease_expires_at = (SELECT now FROM clock)
              FROM {held leases}
              WHERE {under held lease(o)} AND o.lease_expires_at > (SELECT now FROM clock)
                AND o.seq IN (SELECT seq FROM unlocked)
              RETURNING o.seq
            )
            SELECT held.message_id, held.seq IN (SELECT seq FROM ended) AS ended FROM held""");
    // An epoch: a transaction id, assigned now, so larger than any taken before (docs/design.md);
    // and committed durably before it is used. A transaction that writes no WAL of its own commits
    // asynchronously, and a crash (or a failover) before the WAL writer's next flush lost it with
    // its transaction id, which a later instance then took again. Creating a temporary table
    // (dropped at the commit) writes catalog rows, WAL whose contents no logical-decoding consumer
    // is sent, so the commit waits for the flush (and a synchronous standby where
    // synchronous_commit asks for one), raised from 'off' as claims are. Needs TEMPORARY on the
    // database (PUBLIC's); validation tries it (EpochTable).
    epochWal = statement(EpochTable.CREATE);
    newEpoch =
        statement("SELECT txid_current(), set_config('synchronous_commit', {durable}, true)");
    claimAbandonedOrdered = statement(CLAIM_ABANDONED);
    claimAbandonedUnordered = statement(unordered(CLAIM_ABANDONED));
    findAbandonedOrdered = statement(FIND_ABANDONED);
    findAbandonedUnordered = statement(unordered(FIND_ABANDONED));

    // Publishing moves each acknowledged row, still held under the acknowledged lease, into the
    // published log: one DELETE and one INSERT, no new version of the row and no index entry in
    // the outbox. Each row is found by its seq (the primary key, a unique index on an adopted
    // table) and must hold the acked message id. The outbox is read only by `seq = ANY (:seqs)`,
    // and the statement runs under PUBLISH_PLAN: the join with the acks is then a hash or merge
    // join, whatever the statistics say of the rows in flight (docs/benchmarks.md, finding 19), and
    // a row lock held elsewhere fails it after OUTCOME_LOCK_WAIT (markPublishedSkippingLocked then
    // writes the rest). Returns the position of each applied ack. An exactly-once row's publish
    // commits at least locally flushed ({durable}), like its claim: lost in a crash, the row would
    // stay in flight, its aggregate behind it, until the next start.
    markPublishedBatch =
        statement(
            """
            WITH clock AS (SELECT {now} AS now), acked AS (
              {acks}
            ), moved AS (
              DELETE FROM {table} o USING acked a
              WHERE {under ack(o)}
              {moved returning}
            ), logged AS (
              {log moved}
            )
            SELECT n, CASE WHEN exactly_once
                THEN set_config('synchronous_commit', {durable}, true) END AS commit_mode
            FROM moved""");

    // A publish that ran into a row lock another session holds (an operator's open transaction;
    // 55P03 after OUTCOME_LOCK_WAIT), sent again: it skips the locked rows, as a renewal does, and
    // moves the others as markPublishedBatch does. Returns the position of each applied ack
    // (applied true) and of each whose row, read as committed, is still held under the ack's lease
    // but locked (applied false): written again later. Run under PUBLISH_PLAN too.
    markPublishedSkippingLocked =
        statement(
            """
            WITH clock AS (SELECT {now} AS now), acked AS (
              {acks}
            ), held AS (
              SELECT o.seq, a.n FROM {table} o, acked a WHERE {under ack(o)}
            ), unlocked AS (
              SELECT o.seq FROM {table} o WHERE o.seq = ANY (ARRAY(SELECT seq FROM held))
              FOR UPDATE OF o SKIP LOCKED
            ), moved AS (
              DELETE FROM {table} o USING acked a
              WHERE {under ack(o)} AND o.seq IN (SELECT seq FROM unlocked)
              {moved returning}
            ), logged AS (
              {log moved}
            )
            SELECT n, TRUE AS applied, CASE WHEN exactly_once
                THEN set_config('synchronous_commit', {durable}, true) END AS commit_mode
            FROM moved
            UNION ALL
            SELECT n, FALSE, NULL FROM held WHERE seq NOT IN (SELECT seq FROM unlocked)""");

    // Acks a retried publish found lost whose rows the log holds under their own lease and with
    // their own Kafka coordinates: published by the earlier attempt, whose reply was lost. The
    // coordinates tell it from another owner's publish under the same token (a claim lost in a
    // database crash is claimed again with the token it had). Found by the message id index.
    publishedUnderOwnLease =
        statement(
            """
            SELECT p.message_id
            FROM unnest(CAST(:message_ids AS text[]), CAST(:seqs AS bigint[]),
                CAST(:tokens AS bigint[]), CAST(:kafka_topics AS text[]),
                CAST(:kafka_partitions AS integer[]), CAST(:kafka_offsets AS bigint[]))
                AS a(message_id, seq, token, topic, kafka_partition, kafka_offset)
              JOIN {published} p ON p.message_id = a.message_id AND p.seq = a.seq
                AND p.lease_token = a.token AND p.kafka_topic = a.topic
                AND p.kafka_partition = a.kafka_partition AND p.kafka_offset = a.kafka_offset
            WHERE p.instance_key = ANY (:instance_keys)""");

    // An exactly-once row's retry (a record a transform dropped, its row in a batch whose offsets
    // Kafka committed) commits at least locally flushed ({durable}), as its park would: lost in a
    // crash, the row would be in flight again at a committed position, and recovery would record it
    // PUBLISHED, unsent.
    retryLater =
        statement(
            """
            WITH clock AS (SELECT {now} AS now)
            UPDATE {table}
            SET status = CASE WHEN attempts + 1 >= :max_attempts THEN 'EXHAUSTED'
                ELSE 'AMBIGUOUS' END,
              attempts = attempts + 1, last_failure_code = :reason,
              next_attempt_at = clock.now + (:delay_ms * INTERVAL '1 millisecond'),
              parked_at = CASE WHEN attempts + 1 >= :max_attempts THEN clock.now END,
              lease_owner = NULL, lease_expires_at = NULL, isolated = FALSE
            FROM clock
            WHERE {message_id} = :message_id {fence} {lock wait}
            RETURNING status, CASE WHEN lease_epoch IS NOT NULL
                THEN set_config('synchronous_commit', {durable}, true) END AS commit_mode""");

    markFailed =
        statement(
            """
            WITH clock AS (
              SELECT {now} AS now, set_config('synchronous_commit', {durable}, true) AS commit_mode
            )
            UPDATE {table}
            SET status = 'FAILED', last_failure_code = :reason, next_attempt_at = NULL,
              parked_at = clock.now,
              kafka_topic = :dead_letter_topic,
              kafka_partition = CAST(:dead_letter_partition AS integer),
              kafka_offset = CAST(:dead_letter_offset AS bigint),
              lease_owner = NULL, lease_expires_at = NULL, isolated = FALSE
            FROM clock
            WHERE {message_id} = :message_id {fence} {lock wait}""");

    // Exactly once, the unpublishable rows of a claim parked FAILED before its batch leaves, in one
    // statement (one each held a poll for seconds on a batch of thousands): each found as a
    // publish finds its row, under PUBLISH_PLAN too (a row lock held elsewhere fails it after
    // OUTCOME_LOCK_WAIT: the batch stays held, parked again at the next poll), and parked as
    // markFailed parks one (token and claim position kept), as durably (set once, by an
    // uncorrelated subquery: a CTE calling set_config is not inlined, and its one row was joined
    // by a nested loop). Returns the position of each applied park.
    park =
        statement(
            """
            WITH clock AS (SELECT {now} AS now), h AS (
              SELECT * FROM unnest(CAST(:seqs AS bigint[]), CAST(:message_ids AS text[]),
                  CAST(:owners AS text[]), CAST(:tokens AS bigint[]), CAST(:reasons AS text[]))
                WITH ORDINALITY AS p(seq, message_id, owner, token, reason, n)
            )
            UPDATE {table} o
            SET status = 'FAILED', last_failure_code = h.reason, next_attempt_at = NULL,
              parked_at = clock.now,
              kafka_topic = NULL, kafka_partition = NULL, kafka_offset = NULL,
              lease_owner = NULL, lease_expires_at = NULL, isolated = FALSE
            FROM clock, h
            WHERE {under held lease(o)}
              AND (SELECT set_config('synchronous_commit', {durable}, true)) IS NOT NULL
            RETURNING h.n""");

    // Exactly once, the positions of parked rows' dead-letter records, once their transactions
    // committed, in one statement (one each took a poll's second for one or two thousand): each
    // only in its row as its park left it. Found as a park finds its rows, and run under
    // PUBLISH_PLAN too (a locked row: the positions are kept and written again later). Returns the
    // position of each recorded.
    recordDeadLetterCopies =
        statement(
            """
            UPDATE {table} o
            SET kafka_topic = c.topic, kafka_partition = c.kafka_partition,
              kafka_offset = c.kafka_offset
            FROM unnest(CAST(:seqs AS bigint[]), CAST(:message_ids AS text[]),
                CAST(:tokens AS bigint[]), CAST(:epochs AS bigint[]), CAST(:batches AS bigint[]),
                CAST(:topics AS text[]), CAST(:partitions AS integer[]), CAST(:offsets AS bigint[]))
              WITH ORDINALITY
              AS c(seq, message_id, token, epoch, batch, topic, kafka_partition, kafka_offset, n)
            WHERE o.seq = ANY (CAST(:seqs AS bigint[])) AND o.seq = c.seq
              AND {message_id(o)} = c.message_id AND o.status = 'FAILED'
              AND o.lease_token = c.token AND o.lease_epoch = c.epoch AND o.claim_batch = c.batch
              AND o.kafka_offset IS NULL AND o.instance_key = ANY (:instance_keys)
            RETURNING c.n""");

    // Exactly-once parks retried after their reply was lost: FAILED with their reasons under the
    // tokens and position they were claimed with (park keeps them). Found as park finds them, and
    // run under ACKS_PLAN too.
    parkedUnderOwnLease =
        statement(
            """
            SELECT {message_id(o)}
            FROM {table} o JOIN unnest(CAST(:seqs AS bigint[]), CAST(:message_ids AS text[]),
                CAST(:tokens AS bigint[]), CAST(:reasons AS text[]), CAST(:epochs AS bigint[]),
                CAST(:batches AS bigint[])) AS p(seq, message_id, token, reason, epoch, batch)
              ON o.seq = p.seq AND {message_id(o)} = p.message_id
            WHERE o.seq = ANY (CAST(:seqs AS bigint[])) AND o.status = 'FAILED'
              AND o.lease_token = p.token AND o.last_failure_code = p.reason
              AND o.lease_epoch = p.epoch AND o.claim_batch = p.batch
              AND o.instance_key = ANY (:instance_keys)""");

    release =
        statement(
            """
            UPDATE {table}
            SET status = CASE WHEN attempts > 0 THEN 'AMBIGUOUS' ELSE 'PENDING' END,
              next_attempt_at = NULL,
              lease_owner = NULL, lease_expires_at = NULL, isolated = FALSE
            WHERE {message_id} = :message_id {fence} {lock wait}""");

    // Returns the message id of each lease still held, and whether it was renewed. Found like the
    // rows of a publish, and run under ACKS_PLAN too. A row whose lock another session holds (an
    // operator's open transaction) is skipped, not waited for: waiting, every renewal of the task
    // would run into the statement timeout and all its leases expire. Read as committed first, a
    // skipped row is told apart from a lost one; the next renewal tries it again. The UPDATE joins
    // the locked rows rather than naming them as a second array of seqs: up to PostgreSQL 16 a
    // btree scan's cost multiplies the lengths of every array compared with the same column, and
    // the renewal then read the whole table (found on 13 and 15, ClaimStatementTest).
    renew =
        statement(
            """
            WITH clock AS (SELECT {now} AS now),
            held AS (
              SELECT o.seq, h.message_id FROM {table} o, {held leases} WHERE {under held lease(o)}
            ),
            unlocked AS (
              SELECT o.seq FROM {table} o WHERE o.seq = ANY (ARRAY(SELECT seq FROM held))
              FOR NO KEY UPDATE OF o SKIP LOCKED
            ),
            renewed AS (
              UPDATE {table} o
              SET lease_expires_at = clock.now + (:lease_ms * INTERVAL '1 millisecond')
              FROM clock, {held leases}
              WHERE {under held lease(o)} AND o.seq IN (SELECT seq FROM unlocked)
              RETURNING o.seq
            )
            SELECT held.message_id, held.seq IN (SELECT seq FROM renewed) AS renewed FROM held""");

    // One branch per partial index, so the backlog figures cost O(active + parked rows), not a
    // scan of every retained published row. The branches are disjoint by their predicates; a row
    // parked by a relay older than schema version 7 (no parked_at) is counted in the first.
    // Published rows are in the published log, and those published before version 9 still in the
    // table; both are counted only on request.
    countByStatus =
        statement(
            """
            SELECT status, count(*) FROM {table}
            WHERE instance_key = ANY (:instance_keys)
              AND published_at IS NULL AND parked_at IS NULL
            GROUP BY status
            UNION ALL
            SELECT status, count(*) FROM {table}
            WHERE instance_key = ANY (:instance_keys) AND parked_at IS NOT NULL
            GROUP BY status
            UNION ALL
            SELECT status, count(*) FROM {table}
            WHERE :count_published AND instance_key = ANY (:instance_keys)
              AND published_at IS NOT NULL
            GROUP BY status
            UNION ALL
            SELECT 'PUBLISHED', count(*) FROM {published}
            WHERE :count_published AND instance_key = ANY (:instance_keys)
            HAVING count(*) > 0""");

    // The parked rows alone, by the index of parked rows (countByStatus's second branch): read
    // where counting the whole backlog fails, so that rows parked meanwhile still show.
    countParked =
        statement(
            """
            SELECT status, count(*) FROM {table}
            WHERE instance_key = ANY (:instance_keys) AND parked_at IS NOT NULL
            GROUP BY status""");

    // Rows in flight under another connector's live leases, among the rows awaiting delivery (read
    // as countByStatus's first branch reads them).
    leasedElsewhere =
        statement(
            """
            WITH clock AS (SELECT {now} AS now)
            SELECT count(*) FROM {table} o, clock
            WHERE o.instance_key = ANY (:instance_keys)
              AND o.published_at IS NULL AND o.parked_at IS NULL
              AND o.status = 'IN_FLIGHT' AND o.lease_expires_at > clock.now
              AND NOT {own owner(o)}""");

    // The oldest active row by insertion order: an index lookup, not a scan of the backlog. A row
    // whose created_at an application set to +/-infinity has no age (the subtraction fails, 22008
    // or 0A000 by version, neither retried, and task 0 failed at every start): the oldest one with
    // a time stands for the lag.
    lag =
        statement(
            """
            WITH clock AS (SELECT {now} AS now)
            SELECT GREATEST(0, EXTRACT(EPOCH FROM (clock.now - k.created_at)) * 1000)::bigint
            FROM clock, {own keys} CROSS JOIN LATERAL (
              SELECT o.seq, o.created_at FROM {table} o
              WHERE {own key(o)} AND {unsettled(o)} AND isfinite(o.created_at)
              ORDER BY o.instance_key, o.seq LIMIT 1) k
            ORDER BY k.seq LIMIT 1""");

    // Retention: entries of the published log older than the cutoff, then rows published before
    // schema version 9, still in the table, through the settled index. The log's entries are read
    // key by key along its (instance_key, published_at) index, oldest first, as the claims read the
    // due index ({own key(o)}), and the statement runs under CLAIM_PLAN: unordered, it left the
    // index to the planner, and a generic plan (a prepared statement's sixth run), guessing a third
    // of the log past the cutoff, read the log from its first page, so a retention that keeps up
    // (a few entries past the cutoff) read the whole log at every run. Counted by the SELECT, the
    // only result a statement behind planner settings returns (PostgresOutboxStore#planned).
    // Found by position (ctid), a TID scan, and judged again there: a log partitioned or given
    // child tables by the user's own tool holds a position once per partition, and the delete
    // took every partition's entry at each position, of any key and age.
    deletePublishedLog =
        statement(
            """
            WITH deleted AS (
              DELETE FROM {published}
              WHERE ctid = ANY (ARRAY(
                SELECT e.ctid FROM {own keys} CROSS JOIN LATERAL (
                  SELECT o.ctid FROM {published} o
                  WHERE {own key(o)} AND o.published_at < :published_before
                  ORDER BY o.instance_key, o.published_at LIMIT :limit) e
                LIMIT :limit))
                AND instance_key = ANY (:instance_keys) AND published_at < :published_before
              RETURNING 1)
            SELECT count(*) FROM deleted""");

    deletePublished =
        statement(
            """
            DELETE FROM {table}
            WHERE seq IN (
              SELECT seq FROM {table}
              WHERE instance_key = ANY (:instance_keys) AND status = 'PUBLISHED'
                AND published_at IS NOT NULL AND published_at < :published_before
              LIMIT :limit FOR UPDATE SKIP LOCKED)""");

    now = statement("SELECT {now}");

    // Whether the payload column is a bytea (or a domain over one), which a claim measures as it
    // is stored; any other type is measured as text. A table or column not found counts as bytea:
    // the claim reports it.
    readPayloadIsBytea =
        statement(
            """
            SELECT COALESCE((
              SELECT COALESCE(NULLIF(t.typbasetype, 0), t.oid) = 'bytea'::regtype
              FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
              WHERE a.attrelid = to_regclass(CAST(:table_name AS text))
                AND a.attname = CAST(:column_name AS text) AND NOT a.attisdropped), TRUE)""");
  }

  /** {@code {due(o)}}, {@code {due(p)}}: the row awaits delivery and any retry delay has passed. */
  private static String due(String row) {
    String due =
        "%1$s.published_at IS NULL AND %1$s.parked_at IS NULL"
            + " AND %1$s.status IN ('PENDING', 'AMBIGUOUS')"
            + " AND (%1$s.next_attempt_at IS NULL OR %1$s.next_attempt_at <= clock.now)";
    return due.formatted(row);
  }

  /**
   * A claim's one-key form (no quota, the limit per key) and its several-keys form, each with the
   * {@code variant}'s filters chosen after the quota came in, so that the quota reads as the claim.
   */
  private Claim claim(String template, UnaryOperator<String> variant) {
    return new Claim(
        statement(variant.apply(template.replace("{quota}", "").replace("{per key}", ":limit"))),
        statement(variant.apply(template.replace("{quota}", QUOTA).replace("{per key}", PER_KEY))));
  }

  /** A suspect's claim: its lease keeps the row flagged isolated. */
  private static String suspect(String template) {
    return template.replace(
        "{lease(candidate)}", LEASE.replace("{rows}", "candidate").replace("{isolation}", "TRUE"));
  }

  /** An abandoned-row statement without {@code {in order}}. */
  private static String unordered(String template) {
    return template.replace("{abandoned row}", ABANDONED_ROW.replace("{in order}", ""));
  }

  /** Fills the placeholders in (fragments first, as they hold placeholders of their own). */
  private NamedSql statement(String template) {
    String sql = template;
    for (Map.Entry<String, String> fragment : fragments.entrySet()) {
      sql = sql.replace(fragment.getKey(), fragment.getValue());
    }
    Matcher left = PLACEHOLDER.matcher(sql);
    if (left.find()) {
      throw new IllegalStateException("unknown placeholder " + left.group());
    }
    return NamedSql.parse(sql);
  }
}
