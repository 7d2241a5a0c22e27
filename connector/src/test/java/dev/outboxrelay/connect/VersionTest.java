package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The version Connect shows is the build's: the jar's manifest has none, so every release showed
 * the fallback 0.1.0-SNAPSHOT.
 */
class VersionTest {
  @Test
  void theVersionIsTheBuildsOwn() throws IOException {
    // The module's pom (the tests run in its directory): the parent's version is the project's.
    Matcher parent =
        Pattern.compile("<parent>.*?<version>([^<]+)</version>", Pattern.DOTALL)
            .matcher(Files.readString(Path.of("pom.xml")));
    assertEquals(true, parent.find(), "pom.xml names its parent's version");

    assertEquals(parent.group(1), Version.get());
    assertEquals(Version.get(), new OutboxSourceConnector().version());
    assertEquals(Version.get(), new OutboxSourceTask().version());
  }
}
