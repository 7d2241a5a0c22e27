package dev.outboxrelay.store;

import java.util.Objects;

/** A row and the lease its caller believes it holds; the unit of batch renewal. */
public record HeldLease(String messageId, Lease lease) {
  public HeldLease {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(lease, "lease");
  }
}
