package dev.outboxrelay.store;

import java.util.List;

/**
 * What a recovery did: rows recorded PUBLISHED because a committed offset covers them (reason
 * {@link ReasonCodes#RECOVERED_FROM_OFFSETS}), and rows released to be sent again.
 */
public record Recovery(List<String> published, List<String> released) {
  public static final Recovery NONE = new Recovery(List.of(), List.of());

  public Recovery {
    published = List.copyOf(published);
    released = List.copyOf(released);
  }

  public boolean isEmpty() {
    return published.isEmpty() && released.isEmpty();
  }
}
