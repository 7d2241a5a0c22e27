package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A URL the driver refuses is said without being quoted: its query string may hold a password. */
class DatabaseTest {
  @Test
  void aUrlTheDriverRefusesIsNotQuoted() {
    Database db =
        new Database(
            "jdbc:postgresql://db:5432?user=a&password=SENTINEL-9", "a", Optional.empty(), false);

    StackException e = assertThrows(StackException.class, db::dataSource);

    assertFalse(e.getMessage().contains("SENTINEL"), e.getMessage());
    assertTrue(e.getMessage().startsWith("--jdbc-url (or LOCAL_STACK_JDBC_URL)"), e.getMessage());
  }
}
