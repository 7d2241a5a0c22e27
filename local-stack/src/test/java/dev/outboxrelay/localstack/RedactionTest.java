package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class RedactionTest {
  @Test
  void masksPasswordParametersAndUserInfo() {
    assertEquals(
        "jdbc:postgresql://db:5432/app?user=app&password=****&sslmode=require",
        Redaction.jdbcUrl(
            "jdbc:postgresql://db:5432/app?user=app&password=hunter2&sslmode=require"));
    assertEquals(
        "jdbc:postgresql://db/app?sslpassword=****",
        Redaction.jdbcUrl("jdbc:postgresql://db/app?sslpassword=k3y"));
    assertEquals("jdbc:postgresql://****", Redaction.jdbcUrl("jdbc:postgresql://app:pw@db/app"));
  }

  /**
   * Read as the connector reads a URL: a password holding a '/' is user information still, and a
   * parameter name the relay's data source decodes to "password" names one.
   */
  @Test
  void findsPasswordsWhereTheConnectorWouldReadThem() {
    for (String url :
        List.of(
            "jdbc:postgresql://app:pa/ss@db:5432/app",
            "jdbc:postgresql://db/app?pass%77ord=s3cret",
            "jdbc:postgresql://db/app?user=app&Password=s3cret",
            "jdbc:postgresql://db/app;password=s3cret")) {
      assertTrue(Redaction.carriesPassword(url), url);
      assertFalse(Redaction.jdbcUrl(url).contains("ss@"), url);
      assertFalse(Redaction.jdbcUrl(url).contains("s3cret"), url);
    }
    assertFalse(
        Redaction.carriesPassword("jdbc:postgresql://db:5432/app?user=app&sslmode=require"));
  }

  @Test
  void leavesUrlsWithoutSecretsAlone() {
    String url = "jdbc:postgresql://127.0.0.1:15432/outbox";
    assertEquals(url, Redaction.jdbcUrl(url));
    assertFalse(Redaction.carriesPassword(url));
  }

  /** A library's message may quote the URL: its password is masked, the rest kept. */
  @Test
  void masksPasswordsInAMessage() {
    assertEquals(
        "Unable to connect to jdbc:postgresql://app:****@db/app?password=**** (timeout)",
        Redaction.text(
            "Unable to connect to jdbc:postgresql://app:pa/ss@db/app?password=k3y (timeout)"));
    assertEquals(
        "jdbc:postgresql://app:****@db/app", Redaction.text("jdbc:postgresql://app:pa:ss@db/app"));
  }
}
