package dev.outboxrelay.cli.command;

import dev.outboxrelay.cli.CliException;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;

/**
 * A "published before" cutoff: a date (midnight UTC), an instant with an offset, or an age relative
 * to the database clock. A local time without an offset is refused: it would depend on where the
 * CLI runs.
 */
record Cutoff(Instant instant, Duration age) {
  static final String FORMS =
      "a date (2024-01-31, midnight UTC), an instant with an offset (2024-01-31T12:00:00Z)"
          + " or an age (P30D, PT12H)";

  /** A thousand years: older than any row, and within PostgreSQL's timestamps from today. */
  static final Duration MAX_AGE = Duration.ofDays(365_243);

  private static final Instant EARLIEST = Instant.parse("0001-01-01T00:00:00Z");
  private static final Instant LATEST = Instant.parse("9999-12-31T23:59:59Z");

  static Cutoff parse(String option, String value) {
    String v = value.strip();
    try {
      if (v.startsWith("P") || v.startsWith("p")) {
        Duration age = Duration.parse(v);
        if (age.isNegative() || age.isZero()) {
          throw CliException.usage(option + " must be a positive age");
        }
        if (age.compareTo(MAX_AGE) > 0) {
          // Taken back from "now", a larger one would leave the range of instants.
          throw CliException.usage(
              option + " must be an age of at most " + MAX_AGE.toDays() + " days");
        }
        return new Cutoff(null, age);
      }
      Instant instant =
          v.length() == 10
              ? LocalDate.parse(v).atStartOfDay(ZoneOffset.UTC).toInstant()
              : OffsetDateTime.parse(v).toInstant();
      if (instant.isBefore(EARLIEST) || instant.isAfter(LATEST)) {
        // PostgreSQL's timestamps end at 4713 BC; the database would refuse it after connecting.
        throw CliException.usage(option + " must lie in the years 0001 to 9999");
      }
      return new Cutoff(instant, null);
    } catch (DateTimeException e) {
      throw CliException.usage(option + " must be " + FORMS);
    }
  }

  /** The instant, an age being taken back from the database's "now". */
  Instant resolve(Instant databaseNow) {
    return instant != null ? instant : databaseNow.minus(age);
  }
}
