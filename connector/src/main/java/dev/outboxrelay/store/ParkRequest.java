package dev.outboxrelay.store;

import java.util.Objects;

/**
 * Exactly once: a claimed row to park FAILED before its batch leaves, under the lease that claimed
 * it, with its reason; the park keeps the claim's position ({@code epoch}, {@code batch}), by which
 * a retried park tells its own earlier attempt from another owner's write.
 *
 * @param seq the row's {@code seq}, as its claim returned it: the store finds the row by it and
 *     checks that it holds {@code messageId}; a seq that names no such row makes the park a lost
 *     claim
 */
public record ParkRequest(
    String messageId, long seq, Lease lease, String reasonCode, long epoch, long batch) {
  public ParkRequest {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(lease, "lease");
    ReasonCodes.require(reasonCode);
  }
}
