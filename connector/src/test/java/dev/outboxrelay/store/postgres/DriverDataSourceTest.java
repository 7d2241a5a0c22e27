package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

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

  @Test
  void neverRendersTheUrl() {
    DriverDataSource ds =
        new DriverDataSource("jdbc:postgresql://h/db?password=SENTINEL-1", new Properties());
    assertFalse(ds.toString().contains("SENTINEL"));
    assertFalse(ds.toString().contains("jdbc:"));
  }
}
