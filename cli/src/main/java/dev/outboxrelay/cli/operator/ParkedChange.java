package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.MessageStatus;
import java.util.List;

/**
 * What a requeue or a discard of parked rows did, or a park of rows awaiting delivery.
 *
 * @param changed rows requeued (set back to PENDING), discarded (deleted) or parked
 * @param deadlinePassed of those, the rows whose deliver_before has passed by the database clock: a
 *     requeued one the relay records FAILED (DEADLINE_EXPIRED) again as soon as it claims it
 * @param skipped by message id, each requested id that was left alone and why
 * @param changedInFlight park: the message ids of the parked rows that were in flight (at least
 *     once, with --in-flight): their records may be in Kafka already, and a requeue may send them
 *     twice
 * @param changedUnderLiveLease park: of those, the rows whose lease had not expired: a running task
 *     held them, and its outcome write for each is refused and counted as a lost claim
 */
public record ParkedChange(
    long changed,
    long deadlinePassed,
    List<Skipped> skipped,
    List<String> changedInFlight,
    List<String> changedUnderLiveLease) {
  public ParkedChange {
    skipped = List.copyOf(skipped);
    changedInFlight = List.copyOf(changedInFlight);
    changedUnderLiveLease = List.copyOf(changedUnderLiveLease);
  }

  /** A requeue's or a discard's: no row they change is in flight. */
  public ParkedChange(long changed, long deadlinePassed, List<Skipped> skipped) {
    this(changed, deadlinePassed, skipped, List.of(), List.of());
  }

  /** Why a requested row was left alone. */
  public enum Reason {
    /** No row has this message id. */
    NOT_FOUND,
    /** The row belongs to another instance key, or is a legacy row without one. */
    OTHER_INSTANCE,
    /** The row is not FAILED or EXHAUSTED (it may just have been requeued or published). */
    NOT_PARKED,
    /** The row is parked, but not with a status that was asked for (--status). */
    STATUS_NOT_SELECTED,
    /** Park: the row is in flight, and --in-flight was not given. */
    IN_FLIGHT,
    /**
     * Park: the row is in flight under an exactly-once claim, which is never parked: Kafka may have
     * committed its record, which only the next start's recovery can tell.
     */
    IN_FLIGHT_EXACTLY_ONCE,
    /** Park: the row is parked or published already. */
    SETTLED,
    /** Park: the row awaited delivery, and changed while the command ran (claimed, say). */
    CHANGED
  }

  /**
   * @param status the row's status, only when it belongs to this instance key
   */
  public record Skipped(String messageId, Reason reason, MessageStatus status) {}
}
