package dev.outboxrelay.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The committed reference is exactly what the ConfigDef generates. */
class ConfigurationDocTest {
  /** Surefire runs in the connector module; the docs live at the repository root. */
  static final Path COMMITTED = Path.of("../docs/configuration.md");

  @Test
  void committedReferenceIsUpToDate() throws IOException {
    assertTrue(
        Files.exists(COMMITTED),
        "docs/configuration.md is missing; generate it from the repository root with: "
            + ConfigDocGenerator.REGENERATE);
    assertEquals(
        ConfigDocGenerator.render(),
        Files.readString(COMMITTED, StandardCharsets.UTF_8),
        "docs/configuration.md is out of date with OutboxSourceConfig; regenerate it from the"
            + " repository root with: "
            + ConfigDocGenerator.REGENERATE);
  }

  @Test
  void everyKeyIsDocumented() {
    String reference = ConfigDocGenerator.render();
    for (String key : OutboxSourceConfig.configDef().names()) {
      assertTrue(reference.contains("| `" + key + "` |"), key);
    }
  }
}
