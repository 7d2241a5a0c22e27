package dev.outboxrelay.store;

import java.util.ArrayList;
import java.util.List;

/**
 * A whole exactly-once recovery or sweep, in tests: every page of a {@link RecoveryPass}, merged.
 */
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
    List<String> exhausted = new ArrayList<>();
    List<Long> suspects = new ArrayList<>();
    List<String> foreign = new ArrayList<>();
    List<String> foreignReleased = new ArrayList<>();
    RecoveryPass pass = new RecoveryPass(request, pageRows);
    while (!pass.isDone()) {
      Recovery page = pass.nextPage(store);
      published.addAll(page.published());
      released.addAll(page.released());
      exhausted.addAll(page.exhausted());
      suspects.addAll(page.suspects());
      foreign.addAll(page.foreign());
      foreignReleased.addAll(page.foreignReleased());
    }
    return new Recovery(
        published, released, pass.laterEpoch(), exhausted, suspects, foreign, foreignReleased);
  }
}
