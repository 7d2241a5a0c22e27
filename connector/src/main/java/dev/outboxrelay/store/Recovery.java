package dev.outboxrelay.store;

import java.util.List;

/**
 * What a recovery did: rows recorded PUBLISHED because a committed offset covers them (reason
 * {@link ReasonCodes#RECOVERED_FROM_OFFSETS}), and rows released to be sent again. And rows it left
 * alone because they are leased under a later epoch than the recovering instance's and their leases
 * have expired: no live instance renews them, and none will ever recover them (a database restored
 * or moved with rows in flight, or an instance that took its epoch late and stopped: found by a
 * sweep when it claimed after this instance's start). A later epoch's live lease is a successor's,
 * which a fenced instance starting late sees normally: not reported.
 */
public record Recovery(List<String> published, List<String> released, List<String> laterEpoch) {
  public static final Recovery NONE = new Recovery(List.of(), List.of(), List.of());

  public Recovery {
    published = List.copyOf(published);
    released = List.copyOf(released);
    laterEpoch = List.copyOf(laterEpoch);
  }

  public boolean isEmpty() {
    return published.isEmpty() && released.isEmpty() && laterEpoch.isEmpty();
  }
}
