package dev.outboxrelay.store;

import java.util.regex.Pattern;

/** Reason codes are short upper-case tokens, never free text: they end up in rows and logs. */
public final class ReasonCodes {
  /** An isolated claim was abandoned again and that spent the last attempt. */
  public static final String ABANDONED_IN_ISOLATION = "ABANDONED_IN_ISOLATION";

  /**
   * A due row had already spent the attempt budget, which was lowered since (PENDING or AMBIGUOUS
   * rows at or over {@code max.attempts} would otherwise wait for ever).
   */
  public static final String ATTEMPTS_BUDGET_LOWERED = "ATTEMPTS_BUDGET_LOWERED";

  /**
   * Exactly-once: a restarted task found the row's record committed to Kafka (a committed source
   * offset covers its position) and recorded it PUBLISHED without sending it again.
   */
  public static final String RECOVERED_FROM_OFFSETS = "RECOVERED_FROM_OFFSETS";

  /**
   * Exactly-once: a recovery released a row under another connector's expired lease (two connectors
   * on one instance key); that connector may have sent it, so it may reach Kafka twice. Logged, not
   * written to the row.
   */
  public static final String FOREIGN_LEASE_RELEASED = "FOREIGN_LEASE_RELEASED";

  /**
   * An operator parked the row by hand ({@code outbox-relay-cli park}): FAILED, as a poison row, so
   * that requeue and discard take it.
   */
  public static final String PARKED_BY_OPERATOR = "PARKED_BY_OPERATOR";

  /**
   * Mapping the claimed row to its record threw (a bug of the connector): parked FAILED, without a
   * dead-letter record, before the task fails for it, so that it fails no other.
   */
  public static final String MAPPING_FAILED = "MAPPING_FAILED";

  private static final Pattern CODE = Pattern.compile("[A-Z0-9_]{1,64}");

  private ReasonCodes() {}

  public static String require(String code) {
    if (code == null || !CODE.matcher(code).matches()) {
      throw new IllegalArgumentException("reason code must match [A-Z0-9_]{1,64}");
    }
    return code;
  }
}
