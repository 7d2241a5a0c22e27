package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The committed docs/schema.sql is exactly what `schema-sql` prints: it cannot drift. */
class SchemaDocTest {
  /** Surefire runs in the cli module; the docs live at the repository root. */
  static final Path COMMITTED = Path.of("../docs/schema.sql");

  static final String REGENERATE =
      "mvn -B -pl cli -am package -DskipTests"
          + " && java -jar cli/target/outbox-relay-cli.jar schema-sql > docs/schema.sql";

  @Test
  void committedSchemaSqlIsWhatSchemaSqlPrints() throws IOException {
    assertTrue(
        Files.exists(COMMITTED),
        "docs/schema.sql is missing; generate it from the repository root with: " + REGENERATE);
    Cli.Result printed = new Cli().run("schema-sql");
    assertEquals(ExitCode.OK, printed.exitCode(), printed::toString);
    assertEquals(
        printed.out(),
        Files.readString(COMMITTED, StandardCharsets.UTF_8),
        "docs/schema.sql is out of date with the migrations; regenerate it from the repository"
            + " root with: "
            + REGENERATE);
  }
}
