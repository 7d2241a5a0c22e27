package dev.outboxrelay.store.postgres;

/**
 * Every statement the PostgreSQL store runs, in one place. The table name is a validated, quoted
 * identifier; everything else is a bind parameter.
 *
 * <p>Each statement judges time by {@code clock.now}: the bound instant when a test clock is in
 * use, otherwise the database's own statement timestamp.
 */
final class OutboxSql {
  /** The bound test instant if any, else the database's statement timestamp. */
  private static final String NOW = "COALESCE(CAST(? AS timestamptz), statement_timestamp())";

  private static final String CLOCK = "clock AS (SELECT " + NOW + " AS now)";

  /**
   * The clock of a claim, which also commits the claim without waiting for its WAL flush
   * (transaction-local, so pooled connections keep the server's setting). Safe because a claim is
   * only a lease: lost in a database crash, its row is simply claimable again, the holder's outcome
   * write is fenced off or reported as a lost claim, and an outcome made durable later flushes the
   * claim's WAL before its own. A volatile function keeps this CTE evaluated and not inlined. It
   * also carries the attempt budget.
   */
  private static final String CLAIM_CLOCK =
      "clock AS (SELECT "
          + NOW
          + " AS now, CAST(? AS integer) AS budget,"
          + " set_config('synchronous_commit', 'off', true) AS commit_mode)";

  private static final String ACTIVE = "('PENDING', 'AMBIGUOUS', 'IN_FLIGHT')";

  /**
   * Columns a claim returns, prefixed by the UPDATE's alias. Whether the row's deadline has passed
   * is judged here, by the claim's clock, not by the worker that maps it.
   */
  private static final String CLAIMED_COLUMNS =
      "o.seq, o.message_id, o.instance_key, o.aggregate_type, o.aggregate_id, o.event_type,"
          + " o.topic, o.payload, o.headers::text AS headers, o.correlation_id, o.created_at,"
          + " o.deliver_before, COALESCE(o.deliver_before <= clock.now, FALSE) AS deadline_expired,"
          + " o.attempts, o.lease_owner, o.lease_token, o.lease_expires_at,"
          + " o.status, o.last_failure_code";

  final String insert;
  final String claimOrdered;
  final String claimOrderedWithAffinity;
  final String claimUnordered;
  final String claimAbandonedOrdered;
  final String claimAbandonedUnordered;
  final String markPublished;
  final String markPublishedBatch;
  final String retryLater;
  final String markFailed;
  final String release;
  final String renew;
  final String countByStatus;
  final String lag;
  final String deletePublished;
  final String now;

  OutboxSql(OutboxTable table) {
    String t = table.qualified();

    insert =
        "INSERT INTO "
            + t
            + " (message_id, instance_key, aggregate_type, aggregate_id, event_type, topic,"
            + " payload, headers, correlation_id, deliver_before)"
            + " VALUES (?, ?, ?, ?, ?, ?, ?, CAST(? AS jsonb), ?, ?)"
            + " ON CONFLICT (message_id) DO NOTHING";

    // Parameters of both claims: now, maxAttempts, keys[], [ordered: owner,] limit, owner,
    // leaseMillis. A due row within the budget is leased; one at or over it (max.attempts was
    // lowered after it was charged) is parked EXHAUSTED by the same claim, so that it neither
    // waits for ever nor blocks its aggregate, and the claimer reports it.
    String due =
        "%1$s.status IN ('PENDING', 'AMBIGUOUS')"
            + " AND (%1$s.next_attempt_at IS NULL OR %1$s.next_attempt_at <= clock.now)";
    String overBudget = "o.attempts >= clock.budget";
    String sameAggregateBefore =
        "p.instance_key = %1$s.instance_key AND p.aggregate_id = %1$s.aggregate_id"
            + " AND p.seq < %1$s.seq";
    // A predecessor blocks unless it is due (then it must be in this very batch, see below) or
    // held by this owner under a live lease.
    String blockingPredecessor =
        "SELECT 1 FROM "
            + t
            + " p WHERE "
            + sameAggregateBefore.formatted("o")
            + " AND p.status IN "
            + ACTIVE
            + " AND NOT ("
            + due.formatted("p")
            + ")"
            + " AND NOT (p.status = 'IN_FLIGHT' AND p.lease_owner = ?"
            + " AND p.lease_expires_at > clock.now)"
            // OFFSET 0 keeps this a probe of the aggregate index per candidate: pulled up into an
            // anti-join, it was planned as a nested loop over every in-flight row (a claim of 500
            // then cost 500 x in-flight comparisons and slowed with each pipelined batch).
            + " OFFSET 0";
    String claimUpdate =
        " UPDATE "
            + t
            + " o SET status = CASE WHEN "
            + overBudget
            + " THEN 'EXHAUSTED' ELSE 'IN_FLIGHT' END,"
            + " lease_owner = CASE WHEN "
            + overBudget
            + " THEN NULL ELSE ? END,"
            + " lease_token = o.lease_token + 1,"
            + " lease_expires_at = CASE WHEN "
            + overBudget
            + " THEN NULL ELSE clock.now + (? * INTERVAL '1 millisecond') END,"
            + " last_failure_code = CASE WHEN "
            + overBudget
            + " THEN 'ATTEMPTS_BUDGET_LOWERED' ELSE o.last_failure_code END,"
            + " isolated = FALSE"
            + " FROM %s c, clock WHERE o.seq = c.seq RETURNING "
            + CLAIMED_COLUMNS;

    claimOrdered = orderedClaim(t, due, blockingPredecessor, sameAggregateBefore, "", claimUpdate);
    // Parameters as claimOrdered, plus slots, slots - slot, slots after keys[].
    // The mask keeps the hash non-negative; hashtext is stable for a given text, so an aggregate
    // keeps its share. "(h % n + n - slot) % n < 1" means "h % n = slot", written as an inequality
    // because PostgreSQL estimates an equality on an expression at 0.5 % of the rows: it then
    // sorted the whole share instead of reading the seq index up to the limit.
    claimOrderedWithAffinity =
        orderedClaim(
            t,
            due,
            blockingPredecessor,
            sameAggregateBefore,
            " AND ((hashtext(o.aggregate_id) & 2147483647) % CAST(? AS integer) + CAST(? AS integer))"
                + " % CAST(? AS integer) < 1",
            claimUpdate);

    claimUnordered =
        "WITH "
            + CLAIM_CLOCK
            + ", candidate AS (SELECT o.seq FROM "
            + t
            + " o, clock WHERE o.instance_key = ANY (?) AND "
            + due.formatted("o")
            + " ORDER BY o.seq LIMIT ? FOR UPDATE OF o SKIP LOCKED)"
            + claimUpdate.formatted("candidate");

    // Parameters: now, keys[], [ordered: owner,] maxAttempts, maxAttempts, owner, leaseMillis,
    // maxAttempts. An abandoned row is reclaimed alone and flagged isolated; abandoned again while
    // isolated, it is charged an attempt, and past the budget it ends EXHAUSTED (token still bumped
    // so the vanished owner stays fenced off).
    String abandoned = "o.status = 'IN_FLIGHT' AND o.lease_expires_at <= clock.now";
    String anyOtherActivePredecessor =
        "SELECT 1 FROM "
            + t
            + " p WHERE "
            + sameAggregateBefore.formatted("o")
            + " AND p.status IN "
            + ACTIVE
            + " AND NOT (p.status = 'IN_FLIGHT' AND p.lease_owner = ?"
            + " AND p.lease_expires_at > clock.now)";
    String exhaustsNow = "(o.isolated AND o.attempts + 1 >= ?)";
    String abandonedUpdate =
        " UPDATE "
            + t
            + " o SET"
            + " status = CASE WHEN "
            + exhaustsNow
            + " THEN 'EXHAUSTED' ELSE 'IN_FLIGHT' END,"
            + " attempts = o.attempts + CASE WHEN o.isolated THEN 1 ELSE 0 END,"
            + " abandoned_claims = o.abandoned_claims + 1,"
            + " lease_token = o.lease_token + 1,"
            + " lease_owner = CASE WHEN "
            + exhaustsNow
            + " THEN NULL ELSE ? END,"
            + " lease_expires_at = CASE WHEN o.isolated AND o.attempts + 1 >= ? THEN NULL"
            + " ELSE clock.now + (? * INTERVAL '1 millisecond') END,"
            + " last_failure_code = CASE WHEN o.isolated AND o.attempts + 1 >= ?"
            + " THEN 'ABANDONED_IN_ISOLATION' ELSE o.last_failure_code END,"
            + " isolated = TRUE"
            + " FROM target c, clock WHERE o.seq = c.seq RETURNING "
            + CLAIMED_COLUMNS;
    claimAbandonedOrdered =
        "WITH "
            + CLOCK
            + ", target AS (SELECT o.seq FROM "
            + t
            + " o, clock WHERE o.instance_key = ANY (?) AND "
            + abandoned
            + " AND NOT EXISTS ("
            + anyOtherActivePredecessor
            + ") ORDER BY o.seq LIMIT 1 FOR UPDATE OF o SKIP LOCKED)"
            + abandonedUpdate;
    claimAbandonedUnordered =
        "WITH "
            + CLOCK
            + ", target AS (SELECT o.seq FROM "
            + t
            + " o, clock WHERE o.instance_key = ANY (?) AND "
            + abandoned
            + " ORDER BY o.seq LIMIT 1 FOR UPDATE OF o SKIP LOCKED)"
            + abandonedUpdate;

    // Every write after a claim: the lease, and the instance keys the writer claims for.
    String fenced =
        " AND status = 'IN_FLIGHT' AND lease_owner = ? AND lease_token = ?"
            + " AND instance_key = ANY (?)";
    String releaseLease = " lease_owner = NULL, lease_expires_at = NULL, isolated = FALSE";

    markPublished =
        "WITH "
            + CLOCK
            + " UPDATE "
            + t
            + " SET status = 'PUBLISHED', published_at = clock.now, kafka_topic = ?,"
            + " kafka_partition = ?, kafka_offset = ?, next_attempt_at = NULL,"
            + releaseLease
            + " FROM clock WHERE message_id = ?"
            + fenced;

    // Parameters: now, message_id[], owner[], token[], topic[], partition[], offset[], keys[].
    // Returns the position of each applied ack.
    markPublishedBatch =
        "WITH "
            + CLOCK
            + " UPDATE "
            + t
            + " o SET status = 'PUBLISHED', published_at = clock.now, kafka_topic = a.topic,"
            + " kafka_partition = a.kafka_partition, kafka_offset = a.kafka_offset,"
            + " next_attempt_at = NULL, lease_owner = NULL, lease_expires_at = NULL,"
            + " isolated = FALSE"
            + " FROM clock, unnest(CAST(? AS text[]), CAST(? AS text[]), CAST(? AS bigint[]),"
            + " CAST(? AS text[]), CAST(? AS integer[]), CAST(? AS bigint[]))"
            + " WITH ORDINALITY AS a(message_id, owner, token, topic, kafka_partition,"
            + " kafka_offset, n)"
            + " WHERE o.message_id = a.message_id AND o.status = 'IN_FLIGHT'"
            + " AND o.lease_owner = a.owner AND o.lease_token = a.token"
            + " AND o.instance_key = ANY (?)"
            + " RETURNING a.n";

    // Parameters: now, maxAttempts, reason, delayMillis, messageId, owner, token, keys[].
    retryLater =
        "WITH "
            + CLOCK
            + " UPDATE "
            + t
            + " SET status = CASE WHEN attempts + 1 >= ? THEN 'EXHAUSTED' ELSE 'AMBIGUOUS' END,"
            + " attempts = attempts + 1, last_failure_code = ?,"
            + " next_attempt_at = clock.now + (? * INTERVAL '1 millisecond'),"
            + releaseLease
            + " FROM clock WHERE message_id = ?"
            + fenced
            + " RETURNING status";

    markFailed =
        "UPDATE "
            + t
            + " SET status = 'FAILED', last_failure_code = ?, next_attempt_at = NULL,"
            + releaseLease
            + " WHERE message_id = ?"
            + fenced;

    release =
        "UPDATE "
            + t
            + " SET status = CASE WHEN attempts > 0 THEN 'AMBIGUOUS' ELSE 'PENDING' END,"
            + " next_attempt_at = NULL,"
            + releaseLease
            + " WHERE message_id = ?"
            + fenced;

    // Parameters: now, leaseMillis, message_id[], owner[], token[], keys[].
    renew =
        "WITH "
            + CLOCK
            + " UPDATE "
            + t
            + " o SET lease_expires_at = clock.now + (? * INTERVAL '1 millisecond')"
            + " FROM clock, unnest(CAST(? AS text[]), CAST(? AS text[]), CAST(? AS bigint[]))"
            + " AS h(message_id, owner, token)"
            + " WHERE o.message_id = h.message_id AND o.status = 'IN_FLIGHT'"
            + " AND o.lease_owner = h.owner AND o.lease_token = h.token"
            + " AND o.instance_key = ANY (?)"
            + " RETURNING o.message_id";

    // Parameters: keys[], keys[], includePublished, keys[]. One branch per partial index, so the
    // backlog figures cost O(active + parked rows), not a scan of every retained PUBLISHED row.
    countByStatus =
        "SELECT status, count(*) FROM "
            + t
            + " WHERE instance_key = ANY (?) AND status IN "
            + ACTIVE
            + " GROUP BY status UNION ALL SELECT status, count(*) FROM "
            + t
            + " WHERE instance_key = ANY (?) AND status IN ('FAILED', 'EXHAUSTED') GROUP BY status"
            + " UNION ALL SELECT status, count(*) FROM "
            + t
            + " WHERE ? AND instance_key = ANY (?) AND status = 'PUBLISHED' GROUP BY status";

    // Parameters: now, keys[]. The oldest active row by insertion order: an index lookup, not a
    // scan of the backlog.
    lag =
        "WITH "
            + CLOCK
            + " SELECT GREATEST(0, EXTRACT(EPOCH FROM (clock.now - o.created_at)) * 1000)::bigint"
            + " FROM "
            + t
            + " o, clock WHERE o.instance_key = ANY (?) AND o.status IN "
            + ACTIVE
            + " ORDER BY o.seq LIMIT 1";

    // Parameters: keys[], cutoff, limit.
    deletePublished =
        "DELETE FROM "
            + t
            + " WHERE seq IN (SELECT seq FROM "
            + t
            + " WHERE instance_key = ANY (?) AND status = 'PUBLISHED' AND published_at < ?"
            + " ORDER BY published_at LIMIT ? FOR UPDATE SKIP LOCKED)";

    now = "SELECT " + NOW;
  }

  private static String orderedClaim(
      String t,
      String due,
      String blockingPredecessor,
      String sameAggregateBefore,
      String affinity,
      String claimUpdate) {
    return "WITH "
        + CLAIM_CLOCK
        + ", candidate AS (SELECT o.seq, o.instance_key, o.aggregate_id FROM "
        + t
        + " o, clock WHERE o.instance_key = ANY (?) AND "
        + due.formatted("o")
        + affinity
        + " AND NOT EXISTS ("
        + blockingPredecessor
        + ") ORDER BY o.seq LIMIT ? FOR UPDATE OF o SKIP LOCKED)"
        // A due predecessor that is not in our batch is locked by a concurrent claimer (we
        // skipped it): its successors must wait for that claim to settle.
        + ", claimable AS (SELECT c.seq FROM candidate c, clock WHERE NOT EXISTS (SELECT 1 FROM "
        + t
        + " p WHERE "
        + sameAggregateBefore.formatted("c")
        + " AND "
        + due.formatted("p")
        + " AND NOT EXISTS (SELECT 1 FROM candidate c2 WHERE c2.seq = p.seq)"
        // OFFSET 0 keeps this a per-candidate probe of the aggregate index: as a join,
        // PostgreSQL may hash the whole backlog on every claim.
        + " OFFSET 0))"
        + claimUpdate.formatted("claimable");
  }
}
