package dev.outboxrelay.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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

  /**
   * Connect returns a literal password in clear from {@code GET /connectors/<name>/config}; only
   * validation responses mask it (BadConfigAndPoisonRowTest shows both). The advice must not
   * promise more.
   */
  @Test
  void passwordAdviceDoesNotPromiseMasking() throws IOException {
    String doc =
        OutboxSourceConfig.configDef().configKeys().get("connection.password").documentation;
    String readme = Files.readString(Path.of("../README.md"), StandardCharsets.UTF_8);

    for (String text : List.of(doc, readme)) {
      assertFalse(text.contains("Connect masks it"), text);
    }
    assertTrue(doc.contains("${file:") && doc.contains("${env:"), doc);
    assertTrue(doc.contains("in clear") && doc.contains("only validation responses mask it"), doc);
    assertTrue(readme.contains("only validation responses mask it"), "README.md");
  }

  @Test
  void everyKeyIsDocumented() {
    String reference = ConfigDocGenerator.render();
    for (String key : OutboxSourceConfig.configDef().names()) {
      assertTrue(reference.contains("| `" + key + "` |"), key);
    }
  }
}
