package dev.outboxrelay.store;

import java.util.ArrayList;
import java.util.List;

/** A whole exactly-once recovery or sweep, in tests: every page of every key, merged. */
public final class Recoveries {
  /**
   * Rows a page reads in {@link #whole}: a few, so that the tests that recover a handful of rows
   * cross page boundaries.
   */
  public static final int PAGE_ROWS = 2;

  private Recoveries() {}

  public static Recovery whole(OutboxStore store, RecoveryRequest request) {
    return whole(store, request, PAGE_ROWS);
  }

  public static Recovery whole(OutboxStore store, RecoveryRequest request, int pageRows) {
    List<String> published = new ArrayList<>();
    List<String> released = new ArrayList<>();
    List<String> laterEpoch = new ArrayList<>();
    List<String> exhausted = new ArrayList<>();
    List<Long> suspects = new ArrayList<>();
    for (String key : request.instanceKeys().stream().sorted().toList()) {
      long after = Long.MIN_VALUE;
      RecoveryPage page;
      do {
        page = store.recover(request, key, after, pageRows);
        published.addAll(page.settled().published());
        released.addAll(page.settled().released());
        laterEpoch.addAll(page.settled().laterEpoch());
        exhausted.addAll(page.settled().exhausted());
        suspects.addAll(page.settled().suspects());
        after = page.lastSeq();
      } while (page.full());
    }
    return new Recovery(published, released, laterEpoch, exhausted, suspects);
  }
}
