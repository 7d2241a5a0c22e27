package dev.outboxrelay.store;

import java.util.List;

/**
 * One page of a release of the rows an owner leased and does not hold ({@link
 * OutboxStore#releaseUnheld}).
 *
 * @param released the message ids it released, sorted
 * @param lastSeq the seq of the last row it read, where the next page starts; the page's own {@code
 *     afterSeq} when it read none
 * @param full whether it read as many rows as it was allowed, so that more may follow
 */
public record UnheldPage(List<String> released, long lastSeq, boolean full) {
  public UnheldPage {
    released = List.copyOf(released);
  }
}
