package dev.outboxrelay.cli;

import dev.outboxrelay.store.postgres.SchemaMigrator;
import java.time.Duration;
import picocli.CommandLine.Option;

/**
 * How long a command that changes rows (requeue, discard, park, purge) waits for a lock: while it
 * waits it holds the locks of the rows it took before, and the relay's writes to those rows (a
 * publish, a lease renewal) queue behind it. The same bound and default as migrate's.
 */
public final class LockTimeoutOption {
  private static final long MAX_MS = 3_600_000L;

  @Option(
      names = "--lock-timeout",
      paramLabel = "MS",
      description =
          "Longest a change waits for a lock on a row or the table, in milliseconds, at most"
              + " 3600000 (0: the server's own lock_timeout, by default no limit). A change that"
              + " waits holds the rows it locked before, and the relay's writes to them wait"
              + " too; past it the change is rolled back. Default: ${DEFAULT-VALUE}.")
  long lockTimeoutMs = SchemaMigrator.DEFAULT_LOCK_TIMEOUT.toMillis();

  /** The bound, zero for the server's own; a usage error when out of range. */
  public Duration lockTimeout() {
    return checked(lockTimeoutMs);
  }

  /** {@code ms} as a --lock-timeout (migrate's too); a usage error when out of range. */
  public static Duration checked(long ms) {
    if (ms < 0 || ms > MAX_MS) {
      throw CliException.usage("--lock-timeout must be within 0 and 3600000 milliseconds");
    }
    return Duration.ofMillis(ms);
  }
}
