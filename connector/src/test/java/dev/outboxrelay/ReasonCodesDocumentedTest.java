package dev.outboxrelay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every reason code a log line of the connector names ({@code reason=CODE}) is in the README's
 * table of reason codes (a row's first cell), where operators look a log line up.
 */
class ReasonCodesDocumentedTest {
  /** Surefire runs in the connector module. */
  private static final Path SOURCES = Path.of("src/main/java");

  private static final Path README = Path.of("../README.md");

  private static final Pattern LOGGED = Pattern.compile("reason=([A-Z][A-Z0-9_]+)");

  private static final Pattern CODE = Pattern.compile("`([A-Z][A-Z0-9_]+)`");

  @Test
  void everyLoggedReasonCodeIsInTheReadme() throws IOException {
    Set<String> logged = new TreeSet<>();
    try (Stream<Path> files = Files.walk(SOURCES)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
        Matcher m = LOGGED.matcher(Files.readString(file, StandardCharsets.UTF_8));
        while (m.find()) {
          logged.add(m.group(1));
        }
      }
    }
    String readme = Files.readString(README, StandardCharsets.UTF_8);
    int start = readme.indexOf("\n### Reason codes\n");
    assertTrue(start >= 0, "README.md has a section 'Reason codes'");
    int end = readme.indexOf("\n#", start + 1);
    Set<String> rowCodes = new TreeSet<>(); // a row's first cell, not a mention elsewhere
    for (String line : readme.substring(start, end < 0 ? readme.length() : end).split("\n")) {
      if (line.startsWith("| ")) {
        Matcher m = CODE.matcher(line.substring(2, line.indexOf(" |", 1)));
        while (m.find()) {
          rowCodes.add(m.group(1));
        }
      }
    }
    Set<String> missing = new TreeSet<>(logged);
    missing.removeAll(rowCodes);

    assertTrue(logged.size() > 30, "the scan found the codes: " + logged);
    assertEquals(Set.of(), missing, "reason codes logged but not in README.md's table");
  }
}
