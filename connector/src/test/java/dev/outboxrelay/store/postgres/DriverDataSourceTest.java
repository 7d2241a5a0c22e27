package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

  @Test
  void neverRendersTheUrl() {
    DriverDataSource ds =
        new DriverDataSource("jdbc:postgresql://h/db?password=SENTINEL-1", new Properties());
    assertFalse(ds.toString().contains("SENTINEL"));
    assertFalse(ds.toString().contains("jdbc:"));
  }
}
