package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * A migration once shipped never changes, and its version is never given to another: Flyway checks
 * each applied migration's checksum (comments included) at every run, so an edited one fails every
 * database that applied it, at each task's start and each CLI migrate, and a reused version number
 * leaves those databases with the old migration's objects under the new one's name.
 */
class ShippedMigrationsTest {
  /** Surefire runs in the connector module. */
  private static final Path MIGRATIONS = Path.of("src/main/resources/db/outbox");

  private static final Path SHIPPED = Path.of("src/test/resources/db/shipped-migrations.txt");

  @Test
  void everyMigrationIsAsShippedAndListed() throws IOException {
    Map<String, String> shipped = new TreeMap<>();
    for (String line : Files.readAllLines(SHIPPED)) {
      if (!line.isBlank() && !line.startsWith("#")) {
        String[] fields = line.split(" ");
        shipped.put(fields[0], fields[1]);
      }
    }
    Map<String, String> present = new TreeMap<>();
    try (Stream<Path> files = Files.list(MIGRATIONS)) {
      for (Path file : files.toList()) {
        present.put(file.getFileName().toString(), sha256(Files.readAllBytes(file)));
      }
    }

    assertEquals(
        shipped,
        present,
        "a shipped migration changed, was renamed or removed, or a new one is not listed yet in "
            + SHIPPED
            + " (list it when it ships; never edit a shipped one: add a migration instead)");
  }

  private static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
