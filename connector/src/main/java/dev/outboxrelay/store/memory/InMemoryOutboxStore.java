package dev.outboxrelay.store.memory;

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
import dev.outboxrelay.writer.EnqueueResult;
import dev.outboxrelay.writer.InstanceKeys;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.Printable;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * An in-memory store with exactly the PostgreSQL store's semantics (the shared contract test holds
 * both to it). Every operation runs under one lock, which plays the part of the database's atomic
 * statement. For tests and simulations, not for production.
 *
 * <p>It models the PostgreSQL store with its published log ({@code retention.published.ms} other
 * than 0): published rows stay countable, a publish whose reply was lost is read back, and an id
 * once published is a duplicate. Without the log, PostgreSQL does none of these; only its own tests
 * cover that mode. Which key a retention batch over several keys starts with is left open by the
 * contract: this store deletes the oldest entries over all keys.
 *
 * <p>Two differences the contract leaves open, on purpose: a row's creation time is this store's
 * clock when it is enqueued (the test clock where one is set, so that a test moving it moves rows'
 * ages and record timestamps with it), where PostgreSQL's is the inserting transaction's own time;
 * and durations are exact here, where PostgreSQL's statements take whole milliseconds (the
 * connector's settings are whole milliseconds).
 */
public final class InMemoryOutboxStore implements OutboxStore {
  private final RelayClock clock;
  private final TreeMap<Long, Row> rowsBySeq = new TreeMap<>();
  private final Map<String, Row> rowsById = new HashMap<>();
  private long nextSeq = 1;
  private long lastEpoch;

  /** The instance keys this store has claimed for: writes after a claim are fenced on them too. */
  private final Set<String> claimedKeys = new HashSet<>();

  public InMemoryOutboxStore(RelayClock clock) {
    this.clock = clock;
  }

  /**
   * Appends a message owned by {@code instanceKey}; the in-memory twin of the writer.
   *
   * @throws IdTakenException if a row of another instance key, or a legacy row, has its message id
   *     (the writer's {@code MessageIdTakenException})
   */
  public synchronized EnqueueResult enqueue(String instanceKey, OutboxMessage message) {
    InstanceKeys.requireValid(instanceKey);
    Row existing = rowsById.get(message.messageId());
    if (existing != null && !instanceKey.equals(existing.instanceKey)) {
      throw new IdTakenException(message.messageId());
    }
    return insert(instanceKey, message);
  }

  /** Inserts a legacy row without an instance key, as rows written before ownership existed. */
  public synchronized EnqueueResult insertLegacy(OutboxMessage message) {
    return insert(null, message);
  }

  /** The message id is used by a row of another instance key, or a legacy row: nothing written. */
  public static final class IdTakenException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    IdTakenException(String messageId) {
      super("message id " + messageId + " is used by a row of another instance key");
    }
  }

  private EnqueueResult insert(String instanceKey, OutboxMessage message) {
    if (rowsById.containsKey(message.messageId())) {
      return EnqueueResult.DUPLICATE;
    }
    Row row = new Row(nextSeq++, message, instanceKey, now());
    rowsBySeq.put(row.seq, row);
    rowsById.put(row.messageId, row);
    return EnqueueResult.ENQUEUED;
  }

  /** A copy of one row's relay state, for tests and operators. */
  public synchronized Optional<RowState> find(String messageId) {
    return Optional.ofNullable(rowsById.get(messageId)).map(Row::state);
  }

  /**
   * For tests: holds a row under {@code lease} without a claim through this store, as another
   * instance's claim (or an older relay's, for a legacy row) with a colliding owner would.
   */
  synchronized void holdElsewhere(String messageId, Lease lease, Instant expiresAt) {
    Row row = rowsById.get(messageId);
    row.status = MessageStatus.IN_FLIGHT;
    row.leaseOwner = lease.owner();
    row.leaseToken = lease.token();
    row.leaseExpiresAt = expiresAt;
  }

  /**
   * For tests: parks a row FAILED under lease token {@code token} at claim position ({@code epoch},
   * {@code batch}) without a claim through this store, as another connector's task would.
   */
  synchronized void parkElsewhere(
      String messageId, long token, long epoch, long batch, String reasonCode) {
    Row row = rowsById.get(messageId);
    row.status = MessageStatus.FAILED;
    row.leaseOwner = null;
    row.leaseExpiresAt = null;
    row.leaseToken = token;
    row.leaseEpoch = epoch;
    row.claimBatch = batch;
    row.lastFailureCode = reasonCode;
    row.nextAttemptAt = null;
  }

  /** For tests: sets the row's creation time, as rows written long ago have it. */
  synchronized void backdate(String messageId, Instant createdAt) {
    rowsById.get(messageId).createdAt = createdAt;
  }

  @Override
  public synchronized ClaimResult claim(ClaimRequest request) {
    claimedKeys.addAll(request.instanceKeys());
    Instant now = now();
    if (request.exactlyOnce() != null && request.exactlyOnce().isolates()) {
      return claimSuspect(request, now);
    }
    Set<String> keys = request.instanceKeys();
    List<Row> batch = new ArrayList<>();
    long readThrough = 0; // OutboxSql's {within room}: the candidates' bytes so far, in seq order
    for (Row row : rowsBySeq.values()) {
      if (batch.size() == request.limit()) {
        break;
      }
      if (!row.ownedBy(keys) || !row.isDue(now)) {
        continue;
      }
      if (request.affinity() != null && !inShare(row, request.affinity())) {
        continue;
      }
      ExactlyOnceClaim exactlyOnce = request.exactlyOnce();
      if (exactlyOnce != null && !inBuckets(row, exactlyOnce.share())) {
        continue;
      }
      // OutboxSql's ordered claim, in two steps as it takes them. A window of candidates: due rows
      // whose aggregate's first active row this owner does not hold is none, or due itself.
      if (request.ordered()
          && headNotHeld(row, request.owner(), now).filter(h -> !h.isDue(now)).isPresent()) {
        continue;
      }
      long bytes = readBytes(row, request.payloadReadLimit());
      readThrough += bytes;
      if (readThrough != bytes && readThrough > request.readRoom()) {
        break; // past the read room: this row and every later one stay for the next claim
      }
      batch.add(row);
    }
    if (request.ordered()) {
      // Then the candidates an earlier row still blocks: one not due (behind the head), or a due
      // one outside the window. They leave the batch short; nothing takes their place.
      Set<Row> window = Set.copyOf(batch);
      batch.removeIf(
          row ->
              headNotHeld(row, request.owner(), now).isPresent()
                  && hasPredecessor(
                      row,
                      p ->
                          !p.isHeldBy(request.owner(), now)
                              && !(p.isDue(now) && window.contains(p))));
    }
    List<ClaimedMessage> claimed = new ArrayList<>();
    List<ExhaustedMessage> exhausted = new ArrayList<>();
    for (Row row : batch) {
      row.isolated = false;
      // OutboxSql's LEASE writes the claim's position on every row it updates, a parked one too.
      ExactlyOnceClaim exactlyOnce = request.exactlyOnce();
      row.leaseEpoch = exactlyOnce == null ? null : exactlyOnce.epoch();
      row.claimBatch = exactlyOnce == null ? null : exactlyOnce.batch();
      if (row.attempts >= request.maxAttempts()) {
        // Charged under a higher budget than today's: parked, so it neither waits for ever nor
        // blocks its aggregate.
        row.park(ReasonCodes.ATTEMPTS_BUDGET_LOWERED);
        exhausted.add(row.exhausted());
        continue;
      }
      row.lease(request.owner(), now.plus(request.leaseDuration()));
      claimed.add(row.claimed(now, request.payloadReadLimit(), request.headersReadLimit()));
    }
    return new ClaimResult(claimed, exhausted);
  }

  /**
   * The bytes a claim counts of a candidate against its read room: its payload as read (none over
   * the read limit), and its headers' text.
   */
  private static long readBytes(Row row, int payloadReadLimit) {
    long payload =
        row.payload == null || row.payload.length > payloadReadLimit ? 0 : row.payload.length;
    return payload
        + (row.headersJson == null ? 0 : row.headersJson.getBytes(StandardCharsets.UTF_8).length);
  }

  /** One suspect alone, kept flagged isolated (OutboxSql's CLAIM_SUSPECT). */
  private ClaimResult claimSuspect(ClaimRequest request, Instant now) {
    ExactlyOnceClaim exactlyOnce = request.exactlyOnce();
    for (long seq : exactlyOnce.suspects().stream().sorted().toList()) {
      Row row = rowsBySeq.get(seq);
      if (row == null
          || !row.ownedBy(request.instanceKeys())
          || !row.isDue(now)
          || !row.isolated
          || (request.ordered() && hasPredecessor(row, p -> !p.isHeldBy(request.owner(), now)))) {
        continue;
      }
      row.leaseEpoch = exactlyOnce.epoch();
      row.claimBatch = exactlyOnce.batch();
      if (row.attempts >= request.maxAttempts()) {
        row.park(ReasonCodes.ATTEMPTS_BUDGET_LOWERED);
        return new ClaimResult(List.of(), List.of(row.exhausted()));
      }
      row.lease(request.owner(), now.plus(request.leaseDuration()));
      return new ClaimResult(
          List.of(row.claimed(now, request.payloadReadLimit(), request.headersReadLimit())),
          List.of());
    }
    return ClaimResult.EMPTY;
  }

  @Override
  public synchronized long newEpoch() {
    return ++lastEpoch;
  }

  @Override
  public synchronized RecoveryPage recover(
      RecoveryRequest request, String instanceKey, long afterSeq, int pageRows) {
    OutboxStore.requirePageRows(pageRows);
    if (!request.instanceKeys().contains(instanceKey)) {
      throw new IllegalArgumentException(
          "instance key '" + Printable.escape(instanceKey) + "' is not one of the recovery's keys");
    }
    claimedKeys.addAll(request.instanceKeys());
    Instant now = now();
    List<String> published = new ArrayList<>();
    List<String> released = new ArrayList<>();
    List<String> laterEpoch = new ArrayList<>();
    List<String> exhausted = new ArrayList<>();
    List<Long> suspects = new ArrayList<>();
    List<String> foreign = new ArrayList<>();
    List<String> foreignReleased = new ArrayList<>();
    List<Row> page = page(instanceKey, afterSeq, pageRows);
    for (Row row : page) {
      if (row.status != MessageStatus.IN_FLIGHT || !inBuckets(row, request.share())) {
        continue;
      }
      // Another connector's lease (on the same key): its epoch says nothing of this one's; live,
      // it is not this recovery's to end, expired it is released whatever its epoch.
      boolean own = row.leaseOwner == null || request.isOwnOwner(row.leaseOwner);
      if (!own && !row.isAbandoned(now)) {
        foreign.add(row.messageId);
        continue;
      }
      if (own
          && row.leaseEpoch != null
          && row.leaseEpoch > request.epoch()
          && row.isAbandoned(now)) {
        laterEpoch.add(row.messageId);
      }
      if (own
          && ((row.leaseEpoch != null && row.leaseEpoch >= request.epoch())
              || (request.expiredOnly() && !row.isAbandoned(now)))) {
        continue;
      }
      boolean suspect = false;
      if (own && isCovered(row, request)) { // another connector's epochs are not this one's
        row.status = MessageStatus.PUBLISHED;
        row.publishedAt = now;
        row.kafka = null;
        row.lastFailureCode = ReasonCodes.RECOVERED_FROM_OFFSETS;
        published.add(row.messageId);
      } else {
        // Released while abandoned before, a suspect: claimed alone next; charged if it was alone.
        boolean charged = row.isolated;
        suspect = row.abandonedClaims > 0;
        row.abandonedClaims++;
        row.kafka = null;
        if (charged) {
          row.attempts++;
        }
        if (charged && row.attempts >= request.maxAttempts()) {
          row.park(ReasonCodes.ABANDONED_IN_ISOLATION); // ends the lease, bumps the token
          exhausted.add(row.messageId);
        } else {
          row.status = row.attempts > 0 ? MessageStatus.AMBIGUOUS : MessageStatus.PENDING;
          released.add(row.messageId);
          if (!own) {
            foreignReleased.add(row.messageId);
          }
          if (suspect) {
            suspects.add(row.seq);
          }
        }
      }
      if (row.status != MessageStatus.EXHAUSTED) {
        row.releaseLease();
        row.leaseToken++;
      }
      row.isolated = suspect;
      row.nextAttemptAt = null;
      row.leaseEpoch = null;
      row.claimBatch = null;
    }
    return new RecoveryPage(
        new Recovery(
            published, released, laterEpoch, exhausted, suspects, foreign, foreignReleased),
        page.isEmpty() ? afterSeq : page.get(page.size() - 1).seq,
        page.size() == pageRows);
  }

  /**
   * A page of {@code instanceKey}'s rows awaiting delivery after {@code afterSeq}, in seq order, at
   * most {@code pageRows}: what the PostgreSQL store reads along its due index.
   */
  private List<Row> page(String instanceKey, long afterSeq, int pageRows) {
    List<Row> page = new ArrayList<>();
    for (Row row : rowsBySeq.tailMap(afterSeq, false).values()) {
      if (page.size() == pageRows) {
        break;
      }
      if (instanceKey.equals(row.instanceKey) && row.status.isActive()) {
        page.add(row);
      }
    }
    return page;
  }

  @Override
  public synchronized EndedLeases expireLeases(List<HeldLease> leases) {
    Instant now = now();
    List<String> expired = new ArrayList<>();
    for (HeldLease held : leases) {
      Row row = fenced(held.messageId(), held.lease());
      if (row != null && row.seq == held.seq() && row.leaseExpiresAt.isAfter(now)) {
        row.leaseExpiresAt = now;
        expired.add(row.messageId);
      }
    }
    expired.sort(null);
    return EndedLeases.ended(expired);
  }

  /** A claim here is one synchronized call: none is still ending once it returned or threw. */
  @Override
  public boolean claimsEnded(String owner) {
    return true;
  }

  @Override
  public synchronized UnheldPage releaseUnheld(
      String instanceKey,
      String owner,
      Collection<Long> heldSeqs,
      long handedThroughBatch,
      long afterSeq,
      int pageRows) {
    InstanceKeys.requireValid(Set.of(instanceKey));
    OutboxStore.requirePageRows(pageRows);
    Set<Long> held = Set.copyOf(heldSeqs);
    List<String> released = new ArrayList<>();
    List<Row> page = page(instanceKey, afterSeq, pageRows);
    for (Row row : page) {
      if (row.status == MessageStatus.IN_FLIGHT
          && owner.equals(row.leaseOwner)
          && !held.contains(row.seq)
          && (row.claimBatch == null || row.claimBatch > handedThroughBatch)) {
        giveBack(row);
        released.add(row.messageId);
      }
    }
    released.sort(null);
    return new UnheldPage(
        released,
        page.isEmpty() ? afterSeq : page.get(page.size() - 1).seq,
        page.size() == pageRows);
  }

  @Override
  public synchronized List<String> giveBack(List<HeldLease> rows) {
    List<String> given = new ArrayList<>();
    for (HeldLease held : rows) {
      Row row = fenced(held.messageId(), held.lease());
      if (row != null && row.seq == held.seq()) {
        giveBack(row);
        given.add(row.messageId);
      }
    }
    given.sort(null);
    return given;
  }

  /** A claim's row handed back unsent: due now, no attempt charged, the lost lease fenced off. */
  private static void giveBack(Row row) {
    boolean suspect = row.isolated && row.leaseEpoch != null; // OutboxSql's GIVE_BACK
    row.status = row.attempts > 0 ? MessageStatus.AMBIGUOUS : MessageStatus.PENDING;
    row.nextAttemptAt = null;
    row.releaseLease();
    row.isolated = suspect;
    row.leaseToken++;
    row.leaseEpoch = null;
    row.claimBatch = null;
  }

  private static boolean isCovered(Row row, RecoveryRequest request) {
    if (row.leaseEpoch == null || row.claimBatch == null) {
      return false;
    }
    int bucket = request.share().bucketOf(row.aggregateHash());
    for (CommittedPosition p : request.committed()) {
      if (p.instanceKey().equals(row.instanceKey)
          && p.bucket() == bucket
          && p.covers(row.leaseEpoch, row.claimBatch, row.seq)) {
        return true;
      }
    }
    return false;
  }

  private static boolean inBuckets(Row row, BucketShare share) {
    return share.owns(share.bucketOf(row.aggregateHash()));
  }

  @Override
  public synchronized boolean hasAbandoned(ClaimRequest request) {
    Instant now = now();
    return rowsBySeq.values().stream().anyMatch(row -> isReclaimable(row, request, now));
  }

  /** An abandoned row of the request's keys that {@link #claimAbandoned} may take now. */
  private boolean isReclaimable(Row row, ClaimRequest request, Instant now) {
    return row.ownedBy(request.instanceKeys())
        && row.isAbandoned(now)
        && !(request.ordered()
            && hasPredecessor(row, p -> p.status.isActive() && !p.isHeldBy(request.owner(), now)));
  }

  @Override
  public synchronized ClaimResult claimAbandoned(ClaimRequest request) {
    claimedKeys.addAll(request.instanceKeys());
    Instant now = now();
    for (Row row : rowsBySeq.values()) {
      if (!isReclaimable(row, request, now)) {
        continue;
      }
      boolean charged = row.isolated;
      row.abandonedClaims++;
      row.isolated = true;
      // At least once: no exactly-once position (OutboxSql's CLAIM_ABANDONED).
      row.leaseEpoch = null;
      row.claimBatch = null;
      row.attempts += charged ? 1 : 0;
      if (row.attempts >= request.maxAttempts()) { // or max.attempts lowered below what it spent
        row.park(
            charged ? ReasonCodes.ABANDONED_IN_ISOLATION : ReasonCodes.ATTEMPTS_BUDGET_LOWERED);
        return new ClaimResult(List.of(), List.of(row.exhausted()));
      }
      row.lease(request.owner(), now.plus(request.leaseDuration()));
      return new ClaimResult(
          List.of(row.claimed(now, request.payloadReadLimit(), request.headersReadLimit())),
          List.of());
    }
    return ClaimResult.EMPTY;
  }

  /**
   * The share of an aggregate: by the hash a claimed row carries, as PostgreSQL's affinity is by
   * its own (hashtext).
   */
  private static boolean inShare(Row row, AggregateAffinity affinity) {
    return row.aggregateHash() % affinity.slots() == affinity.slot();
  }

  /** The first active row before {@code row} in its aggregate that {@code owner} does not hold. */
  private Optional<Row> headNotHeld(Row row, String owner, Instant now) {
    return firstPredecessor(row, p -> !p.isHeldBy(owner, now));
  }

  private boolean hasPredecessor(Row row, Predicate<Row> blocks) {
    return firstPredecessor(row, blocks).isPresent();
  }

  /** The first active row before {@code row} in its aggregate that {@code matching} accepts. */
  private Optional<Row> firstPredecessor(Row row, Predicate<Row> matching) {
    for (Row p : rowsBySeq.headMap(row.seq, false).values()) {
      if (p.status.isActive()
          && row.instanceKey.equals(p.instanceKey)
          && row.aggregateId.equals(p.aggregateId)
          && matching.test(p)) {
        return Optional.of(p);
      }
    }
    return Optional.empty();
  }

  @Override
  public synchronized Outcome markPublished(PublishedAck ack) {
    Row row = fenced(ack.messageId(), ack.lease());
    if (row == null || row.seq != ack.seq()) {
      return Outcome.CLAIM_LOST; // the row is found by its seq, which must hold the message id
    }
    KafkaCoordinates k = ack.coordinates();
    row.status = MessageStatus.PUBLISHED;
    row.publishedAt = now();
    row.kafka = k;
    row.nextAttemptAt = null;
    row.releaseLease();
    return Outcome.APPLIED;
  }

  @Override
  public synchronized List<Outcome> markPublished(List<PublishedAck> acks) {
    List<Outcome> outcomes = new ArrayList<>(acks.size());
    for (PublishedAck ack : acks) {
      outcomes.add(markPublished(ack));
    }
    return outcomes;
  }

  @Override
  public synchronized Set<String> publishedUnderOwnLease(List<PublishedAck> acks) {
    Set<String> published = new HashSet<>();
    for (PublishedAck ack : acks) {
      Row row = rowsById.get(ack.messageId());
      if (row != null
          && row.ownedBy(claimedKeys)
          && row.status == MessageStatus.PUBLISHED
          && row.seq == ack.seq()
          && row.leaseToken == ack.lease().token()
          && ack.coordinates().equals(row.kafka)) {
        published.add(ack.messageId());
      }
    }
    return published;
  }

  @Override
  public synchronized Outcome retryLater(
      String messageId, Lease lease, String reasonCode, Duration delay, int maxAttempts) {
    ReasonCodes.require(reasonCode);
    Row row = fenced(messageId, lease);
    if (row == null) {
      return Outcome.CLAIM_LOST;
    }
    row.attempts++;
    row.lastFailureCode = reasonCode;
    row.nextAttemptAt = now().plus(delay.isNegative() ? Duration.ZERO : delay);
    row.releaseLease();
    if (row.attempts >= maxAttempts) {
      row.status = MessageStatus.EXHAUSTED;
      return Outcome.EXHAUSTED;
    }
    row.status = MessageStatus.AMBIGUOUS;
    return Outcome.APPLIED;
  }

  @Override
  public synchronized Outcome markFailed(
      String messageId, Lease lease, String reasonCode, KafkaCoordinates deadLetter) {
    ReasonCodes.require(reasonCode);
    Row row = fenced(messageId, lease);
    if (row == null) {
      return Outcome.CLAIM_LOST;
    }
    row.status = MessageStatus.FAILED;
    row.lastFailureCode = reasonCode;
    row.kafka = deadLetter;
    row.nextAttemptAt = null;
    row.releaseLease();
    return Outcome.APPLIED;
  }

  @Override
  public synchronized List<Boolean> recordDeadLetterCopies(List<DeadLetterCopy> copies) {
    List<Boolean> recorded = new ArrayList<>(copies.size());
    for (DeadLetterCopy copy : copies) {
      Row row = rowsById.get(copy.messageId());
      boolean parked =
          row != null
              && row.seq == copy.seq()
              && parkedUnder(row, copy.token(), copy.epoch(), copy.batch())
              && row.kafka == null;
      if (parked) {
        row.kafka = copy.position();
      }
      recorded.add(parked);
    }
    return recorded;
  }

  /**
   * Whether {@code row}, of a claimed key, is FAILED as a park under this token and position left
   * it.
   */
  private boolean parkedUnder(Row row, long token, long epoch, long batch) {
    return row != null
        && row.ownedBy(claimedKeys)
        && row.status == MessageStatus.FAILED
        && row.leaseToken == token
        && Long.valueOf(epoch).equals(row.leaseEpoch)
        && Long.valueOf(batch).equals(row.claimBatch);
  }

  @Override
  public synchronized List<Outcome> park(List<ParkRequest> parks) {
    List<Outcome> outcomes = new ArrayList<>(parks.size());
    for (ParkRequest park : parks) {
      Row row = rowsById.get(park.messageId());
      outcomes.add(
          row == null || row.seq != park.seq()
              ? Outcome.CLAIM_LOST
              : markFailed(park.messageId(), park.lease(), park.reasonCode(), null));
    }
    return outcomes;
  }

  @Override
  public synchronized Set<String> parkedUnderOwnLease(List<ParkRequest> parks) {
    Set<String> parked = new HashSet<>();
    for (ParkRequest park : parks) {
      Row row = rowsById.get(park.messageId());
      if (parkedUnder(row, park.lease().token(), park.epoch(), park.batch())
          && row.seq == park.seq()
          && park.reasonCode().equals(row.lastFailureCode)) {
        parked.add(park.messageId());
      }
    }
    return parked;
  }

  @Override
  public synchronized Outcome release(String messageId, Lease lease) {
    Row row = fenced(messageId, lease);
    if (row == null) {
      return Outcome.CLAIM_LOST;
    }
    row.status = row.attempts > 0 ? MessageStatus.AMBIGUOUS : MessageStatus.PENDING;
    row.nextAttemptAt = null;
    row.releaseLease();
    return Outcome.APPLIED;
  }

  @Override
  public synchronized Renewal renew(List<HeldLease> leases, Duration leaseDuration) {
    Instant expiry = now().plus(leaseDuration);
    Set<String> lost = new HashSet<>();
    for (HeldLease held : leases) {
      Row row = fenced(held.messageId(), held.lease());
      if (row == null || row.seq != held.seq()) {
        lost.add(held.messageId()); // the row is found by its seq, which must hold the message id
      } else {
        row.leaseExpiresAt = expiry;
      }
    }
    return Renewal.lost(lost); // no row locks here: nothing is ever skipped
  }

  @Override
  public synchronized BacklogSnapshot inspect(Set<String> instanceKeys, boolean countPublished) {
    Set<String> keys = InstanceKeys.requireValid(instanceKeys);
    Instant now = now();
    Map<MessageStatus, Long> counts = new EnumMap<>(MessageStatus.class);
    for (Row row : rowsBySeq.values()) {
      if (!row.ownedBy(keys)) {
        continue;
      }
      if (row.status != MessageStatus.PUBLISHED || countPublished) {
        counts.merge(row.status, 1L, Long::sum);
      }
    }
    return new BacklogSnapshot(counts, lag(keys, now));
  }

  @Override
  public synchronized Duration lag(Set<String> instanceKeys) {
    return lag(InstanceKeys.requireValid(instanceKeys), now());
  }

  @Override
  public synchronized Map<MessageStatus, Long> countParked(Set<String> instanceKeys) {
    Set<String> keys = InstanceKeys.requireValid(instanceKeys);
    Map<MessageStatus, Long> counts = new EnumMap<>(MessageStatus.class);
    for (Row row : rowsBySeq.values()) {
      if (row.ownedBy(keys)
          && (row.status == MessageStatus.FAILED || row.status == MessageStatus.EXHAUSTED)) {
        counts.merge(row.status, 1L, Long::sum);
      }
    }
    return counts;
  }

  @Override
  public synchronized long countLeasedElsewhere(Set<String> instanceKeys, String ownOwners) {
    Set<String> keys = InstanceKeys.requireValid(instanceKeys);
    Instant now = now();
    long count = 0;
    for (Row row : rowsBySeq.values()) {
      if (row.ownedBy(keys)
          && row.status == MessageStatus.IN_FLIGHT
          && row.leaseExpiresAt != null
          && row.leaseExpiresAt.isAfter(now)
          && row.leaseOwner != null
          && !row.leaseOwner.startsWith(ownOwners)) {
        count++;
      }
    }
    return count;
  }

  private Duration lag(Set<String> keys, Instant now) {
    for (Row row : rowsBySeq.values()) {
      if (row.ownedBy(keys) && row.status.isActive()) {
        return row.createdAt.isAfter(now) ? Duration.ZERO : Duration.between(row.createdAt, now);
      }
    }
    return Duration.ZERO;
  }

  @Override
  public synchronized int deletePublished(
      Set<String> instanceKeys, Instant publishedBefore, int limit) {
    Set<String> keys = InstanceKeys.requireValid(instanceKeys);
    List<Row> doomed =
        rowsBySeq.values().stream()
            .filter(r -> r.ownedBy(keys))
            .filter(r -> r.status == MessageStatus.PUBLISHED)
            .filter(r -> r.publishedAt.isBefore(publishedBefore))
            .sorted((a, b) -> a.publishedAt.compareTo(b.publishedAt))
            .limit(limit)
            .toList();
    for (Row row : doomed) {
      rowsBySeq.remove(row.seq);
      rowsById.remove(row.messageId);
    }
    return doomed.size();
  }

  @Override
  public Instant now() {
    Instant override = clock.override();
    return override != null ? override : Instant.now();
  }

  @Override
  public void close() {}

  private Row fenced(String messageId, Lease lease) {
    Row row = rowsById.get(messageId);
    if (row == null
        || !row.ownedBy(claimedKeys)
        || row.status != MessageStatus.IN_FLIGHT
        || !lease.owner().equals(row.leaseOwner)
        || lease.token() != row.leaseToken) {
      return null;
    }
    return row;
  }

  /**
   * A snapshot of one row's relay state, and its {@code seq}; a PUBLISHED row as the published log
   * keeps it (no exactly-once claim position, not isolated).
   */
  public record RowState(
      String messageId,
      String instanceKey,
      MessageStatus status,
      int attempts,
      int abandonedClaims,
      Instant nextAttemptAt,
      String leaseOwner,
      long leaseToken,
      Instant leaseExpiresAt,
      String lastFailureCode,
      KafkaCoordinates kafka,
      long seq,
      Long leaseEpoch,
      Long claimBatch,
      boolean isolated) {}

  private static final class Row {
    final long seq;
    final String messageId;
    final String instanceKey;
    final String aggregateType;
    final String aggregateId;
    final String eventType;
    final String topic;
    final byte[] payload;
    final String headersJson;
    final String correlationId;
    Instant createdAt;
    final Instant deliverBefore;
    MessageStatus status = MessageStatus.PENDING;
    int attempts;
    int abandonedClaims;
    boolean isolated;
    Instant nextAttemptAt;
    String leaseOwner;
    long leaseToken;
    Instant leaseExpiresAt;
    String lastFailureCode;
    Instant publishedAt;
    KafkaCoordinates kafka;
    Long leaseEpoch;
    Long claimBatch;

    Row(long seq, OutboxMessage m, String instanceKey, Instant createdAt) {
      this.seq = seq;
      this.messageId = m.messageId();
      this.instanceKey = instanceKey;
      this.aggregateType = m.aggregateType();
      this.aggregateId = m.aggregateId();
      this.eventType = m.eventType();
      this.topic = m.topic();
      this.payload = m.payload();
      this.headersJson = JsonbText.ofHeaders(m.headersJson()); // as the jsonb column gives it
      this.correlationId = m.correlationId();
      this.createdAt = createdAt;
      this.deliverBefore = m.deliverBefore();
    }

    /** Any fixed, non-negative function of the aggregate id will do (PostgreSQL uses hashtext). */
    int aggregateHash() {
      return aggregateId.hashCode() & Integer.MAX_VALUE;
    }

    /** Legacy rows (no instance key) belong to nobody. */
    boolean ownedBy(Set<String> keys) {
      return instanceKey != null && keys.contains(instanceKey);
    }

    /** Due whatever its attempts: a claim parks a row that is over the budget. */
    boolean isDue(Instant now) {
      return (status == MessageStatus.PENDING || status == MessageStatus.AMBIGUOUS)
          && (nextAttemptAt == null || !nextAttemptAt.isAfter(now));
    }

    boolean isAbandoned(Instant now) {
      return status == MessageStatus.IN_FLIGHT && !leaseExpiresAt.isAfter(now);
    }

    boolean isHeldBy(String owner, Instant now) {
      return status == MessageStatus.IN_FLIGHT
          && owner.equals(leaseOwner)
          && leaseExpiresAt.isAfter(now);
    }

    void lease(String owner, Instant expiry) {
      status = MessageStatus.IN_FLIGHT;
      leaseOwner = owner;
      leaseToken++;
      leaseExpiresAt = expiry;
    }

    /** EXHAUSTED by a claim: the token moves on, so no earlier lease can write it. */
    void park(String reasonCode) {
      status = MessageStatus.EXHAUSTED;
      leaseToken++;
      leaseOwner = null;
      leaseExpiresAt = null;
      lastFailureCode = reasonCode;
    }

    void releaseLease() {
      leaseOwner = null;
      leaseExpiresAt = null;
      isolated = false;
    }

    /**
     * The row as a claim at {@code now} returns it: its deadline is judged by this clock, and a
     * payload over {@code payloadReadLimit} is left out, its size given.
     */
    ClaimedMessage claimed(Instant now, int payloadReadLimit, int headersReadLimit) {
      boolean read = payload != null && payload.length <= payloadReadLimit;
      boolean headersOmitted =
          headersJson != null
              && headersJson.getBytes(StandardCharsets.UTF_8).length > headersReadLimit;
      return new ClaimedMessage(
          seq,
          messageId,
          instanceKey,
          aggregateType,
          aggregateId,
          eventType,
          topic,
          read ? payload.clone() : null,
          payload == null ? -1 : payload.length,
          headersOmitted ? null : headersJson,
          headersOmitted,
          correlationId,
          createdAt,
          deliverBefore,
          deliverBefore != null && !deliverBefore.isAfter(now),
          attempts,
          new Lease(leaseOwner, leaseToken),
          leaseExpiresAt,
          aggregateHash());
    }

    ExhaustedMessage exhausted() {
      return new ExhaustedMessage(messageId, instanceKey, lastFailureCode);
    }

    RowState state() {
      return new RowState(
          messageId,
          instanceKey,
          status,
          attempts,
          abandonedClaims,
          nextAttemptAt,
          leaseOwner,
          leaseToken,
          leaseExpiresAt,
          lastFailureCode,
          kafka,
          seq,
          status == MessageStatus.PUBLISHED ? null : leaseEpoch,
          status == MessageStatus.PUBLISHED ? null : claimBatch,
          status != MessageStatus.PUBLISHED && isolated);
    }
  }
}
