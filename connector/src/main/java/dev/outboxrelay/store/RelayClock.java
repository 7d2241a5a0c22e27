package dev.outboxrelay.store;

import java.time.Instant;

/**
 * The one clock that leases and due times are judged by.
 *
 * <p>In production every worker uses the database's clock ({@link #database()}): a lease written by
 * one worker and judged by another cannot be skewed by their host clocks. Tests substitute a manual
 * clock so that expiry and backoff can be crossed without sleeping; both stores honour it.
 */
public interface RelayClock {

  /** The instant to use as "now", or null to use the store's own clock (the database's). */
  Instant override();

  static RelayClock database() {
    return () -> null;
  }
}
