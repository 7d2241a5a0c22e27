package dev.outboxrelay.cli.command;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.cli.CliException;
import dev.outboxrelay.cli.ExitCode;
import dev.outboxrelay.store.OutboxStoreException;
import java.sql.SQLException;
import org.flywaydb.core.api.FlywayException;
import org.junit.jupiter.api.Test;

/** How migrate words a failure of its Flyway calls, and which exit code it gets. */
class MigrateFailureTest {
  /**
   * A failure neither Flyway's nor the database's (a migration missing from the jar) is the CLI's
   * own: reported as internal (exit 4), never as the database's failure (exit 2) a script retries.
   */
  @Test
  void aFailureNeitherFlywaysNorTheDatabasesStaysInternal() {
    IllegalStateException bug = new IllegalStateException("no migration V9__x.sql");

    assertSame(bug, MigrateCommand.failureOf(bug));
  }

  @Test
  void aFlywayFailureWithAnSqlStateIsTheDatabases() {
    RuntimeException failure =
        MigrateCommand.failureOf(
            new FlywayException(
                "could not take the migration lock",
                new SQLException("password=secret refused", "28P01")));

    CliException cli = assertInstanceOf(CliException.class, failure);
    assertEquals(ExitCode.DATABASE, cli.exitCode());
    assertTrue(cli.getMessage().contains("28P01"), cli.getMessage());
    assertFalse(cli.getMessage().contains("secret"), cli.getMessage());
  }

  /** Classified already (no SQLException cause): its reason code is said, not "no SQLState". */
  @Test
  void aClassifiedStoreFailureKeepsItsReason() {
    RuntimeException failure =
        MigrateCommand.failureOf(
            new OutboxStoreException(
                OutboxStoreException.Kind.TRANSIENT,
                "DB_LOCK_TIMEOUT",
                "55P03",
                "inspect indexes"));

    CliException cli = assertInstanceOf(CliException.class, failure);
    assertEquals(ExitCode.DATABASE, cli.exitCode());
    assertTrue(cli.getMessage().contains("DB_LOCK_TIMEOUT"), cli.getMessage());
  }
}
