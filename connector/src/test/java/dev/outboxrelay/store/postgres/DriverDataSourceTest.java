package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.outboxrelay.testing.Postgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/** URL parameters travel as properties, so nothing that logs the URL can print them. */
class DriverDataSourceTest {

  @Test
  void urlParametersOverrideDefaultsAndReachTheServer() throws SQLException {
    String url = Postgres.freshDatabase("driverds") + "?ApplicationName=from%20url&foo";
    Properties defaults = new Properties();
    defaults.setProperty("user", Postgres.user());
    defaults.setProperty("ApplicationName", "default");
    DriverDataSource ds = new DriverDataSource(url, defaults);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW application_name")) {
      rs.next();
      assertEquals("from url", rs.getString(1));
    }
  }

  /**
   * The server's DETAIL stays out of the driver's messages even where the URL asks for it: it
   * quotes row values (here a duplicate key's), and HikariCP logs such messages.
   */
  @Test
  void theServersDetailStaysOutWhateverTheUrlSays() throws SQLException {
    String url = Postgres.freshDatabase("driverdetail") + "?logServerErrorDetail=true";
    Properties defaults = new Properties();
    defaults.setProperty("user", Postgres.user());
    try (Connection c = new DriverDataSource(url, defaults).getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE t (id text PRIMARY KEY)");
      s.execute("INSERT INTO t VALUES ('SENTINEL-2')");
      SQLException duplicate =
          assertThrows(SQLException.class, () -> s.execute("INSERT INTO t VALUES ('SENTINEL-2')"));
      assertEquals("23505", duplicate.getSQLState());
      assertFalse(duplicate.getMessage().contains("SENTINEL"), duplicate.getMessage());
    }
  }

  /**
   * A failure to connect carries its SQLState and nothing of the driver's text, which the pool logs
   * with its cause chain: the server's pg_hba or authentication line, or the host and port.
   */
  @Test
  void aFailureToConnectCarriesItsSqlStateAndNoText() {
    String url = Postgres.freshDatabase("driverfail");
    Properties wrongUser = new Properties();
    wrongUser.setProperty("user", "SENTINEL_no_such_role");
    SQLException refused =
        assertThrows(
            SQLException.class, () -> new DriverDataSource(url, wrongUser).getConnection());
    assertEquals("28000", refused.getSQLState());
    assertEquals("outbox-relay: could not connect (SQLState 28000)", refused.getMessage());
    assertNull(refused.getCause());

    Properties user = new Properties();
    user.setProperty("user", Postgres.user());
    String closedPort = "jdbc:postgresql://127.0.0.1:1/SENTINEL_db";
    SQLException unreachable =
        assertThrows(
            SQLException.class, () -> new DriverDataSource(closedPort, user).getConnection());
    assertEquals("08001", unreachable.getSQLState());
    assertFalse(unreachable.toString().contains("127.0.0.1"), unreachable.toString());
    assertNull(unreachable.getCause());
  }

  /** An interrupted wait keeps its cause: the relay tells a stopping task's by it. */
  @Test
  void anInterruptKeepsItsCause() {
    SQLException e = new SQLException("SENTINEL", null, 0, new InterruptedException());
    SQLException bare = DriverDataSource.withoutText(e, "could not connect");
    assertInstanceOf(InterruptedException.class, bare.getCause());
    assertFalse(bare.getMessage().contains("SENTINEL"));
    assertInstanceOf(
        java.sql.SQLTransientException.class,
        DriverDataSource.withoutText(
            new java.sql.SQLTransientConnectionException("x", "08006"), "could not connect"));
  }

  /**
   * The driver links the I/O error behind a session the server ended (25P03, then 08006), and
   * HikariCP reads the chain's states to evict the connection: the chain is kept, without text.
   */
  @Test
  void theChainOfFailuresIsKeptWithoutText() {
    SQLException ended = new SQLException("SENTINEL ended", "25P03");
    ended.setNextException(new java.sql.SQLRecoverableException("SENTINEL io", "08006"));
    SQLException bare = DriverDataSource.withoutText(ended, "execute failed");
    assertEquals("25P03", bare.getSQLState());
    assertEquals("08006", bare.getNextException().getSQLState());
    assertInstanceOf(java.sql.SQLRecoverableException.class, bare.getNextException());
    assertFalse(bare.getNextException().getMessage().contains("SENTINEL"));
    assertNull(bare.getNextException().getNextException());
  }

  @Test
  void neverRendersTheUrl() {
    DriverDataSource ds =
        new DriverDataSource("jdbc:postgresql://h/db?password=SENTINEL-1", new Properties());
    assertFalse(ds.toString().contains("SENTINEL"));
    assertFalse(ds.toString().contains("jdbc:"));
  }
}
