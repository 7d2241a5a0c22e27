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
 *
 * <p>A row released while its {@code abandoned_claims} is above 0 (its second release, for a row
 * never abandoned before) is a suspect: its instances ended twice without Kafka committing it, and
 * the row may be why (a record that fails its task aborts its batch's transaction). It is flagged
 * isolated, to be claimed alone ({@link ExactlyOnceClaim#suspects}); one that was already claimed
 * alone is charged an attempt, and past the budget is parked EXHAUSTED ({@link
 * ReasonCodes#ABANDONED_IN_ISOLATION}) instead.
 *
 * <p>A live lease of another connector's task ({@link RecoveryRequest#ownOwners}: two connectors
 * relaying one instance key, which docs/design.md advises against) is left to it, whatever its
 * epoch, and reported in {@code foreign}: this connector's offsets and epochs say nothing of it. An
 * expired one is released as this connector's own are, and named in {@code foreignReleased}: that
 * connector may have sent the row, so it may reach Kafka twice.
 *
 * <p>Every list is in seq order.
 *
 * @param published the message ids of the rows recorded PUBLISHED
 * @param released the message ids of the released rows, suspects included
 * @param exhausted the message ids of the rows parked EXHAUSTED
 * @param suspects the seqs of the released rows that are suspects, in seq order
 * @param foreign the message ids of rows left in flight under another connector's live lease
 * @param foreignReleased the message ids of released rows (in {@code released} too) that were under
 *     another connector's expired lease
 */
public record Recovery(
    List<String> published,
    List<String> released,
    List<String> laterEpoch,
    List<String> exhausted,
    List<Long> suspects,
    List<String> foreign,
    List<String> foreignReleased) {
  public static final Recovery NONE =
      new Recovery(List.of(), List.of(), List.of(), List.of(), List.of());

  public Recovery {
    published = List.copyOf(published);
    released = List.copyOf(released);
    laterEpoch = List.copyOf(laterEpoch);
    exhausted = List.copyOf(exhausted);
    suspects = suspects.stream().sorted().toList();
    foreign = List.copyOf(foreign);
    foreignReleased = List.copyOf(foreignReleased);
  }

  /** A recovery that released no row of another connector's expired lease. */
  public Recovery(
      List<String> published,
      List<String> released,
      List<String> laterEpoch,
      List<String> exhausted,
      List<Long> suspects,
      List<String> foreign) {
    this(published, released, laterEpoch, exhausted, suspects, foreign, List.of());
  }

  /** A recovery that found no other connector's live lease. */
  public Recovery(
      List<String> published,
      List<String> released,
      List<String> laterEpoch,
      List<String> exhausted,
      List<Long> suspects) {
    this(published, released, laterEpoch, exhausted, suspects, List.of());
  }

  public boolean isEmpty() {
    return published.isEmpty()
        && released.isEmpty()
        && laterEpoch.isEmpty()
        && exhausted.isEmpty()
        && foreign.isEmpty();
  }
}
