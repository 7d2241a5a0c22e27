package dev.outboxrelay.connect;

import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimResult;
import dev.outboxrelay.store.ClaimedMessage;

/**
 * Where a task's next claim starts reading the due rows. A claim reads them in {@code seq} order,
 * and the rows this task (and others) hold in flight sit at the head: read from the start, every
 * claim would visit each of them in the table only to filter it out (up to 4 batches per task, more
 * than the rows it takes). After a full batch the next claim starts after the batch's last row.
 *
 * <p>Rows before that point can become due again (a retry, a release, another task's lease given
 * up) or were skipped because a concurrent claimer held them. They are never lost: a claim that
 * comes back short of its limit (the end of what it could take) makes the next one start from the
 * beginning, and so does every {@value #FROM_THE_START_EVERY}th claim in a row of full batches. A
 * row's wait is bounded by that many claims; the per-aggregate order never depends on the cursor
 * (earlier rows still hold their aggregate back, see {@link ClaimRequest#afterSeq}).
 */
final class ClaimCursor {
  /** Full batches in a row after which a claim starts from the beginning again. */
  static final int FROM_THE_START_EVERY = 16;

  private long afterSeq = ClaimRequest.FROM_THE_START;
  private int claimsSinceStart;

  /** {@code request} starting where the next claim should. */
  ClaimRequest next(ClaimRequest request) {
    if (claimsSinceStart >= FROM_THE_START_EVERY) {
      afterSeq = ClaimRequest.FROM_THE_START;
    }
    return request.after(afterSeq);
  }

  /** Moves the cursor past what {@code request} (from {@link #next}) returned. */
  void claimed(ClaimRequest request, ClaimResult result) {
    claimsSinceStart = request.afterSeq() == ClaimRequest.FROM_THE_START ? 1 : claimsSinceStart + 1;
    int taken = result.claimed().size() + result.exhausted().size();
    if (taken < request.limit() || result.claimed().isEmpty()) {
      afterSeq = ClaimRequest.FROM_THE_START; // the end of what could be taken: from the start
      claimsSinceStart = 0;
      return;
    }
    long last = result.claimed().stream().mapToLong(ClaimedMessage::seq).max().orElseThrow();
    afterSeq = Math.max(request.afterSeq(), last);
  }
}
