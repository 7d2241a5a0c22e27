package dev.outboxrelay.connect;

import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.UnheldPage;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Finds and releases the rows of a claim whose result never arrived (leased to the task's owner and
 * not held), one page of an instance key's backlog per statement ({@link
 * OutboxStore#releaseUnheld}), so that no statement reads more than a page however large the
 * backlog: one statement over the whole backlog could outlast {@code statement.timeout.ms} at every
 * attempt and hold every claim back for good. Remembers where it stands, so that a page that fails
 * (the database away) is read again and the pages before it are not. The task claims nothing until
 * it has ended: only then is every such row known to be found.
 *
 * <p>It reads its first page only once the lost claim has ended on the server ({@link
 * OutboxStore#claimsEnded}, asked without waiting; until then each run ends at once, unfinished): a
 * claim whose reply never arrived may still be committing (a synchronous standby's wait), its rows
 * invisible, and pages read meanwhile would find none of them. Released too early, the rows would
 * sit leased to this owner; exactly once, the next batch's committed offset would cover them and a
 * recovery record them PUBLISHED unsent.
 *
 * <p>It ends early once it has released as many rows as the lost claim asked for: only one claim's
 * result can be lost at a time, since none is made before its release ends, and the release starts
 * only once that claim has ended.
 */
final class LostClaimRelease {
  /** Rows read per statement: a few milliseconds of index and heap reads each. */
  static final int PAGE_ROWS = 10_000;

  private final List<String> instanceKeys;
  private final String owner;
  private final int claimLimit;
  private final int pageRows;
  private final List<String> released = new ArrayList<>();
  private int keyIndex;
  private long afterSeq = Long.MIN_VALUE;
  private int pagesRead;
  private boolean claimEnded;

  LostClaimRelease(Set<String> instanceKeys, String owner, int claimLimit, int pageRows) {
    this.instanceKeys = instanceKeys.stream().sorted().toList();
    this.owner = owner;
    this.claimLimit = claimLimit;
    this.pageRows = OutboxStore.requirePageRows(pageRows);
  }

  /**
   * Reads pages until every row of the lost claim is found (then true), or {@code stop} says to
   * stop, or the lost claim is still ending on the server (then false, the position kept). Throws,
   * the position kept, when a page fails.
   *
   * @param heldSeqs the seqs the task holds, read again for every page (only ever fewer: it claims
   *     nothing meanwhile)
   * @param handedThroughBatch exactly once, the last batch handed to Connect; 0 otherwise
   */
  boolean run(
      OutboxStore store,
      Supplier<Collection<Long>> heldSeqs,
      long handedThroughBatch,
      BooleanSupplier stop) {
    while (!isDone()) {
      if (stop.getAsBoolean()) {
        return false;
      }
      if (!claimEnded) {
        if (!store.claimsEnded(owner)) {
          return false; // asked again next time
        }
        claimEnded = true;
      }
      UnheldPage page =
          store.releaseUnheld(
              instanceKeys.get(keyIndex),
              owner,
              heldSeqs.get(),
              handedThroughBatch,
              afterSeq,
              pageRows);
      pagesRead++;
      released.addAll(page.released());
      if (page.full()) {
        afterSeq = page.lastSeq();
      } else {
        keyIndex++;
        afterSeq = Long.MIN_VALUE;
      }
    }
    return true;
  }

  private boolean isDone() {
    return keyIndex == instanceKeys.size() || released.size() >= claimLimit;
  }

  /** The message ids released so far, in the order the pages found them. */
  List<String> released() {
    return List.copyOf(released);
  }

  int pagesRead() {
    return pagesRead;
  }

  /** Whether the lost claim was found ended, so that pages are being read. */
  boolean claimEnded() {
    return claimEnded;
  }
}
