package dev.outboxrelay.store;

import java.time.Duration;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;

/**
 * Counts and lag for one owner's instance keys, never anyone else's.
 *
 * @param countsByStatus rows per status; PUBLISHED is absent unless it was asked for
 * @param lag age of the oldest row still awaiting delivery (PENDING, AMBIGUOUS or IN_FLIGHT); zero
 *     when there is none
 */
public record BacklogSnapshot(Map<MessageStatus, Long> countsByStatus, Duration lag) {
  public BacklogSnapshot {
    EnumMap<MessageStatus, Long> copy = new EnumMap<>(MessageStatus.class);
    copy.putAll(countsByStatus);
    countsByStatus = Collections.unmodifiableMap(copy);
  }

  public long count(MessageStatus status) {
    return countsByStatus.getOrDefault(status, 0L);
  }
}
