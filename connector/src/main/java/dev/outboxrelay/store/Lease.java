package dev.outboxrelay.store;

import java.util.Objects;

/**
 * Proof of a claim: the owner that claimed a row and the token the claim set. Every write after a
 * claim is conditioned on both; a newer claim bumps the token, so an older lease can no longer
 * write.
 */
public record Lease(String owner, long token) {
  public Lease {
    Objects.requireNonNull(owner, "owner");
    if (owner.isBlank()) {
      throw new IllegalArgumentException("lease owner must not be blank");
    }
    if (token < 1) {
      throw new IllegalArgumentException("a claimed lease token is at least 1");
    }
  }

  @Override
  public String toString() {
    // The token is a fencing credential of sorts; logs name the owner only.
    return "Lease[owner=" + owner + "]";
  }
}
