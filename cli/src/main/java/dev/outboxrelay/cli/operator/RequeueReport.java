package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.MessageStatus;
import java.util.List;

/**
 * What a requeue did.
 *
 * @param requeued rows set back to PENDING
 * @param deadlinePassed of those, the rows whose deliver_before has passed by the database clock:
 *     the relay records them FAILED (DEADLINE_EXPIRED) again as soon as it claims them
 * @param notRequeued for a requeue by message id, each requested id that was left alone and why
 */
public record RequeueReport(long requeued, long deadlinePassed, List<Skipped> notRequeued) {
  public RequeueReport {
    notRequeued = List.copyOf(notRequeued);
  }

  /** Why a requested row was not requeued. */
  public enum Reason {
    /** No row has this message id. */
    NOT_FOUND,
    /** The row belongs to another instance key, or is a legacy row without one. */
    OTHER_INSTANCE,
    /** The row is not FAILED or EXHAUSTED (it may just have been requeued or published). */
    NOT_PARKED,
    /** The row is parked, but not with a status that was asked for (--status). */
    STATUS_NOT_SELECTED
  }

  /**
   * @param status the row's status, only when it belongs to this instance key
   */
  public record Skipped(String messageId, Reason reason, MessageStatus status) {}
}
