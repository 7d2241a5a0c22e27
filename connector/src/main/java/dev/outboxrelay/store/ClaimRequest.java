package dev.outboxrelay.store;

import dev.outboxrelay.writer.InstanceKeys;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * What a claimer asks for.
 *
 * @param owner lease owner identity, unique per task and per start
 * @param instanceKeys the instance keys this owner relays; never empty, never blank
 * @param limit the most rows one claim returns
 * @param leaseDuration how long the lease holds before others may reclaim the row
 * @param maxAttempts attempt budget; {@link #UNLIMITED_ATTEMPTS} for none
 * @param ordered keep per-aggregate first-delivery order
 * @param affinity with ordering only: claim only rows of the aggregates in this share; {@code null}
 *     for rows of any aggregate
 * @param exactlyOnce an exactly-once claim: its epoch and number, written into the rows, and the
 *     only buckets it may take rows of; {@code null} in at-least-once mode
 * @param payloadReadLimit the largest payload, in bytes, a claim reads: a larger one is left in the
 *     database and the row returned with its size only ({@link ClaimedMessage#payloadOmitted}), so
 *     that a burst of oversized rows, which are never published, cannot fill the worker's heap
 * @param headersReadLimit the largest headers, in bytes of their text (the row's own, and each of
 *     its header columns, each on its own), a claim reads: with one larger, all are left in the
 *     database and the row returned without them ({@link ClaimedMessage#headersOmitted}), for the
 *     same reason
 * @param readRoom the bytes of payloads and headers a claim takes, its candidates counted in seq
 *     order: it stops before the row that would take it past them (never at the first), so that a
 *     burst of large rows after small ones cannot bring a whole batch of them into the worker's
 *     heap at once; {@link #UNLIMITED_READ} for no bound. A payload is counted as the claim reads
 *     it (none over {@code payloadReadLimit}), headers as their text
 */
public record ClaimRequest(
    String owner,
    Set<String> instanceKeys,
    int limit,
    Duration leaseDuration,
    int maxAttempts,
    boolean ordered,
    AggregateAffinity affinity,
    ExactlyOnceClaim exactlyOnce,
    int payloadReadLimit,
    int headersReadLimit,
    long readRoom) {

  public static final int UNLIMITED_ATTEMPTS = Integer.MAX_VALUE;

  /** Every payload (or every row's headers) is read, whatever its size. */
  public static final int UNLIMITED_PAYLOAD = Integer.MAX_VALUE;

  /** Every row's payload and headers are read, however many bytes the claim's rows hold. */
  public static final long UNLIMITED_READ = Long.MAX_VALUE;

  public ClaimRequest {
    Objects.requireNonNull(owner, "owner");
    if (owner.isBlank()) {
      throw new IllegalArgumentException("owner must not be blank");
    }
    instanceKeys = InstanceKeys.requireValid(instanceKeys);
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be at least 1");
    }
    Objects.requireNonNull(leaseDuration, "leaseDuration");
    if (leaseDuration.isNegative() || leaseDuration.isZero()) {
      throw new IllegalArgumentException("leaseDuration must be positive");
    }
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be at least 1");
    }
    if (affinity != null && !ordered) {
      throw new IllegalArgumentException("an aggregate affinity needs ordered claims");
    }
    if (affinity != null && exactlyOnce != null) {
      throw new IllegalArgumentException("an exactly-once claim has buckets, not an affinity");
    }
    if (payloadReadLimit < 0) {
      throw new IllegalArgumentException("payloadReadLimit must not be negative");
    }
    if (headersReadLimit < 0) {
      throw new IllegalArgumentException("headersReadLimit must not be negative");
    }
    if (readRoom < 0) {
      throw new IllegalArgumentException("readRoom must not be negative");
    }
  }

  /** An at-least-once request. */
  public ClaimRequest(
      String owner,
      Set<String> instanceKeys,
      int limit,
      Duration leaseDuration,
      int maxAttempts,
      boolean ordered,
      AggregateAffinity affinity) {
    this(
        owner,
        instanceKeys,
        limit,
        leaseDuration,
        maxAttempts,
        ordered,
        affinity,
        null,
        UNLIMITED_PAYLOAD,
        UNLIMITED_PAYLOAD,
        UNLIMITED_READ);
  }

  /** A request for rows of any aggregate. */
  public ClaimRequest(
      String owner,
      Set<String> instanceKeys,
      int limit,
      Duration leaseDuration,
      int maxAttempts,
      boolean ordered) {
    this(owner, instanceKeys, limit, leaseDuration, maxAttempts, ordered, null);
  }

  public List<String> instanceKeyList() {
    return List.copyOf(instanceKeys);
  }

  public ClaimRequest withLimit(int newLimit) {
    return with(newLimit, affinity, exactlyOnce, payloadReadLimit, headersReadLimit);
  }

  /** The same request, reading the payloads and headers of its rows up to {@code bytes}. */
  public ClaimRequest withReadRoom(long bytes) {
    return with(limit, affinity, exactlyOnce, payloadReadLimit, headersReadLimit, bytes);
  }

  /** The same request for rows of any aggregate. */
  public ClaimRequest withoutAffinity() {
    return with(limit, null, exactlyOnce, payloadReadLimit, headersReadLimit);
  }

  /** The same request, reading payloads of at most {@code bytes}. */
  public ClaimRequest withPayloadReadLimit(int bytes) {
    return with(limit, affinity, exactlyOnce, bytes, headersReadLimit);
  }

  /** The same request, reading headers of at most {@code bytes}. */
  public ClaimRequest withHeadersReadLimit(int bytes) {
    return with(limit, affinity, exactlyOnce, payloadReadLimit, bytes);
  }

  /**
   * The same request as exactly-once claim number {@code batch} of the instance of {@code epoch}.
   */
  public ClaimRequest exactlyOnce(long epoch, long batch, BucketShare share) {
    return with(
        limit, null, new ExactlyOnceClaim(epoch, batch, share), payloadReadLimit, headersReadLimit);
  }

  /**
   * The same request as exactly-once claim number {@code batch} of one of the {@code suspects}
   * alone ({@link ExactlyOnceClaim#suspects}).
   */
  public ClaimRequest isolatingSuspect(
      long epoch, long batch, BucketShare share, List<Long> suspects) {
    if (suspects.isEmpty()) {
      throw new IllegalArgumentException("no suspect to claim");
    }
    return with(
        1,
        null,
        new ExactlyOnceClaim(epoch, batch, share, suspects),
        payloadReadLimit,
        headersReadLimit);
  }

  /** The same owner, keys, lease, budget, order and read room, with these. */
  private ClaimRequest with(
      int newLimit,
      AggregateAffinity newAffinity,
      ExactlyOnceClaim newExactlyOnce,
      int payloadLimit,
      int headersLimit) {
    return with(newLimit, newAffinity, newExactlyOnce, payloadLimit, headersLimit, readRoom);
  }

  /** The same owner, keys, lease, budget and order, with these. */
  private ClaimRequest with(
      int newLimit,
      AggregateAffinity newAffinity,
      ExactlyOnceClaim newExactlyOnce,
      int payloadLimit,
      int headersLimit,
      long room) {
    return new ClaimRequest(
        owner,
        instanceKeys,
        newLimit,
        leaseDuration,
        maxAttempts,
        ordered,
        newAffinity,
        newExactlyOnce,
        payloadLimit,
        headersLimit,
        room);
  }
}
