package dev.outboxrelay.store;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The relay's view of the outbox: claims rows under fenced leases and records their outcomes.
 *
 * <h2>The fencing rule</h2>
 *
 * <p>A claim sets a row's lease owner, increments its lease token and sets a bounded expiry, in one
 * atomic step. Every later write for that row — published, retry, failed, released, renewed — is
 * applied <em>only if the row is still IN_FLIGHT under the same owner and token</em>. A write that
 * matches nothing returns {@link Outcome#CLAIM_LOST} and changes nothing: the row was reclaimed
 * after its lease expired, requeued, or already resolved, and the caller must report it (it may
 * have produced a duplicate) and never count it as success. There is no unfenced write path.
 *
 * <p>An expired lease that nobody has reclaimed still belongs to its owner: its outcome applies.
 * Only a newer claim (which bumps the token) takes the row away.
 *
 * <h2>Ownership</h2>
 *
 * <p>Every method is bound to the caller's instance keys. Rows of another instance key, and legacy
 * rows without one, are never claimed, changed or counted. The writes after a claim carry no keys
 * of their own: they are fenced on the instance keys this store has claimed for, besides the lease,
 * so that a lease whose owner name collides with another instance's still cannot reach its rows
 * (such a write is {@link Outcome#CLAIM_LOST}).
 *
 * <h2>Attempts</h2>
 *
 * <p>A retry outcome charges one attempt; when it reaches the budget the row ends EXHAUSTED. A
 * claim that expires without any outcome (its worker died or hung) charges nothing by itself,
 * because an outage of a worker must never exhaust healthy rows. Such an abandoned row is only
 * reclaimed by {@link #claimAbandoned}, alone and in isolation; if an isolated claim is abandoned
 * again, the row itself is the likely cause and that charges an attempt. A row that keeps killing
 * its worker thus ends EXHAUSTED after the budget, while a batch lost in a crash is redelivered at
 * no cost.
 *
 * <p>A due row that has already spent the claim's budget (the budget was lowered after it was
 * charged) is not leased either: the claim itself moves it to EXHAUSTED ({@link
 * ReasonCodes#ATTEMPTS_BUDGET_LOWERED}), bumps its token and reports it in {@link
 * ClaimResult#exhausted()}, so that it neither waits for ever nor blocks its aggregate.
 *
 * <h2>Ordering</h2>
 *
 * <p>With {@link ClaimRequest#ordered()}, for rows of one instance key and aggregate id, first
 * deliveries follow insertion order: a row is claimable only when every earlier active row of its
 * aggregate is either held by the same owner or claimed in the same batch. A predecessor that is
 * waiting for a retry, held by another owner or abandoned blocks it; a FAILED or EXHAUSTED one no
 * longer does.
 *
 * <p>With an {@link AggregateAffinity}, an ordered claim takes rows of the aggregates in its share
 * only; the store decides which share an aggregate is in, always the same one. The ordering rule
 * above applies unchanged. {@link #claimAbandoned} ignores affinities.
 *
 * <h2>Time</h2>
 *
 * <p>Leases and due times are judged by one {@link RelayClock}: the database's clock in production.
 */
public interface OutboxStore extends AutoCloseable {
  /**
   * {@code pageRows} of a paged read, refused below 1: a page of none is "full" without moving on,
   * so its pass would never end, and PostgreSQL refuses a negative limit only once it runs.
   */
  static int requirePageRows(int pageRows) {
    if (pageRows < 1) {
      throw new IllegalArgumentException("pageRows must be at least 1, not " + pageRows);
    }
    return pageRows;
  }

  /**
   * Claims up to {@code request.limit()} due rows; never abandoned ones (see claimAbandoned). Due
   * rows over the budget count towards the limit and end EXHAUSTED instead.
   */
  ClaimResult claim(ClaimRequest request);

  /**
   * Claims at most one abandoned row (IN_FLIGHT with an expired lease) in isolation. The caller
   * must have nothing else in flight while it holds it, so that a crash can be blamed on this row.
   */
  ClaimResult claimAbandoned(ClaimRequest request);

  /**
   * Whether {@link #claimAbandoned} would find a row now, rows locked by a concurrent claim aside;
   * reads without locking or changing anything. A task asks this first, so that it settles what it
   * holds before an isolated claim only when there is an abandoned row to take.
   */
  boolean hasAbandoned(ClaimRequest request);

  /** Records Kafka's acknowledgement: PUBLISHED with coordinates; releases the lease. */
  Outcome markPublished(PublishedAck ack);

  /**
   * Batch form of {@link #markPublished(PublishedAck)}: one round trip for all acks. Returns one
   * outcome per ack, in the order of {@code acks}. Each ack is judged by its own lease, as if the
   * acks were written one after the other: of two acks of one row, only the one whose lease holds
   * the row is {@link Outcome#APPLIED}, and a repeated ack is {@link Outcome#CLAIM_LOST} (resolved
   * once only).
   */
  List<Outcome> markPublished(List<PublishedAck> acks);

  /**
   * {@link #markPublished(List)} for acks whose rows another session may hold locked (an operator's
   * open transaction): a locked row is skipped, not waited for, and its ack is {@link
   * Outcome#ROW_LOCKED}; the others are written as {@link #markPublished(List)} writes them. A
   * store without row locks writes them all.
   */
  default List<Outcome> markPublishedSkippingLocked(List<PublishedAck> acks) {
    return markPublished(acks);
  }

  /**
   * Of {@code acks} that a retried publish found lost, the message ids of those whose rows were
   * published under the ack's own seq and lease token and with its own Kafka coordinates (their
   * published-log entry, or the row itself where the store keeps it): by the earlier attempt of the
   * same write, which committed though its reply never arrived (the connection lost at COMMIT).
   * Another owner's publish has other coordinates, even under the same token (a claim lost in a
   * database crash is claimed again with the token it had). Empty where the store keeps no
   * published log ({@code retention.published.ms=0}): such acks stay lost claims.
   */
  Set<String> publishedUnderOwnLease(List<PublishedAck> acks);

  /**
   * Schedules another attempt: charges one attempt and sets AMBIGUOUS, due after {@code delay}, or
   * EXHAUSTED (returning {@link Outcome#EXHAUSTED}) when that was the last of {@code maxAttempts}.
   */
  Outcome retryLater(
      String messageId, Lease lease, String reasonCode, Duration delay, int maxAttempts);

  /** Marks the row FAILED (permanent, e.g. poison) with a reason code; no dead-letter record. */
  default Outcome markFailed(String messageId, Lease lease, String reasonCode) {
    return markFailed(messageId, lease, reasonCode, null);
  }

  /**
   * Marks the row FAILED (permanent, e.g. poison or dead-lettered) with a reason code, and where
   * Kafka confirmed its dead-letter record ({@code deadLetter}; null when there is none, or none
   * confirmed): the row's Kafka position, which tells an operator that a copy exists.
   */
  Outcome markFailed(String messageId, Lease lease, String reasonCode, KafkaCoordinates deadLetter);

  /**
   * Exactly-once: where Kafka committed the dead-letter records of rows parked before their batches
   * left, in one statement. Each is recorded only in a row of a claimed instance key still FAILED
   * as its park left it (under its token and its claim's epoch and batch, no position yet).
   * Returns, in the order of {@code copies}, whether each was recorded: false when its row changed
   * meanwhile (requeued, discarded) or holds a position already.
   */
  List<Boolean> recordDeadLetterCopies(List<DeadLetterCopy> copies);

  /**
   * Exactly-once: parks these rows of one claim FAILED, each with its reason, no Kafka position and
   * the claim's position kept, in one statement: all of them or, when it fails, none. Returns one
   * outcome per park, in the order of {@code parks}, each judged by its own lease as {@link
   * #markFailed(String, Lease, String)} is. The rows are distinct (a claim holds each once).
   */
  List<Outcome> park(List<ParkRequest> parks);

  /**
   * Exactly-once: of {@code parks} whose {@link #park} may have committed though its reply never
   * arrived (asked by its retry of the parks it found lost, or at a stop of all of them), the
   * message ids of those whose rows, of a claimed instance key, are FAILED with the park's reason
   * under its lease's token and the claim's own position ({@code epoch}, {@code batch}, which a
   * park keeps): parked by that attempt. The token alone could be another owner's: a claim lost in
   * a database crash or an asynchronous failover is claimed again under the token it had, but never
   * by the same instance's epoch.
   */
  Set<String> parkedUnderOwnLease(List<ParkRequest> parks);

  /** Gives back a claim that was never sent: due now, no attempt charged. */
  Outcome release(String messageId, Lease lease);

  /**
   * Extends the leases still held; returns the message ids whose claim was lost, and those of rows
   * another session holds locked, skipped rather than waited for. Leases that expired but were not
   * reclaimed are renewed too. Each message id at most once per call (a task's ledger holds one
   * lease per row): lost claims are reported by message id.
   */
  Renewal renew(List<HeldLease> leases, Duration leaseDuration);

  /** Counts rows of these instance keys by status (PUBLISHED only if asked) and the lag. */
  BacklogSnapshot inspect(Set<String> instanceKeys, boolean countPublished);

  /**
   * The lag alone: the age of the oldest row of these instance keys awaiting delivery, zero when
   * there is none. Reads each key's first such row, where {@link #inspect} counts them all.
   */
  Duration lag(Set<String> instanceKeys);

  /**
   * The parked rows alone (FAILED, EXHAUSTED) of these instance keys, by status; a status without
   * rows is absent. Reads the index of parked rows only, where {@link #inspect} counts every row
   * awaiting delivery too: read where that count fails, so that rows parked meanwhile still show.
   * (A row that a relay older than schema version 7 parked after the table's migration to it has no
   * {@code parked_at}: PostgreSQL's count leaves it out, where {@link #inspect} counts it.)
   */
  Map<MessageStatus, Long> countParked(Set<String> instanceKeys);

  /**
   * Rows of these instance keys in flight under a live lease whose owner does not begin with {@code
   * ownOwners} (how every task of the asking connector names itself; empty: every owner is its
   * own): another connector relays the same keys. Counts only, and reads each row awaiting
   * delivery, as {@link #inspect} does.
   */
  long countLeasedElsewhere(Set<String> instanceKeys, String ownOwners);

  /**
   * Deletes at most {@code limit} PUBLISHED rows of these keys published before the cutoff, all or
   * none: a call that throws deleted nothing (but for a connection lost at its commit), so the
   * count returned is every row it deleted.
   */
  int deletePublished(Set<String> instanceKeys, Instant publishedBefore, int limit);

  /**
   * Exactly-once: a new epoch for a starting task instance, larger than every epoch taken before it
   * (a database transaction id in production).
   */
  long newEpoch();

  /**
   * Exactly-once, one page of a recovery or sweep: settles the rows of the request's buckets leased
   * under a lower epoch — covered by a committed position: PUBLISHED ({@link
   * ReasonCodes#RECOVERED_FROM_OFFSETS}); otherwise released, due now, no attempt charged. Both
   * bump the token. Reads at most {@code pageRows} rows of {@code instanceKey} (one of the
   * request's) that await delivery, those after {@code afterSeq} in seq order, and settles those
   * among them, atomically; a caller that reads every page of every key, in seq order, settles
   * every such row in statements that each read one page, however large the backlog. A claim may
   * come between two pages: the ordered claim waits, as ever, for an earlier row of its aggregate
   * still leased.
   */
  RecoveryPage recover(RecoveryRequest request, String instanceKey, long afterSeq, int pageRows);

  /**
   * Whether no claim of {@code owner} is still ending on the server; does not wait. One whose reply
   * never arrived may still be committing (waiting for a synchronous standby), its rows not yet
   * visible, so that a release reading the table now would find none of them and leave them leased.
   * Asked before the first page of such a release ({@link #releaseUnheld}), which waits for a true.
   */
  boolean claimsEnded(String owner);

  /**
   * One page of the release of the rows leased to {@code owner} (one task instance: owners are
   * unique per start) that it does not hold, i.e. whose seq is not in {@code heldSeqs}: the rows of
   * a claim whose result never reached it. Reads at most {@code pageRows} rows of {@code
   * instanceKey} that await delivery, those after {@code afterSeq} in seq order, and releases those
   * among them; a caller that claims nothing until the last page has been read finds every such
   * row, however large the backlog, in statements that each read one page. Exactly once, only rows
   * of claims numbered after {@code handedThroughBatch}, the last batch handed to Connect: a row of
   * a batch handed over that is leased and not held had its PUBLISHED write lost by the database
   * after Kafka committed it (a failover, or the server's {@code synchronous_commit=off}), and only
   * recovery, which reads the committed offsets, may settle it. At-least-once rows carry no batch
   * and are all candidates. Due now, no attempt charged, token bumped; idempotent. For the rare
   * claim whose connection was lost at COMMIT, not for every claim.
   */
  UnheldPage releaseUnheld(
      String instanceKey,
      String owner,
      Collection<Long> heldSeqs,
      long handedThroughBatch,
      long afterSeq,
      int pageRows);

  /**
   * Gives back rows of a claim just made that the caller will not hand to Connect (rows past its
   * in-flight byte budget), as {@link #releaseUnheld} gives rows back: due now, no attempt charged,
   * token bumped. Found by seq, each only while it still holds its message id and is in flight
   * under that lease (owner and token) on one of the claims' instance keys. Returns the message ids
   * given back, sorted. Unlike {@link #releaseUnheld} it reads these rows only, not the backlog.
   */
  List<String> giveBack(List<HeldLease> rows);

  /**
   * Ends now these leases, each of a row still in flight under it (found by seq, holding its
   * message id, on one of the claims' instance keys) whose lease has not run out: a stopping task's
   * records that Kafka can no longer acknowledge. Nothing else changes, the token included: the
   * rows are abandoned rows at once, reclaimed one by one in isolation as after a crash (one of
   * them may have failed the task). A row another session holds locked is skipped, not waited for
   * (its lease runs out instead). Returns the message ids ended, sorted, and those skipped;
   * idempotent. Reads these rows only, not the backlog (a lease owner is in no index). Each row at
   * most once in {@code leases} (the stores answer a repeated one differently).
   */
  EndedLeases expireLeases(List<HeldLease> leases);

  /** "Now" by the store's clock (the database's in production). */
  Instant now();

  /**
   * Closes the connections the store holds idle, and each busy one when it is returned, without
   * refilling: a stopping task's pool shrinks to the statements still running (task 0's
   * maintenance, the stop's question) while its successor opens its own. A connection asked for
   * afterwards is still opened. None by default: a store without connections.
   */
  default void releaseIdleConnections() {}

  @Override
  void close();
}
