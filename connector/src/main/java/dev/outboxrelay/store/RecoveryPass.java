package dev.outboxrelay.store;

import dev.outboxrelay.writer.Printable;
import java.util.ArrayList;
import java.util.List;

/**
 * One exactly-once recovery or sweep, read one page of an instance key's backlog per statement
 * ({@link OutboxStore#recover}), so that no statement reads more than a page however large the
 * backlog: one statement over every due row outlasted {@code statement.timeout.ms} behind tens of
 * millions of them, at every attempt, and the task claimed nothing. Remembers where it stands, so
 * that a page that fails (the database away) is read again and the pages before it are not; the
 * request, and so the committed positions read at its start, stays the same for all its pages.
 */
public final class RecoveryPass {
  /** Rows read per statement: a few milliseconds of index and heap reads each. */
  public static final int PAGE_ROWS = 10_000;

  private final RecoveryRequest request;
  private final List<String> instanceKeys;
  private final int pageRows;
  private final List<String> laterEpoch = new ArrayList<>();
  private int keyIndex;
  private long afterSeq = Long.MIN_VALUE;
  private int pagesRead;
  private long published;
  private long released;
  private long suspects;
  private long exhausted;
  private long foreign;
  private String firstForeign;

  public RecoveryPass(RecoveryRequest request, int pageRows) {
    this.request = request;
    this.instanceKeys = request.instanceKeys().stream().sorted().toList();
    this.pageRows = OutboxStore.requirePageRows(pageRows);
  }

  public boolean isDone() {
    return keyIndex == instanceKeys.size();
  }

  /**
   * Settles the next page and returns what it did; throws, the position kept, when it fails. Only
   * while {@link #isDone()} is false.
   */
  public Recovery nextPage(OutboxStore store) {
    RecoveryPage page = store.recover(request, instanceKeys.get(keyIndex), afterSeq, pageRows);
    pagesRead++;
    Recovery settled = page.settled();
    published += settled.published().size();
    released += settled.released().size();
    suspects += settled.suspects().size();
    exhausted += settled.exhausted().size();
    laterEpoch.addAll(settled.laterEpoch());
    foreign += settled.foreign().size();
    if (firstForeign == null && !settled.foreign().isEmpty()) {
      firstForeign = settled.foreign().get(0);
    }
    if (page.full()) {
      if (page.lastSeq() <= afterSeq) { // would read the same page for ever, claiming nothing
        throw new IllegalStateException(
            "a full recovery page of instance key '"
                + Printable.escape(instanceKeys.get(keyIndex))
                + "' did not advance: after seq "
                + afterSeq
                + ", last seq "
                + page.lastSeq());
      }
      afterSeq = page.lastSeq();
    } else {
      keyIndex++;
      afterSeq = Long.MIN_VALUE;
    }
    return settled;
  }

  public RecoveryRequest request() {
    return request;
  }

  /** The expired rows leased under a later epoch that the pages read so far found. */
  public List<String> laterEpoch() {
    return List.copyOf(laterEpoch);
  }

  /** Rows found in flight under another connector's live lease, left to it. */
  public long foreign() {
    return foreign;
  }

  /** The message id of the first of them, or null. */
  public String firstForeign() {
    return firstForeign;
  }

  public int pagesRead() {
    return pagesRead;
  }

  public long published() {
    return published;
  }

  public long released() {
    return released;
  }

  public long suspects() {
    return suspects;
  }

  public long exhausted() {
    return exhausted;
  }
}
