package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A server older than 13 is refused in words naming its version, before any migration runs; the
 * servers the tests start (17, and 13 in the oldest-postgres run) pass, their version read right.
 */
class ServerVersionTest {
  @ParameterizedTest(name = "{0}: {1}")
  @CsvSource({"170011, 17.11", "130000, 13", "130023, 13.23", "120022, 12.22", "90624, 9.6.24"})
  void aVersionIsNamedAsPostgresqlNamesIt(int versionNum, String named) {
    assertEquals(named, ServerVersion.named(versionNum));
  }

  @Test
  void aServerOlderThanTheOldestSupportedIsRefusedNamingBoth() {
    assertEquals(
        Optional.of(
            "the server is PostgreSQL 12.22; outbox-relay needs 13 or newer (docs/deployment.md)"),
        ServerVersion.refusal(120022, ServerVersion.OLDEST_SUPPORTED));
    assertEquals(Optional.empty(), ServerVersion.refusal(130000, ServerVersion.OLDEST_SUPPORTED));
    assertEquals(Optional.empty(), ServerVersion.refusal(170011, ServerVersion.OLDEST_SUPPORTED));
  }

  @Test
  void theTestServerIsReadAndPasses() throws SQLException {
    try (Connection c = Postgres.server().getPostgresDatabase().getConnection()) {
      assertEquals(
          c.getMetaData().getDatabaseMajorVersion(), ServerVersion.serverVersionNum(c) / 10000);
      assertEquals(Optional.empty(), ServerVersion.refusal(c));
      ServerVersion.require(c); // does not throw
      // The same server judged against a minimum past it: refused, naming its version.
      int versionNum = ServerVersion.serverVersionNum(c);
      assertEquals(
          "the server is PostgreSQL "
              + ServerVersion.named(versionNum)
              + "; outbox-relay needs 99 or newer (docs/deployment.md)",
          ServerVersion.refusal(versionNum, 990000).orElseThrow());
    }
  }
}
