package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.SQLException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The privileges docs/operator-cli.md lists are enough for an operator role. */
class PrivilegesTest {
  private OutboxFixture outbox;

  @BeforeEach
  void outbox() throws SQLException {
    TestDatabase.ensurePasswordRole();
    outbox = OutboxFixture.populated("privileges");
    String role = TestDatabase.PASSWORD_ROLE;
    outbox.exec("GRANT SELECT, DELETE ON outbox, outbox_published TO " + role);
    outbox.exec(
        "GRANT UPDATE (status, attempts, next_attempt_at, last_failure_code, isolated,"
            + " lease_owner, lease_expires_at, lease_token, parked_at, kafka_topic,"
            + " kafka_partition, kafka_offset) ON outbox TO "
            + role);
  }

  @AfterEach
  void close() {
    outbox.close();
  }

  private Cli operator() {
    return new Cli()
        .env(ConnectionOptions.JDBC_URL_ENV, outbox.url)
        .env(ConnectionOptions.USER_ENV, TestDatabase.PASSWORD_ROLE)
        .env(ConnectionOptions.PASSWORD_ENV, TestDatabase.PASSWORD);
  }

  /** Purge takes the table's old published rows FOR UPDATE: UPDATE on any one column. */
  @Test
  void aRoleThatOnlyPurgesNeedsUpdateOnOneColumnToo() throws SQLException {
    String role = TestDatabase.PASSWORD_ROLE;
    outbox.exec("REVOKE UPDATE ON outbox FROM " + role);
    Cli.Result refused = operator().forKey("eu", "purge", "--published-before", "2021-01-01");
    assertEquals(ExitCode.DATABASE, refused.exitCode(), refused::toString);
    assertTrue(refused.err().contains("DB_PERMISSION_DENIED"), refused::toString);

    outbox.exec("GRANT UPDATE (status) ON outbox TO " + role);
    Cli.Result purge = operator().forKey("eu", "purge", "--published-before", "2021-01-01");
    assertEquals(ExitCode.OK, purge.exitCode(), purge::toString);
  }

  /** A dry run of park only reads: a role without UPDATE may run it, not the park itself. */
  @Test
  void aReadOnlyRoleMayDryRunAParkOnly() throws SQLException {
    outbox.exec("REVOKE UPDATE ON outbox FROM " + TestDatabase.PASSWORD_ROLE);
    Cli.Result dry = operator().forKey("eu", "park", "--message-id", "eu-pending", "--dry-run");
    assertEquals(ExitCode.OK, dry.exitCode(), dry::toString);
    Cli.Result refused = operator().forKey("eu", "park", "--message-id", "eu-pending");
    assertEquals(ExitCode.DATABASE, refused.exitCode(), refused::toString);
    assertTrue(refused.err().contains("DB_PERMISSION_DENIED"), refused::toString);
  }

  @Test
  void anOperatorRoleCanRequeueDiscardParkAndPurge() {
    Cli cli = operator();

    Cli.Result requeue = cli.forKey("eu", "requeue", "--all");
    assertEquals(ExitCode.OK, requeue.exitCode(), requeue::toString);
    Cli.Result byId = cli.forKey("eu", "requeue", "--message-id", "eu-failed-1");
    assertEquals(ExitCode.NOTHING_MATCHED, byId.exitCode(), byId::toString);
    Cli.Result discard = cli.forKey("us", "discard", "--all");
    assertEquals(ExitCode.OK, discard.exitCode(), discard::toString);
    Cli.Result park = cli.forKey("us", "park", "--message-id", "us-pending");
    assertEquals(ExitCode.OK, park.exitCode(), park::toString);
    Cli.Result purge = cli.forKey("eu", "purge", "--published-before", "2021-01-01");
    assertEquals(ExitCode.OK, purge.exitCode(), purge::toString);
    assertEquals(ExitCode.OK, cli.forKey("eu", "status").exitCode());
    Cli.Result published = cli.forKey("eu", "list", "--status", "PUBLISHED");
    assertEquals(ExitCode.OK, published.exitCode(), published::toString);
    Cli.Result inspect = cli.forKey("eu", "inspect", "eu-published-new");
    assertEquals(ExitCode.OK, inspect.exitCode(), inspect::toString);
  }
}
