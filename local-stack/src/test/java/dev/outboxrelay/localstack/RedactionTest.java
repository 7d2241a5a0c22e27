package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
    assertEquals(
        "jdbc:postgresql://app:****@db/app", Redaction.jdbcUrl("jdbc:postgresql://app:pw@db/app"));
  }

  @Test
  void leavesUrlsWithoutSecretsAlone() {
    String url = "jdbc:postgresql://127.0.0.1:15432/outbox";
    assertEquals(url, Redaction.jdbcUrl(url));
  }
}
