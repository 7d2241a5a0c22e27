package dev.outboxrelay.store;

import java.util.Objects;

/**
 * A row and the lease its caller believes it holds; the unit of batch renewal.
 *
 * @param seq the row's {@code seq}, as its claim returned it: the store finds the row by it and
 *     checks that it holds {@code messageId}; a seq that names no such row makes the lease lost
 */
public record HeldLease(String messageId, long seq, Lease lease) {
  public HeldLease {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(lease, "lease");
  }
}
