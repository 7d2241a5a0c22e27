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
 * Every reason code a log line of the connector names ({@code reason=CODE}, or a constant of the
 * classes that hold reason codes, logged as {@code reason={}}) is in the README's table of reason
 * codes (a row's first cell), where operators look a log line up; and every code the table lists is
 * still named by the connector's or the CLI's code.
 */
class ReasonCodesDocumentedTest {
  /** Surefire runs in the connector module. */
  private static final Path SOURCES = Path.of("src/main/java");

  private static final Path README = Path.of("../README.md");

  private static final Pattern LOGGED = Pattern.compile("reason=([A-Z][A-Z0-9_]+)");

  private static final Pattern CODE = Pattern.compile("`([A-Z][A-Z0-9_]+)`");

  /** The classes whose string constants are reason codes, logged through {@code reason={}}. */
  private static final Set<Path> CODE_CLASSES =
      Set.of(
          SOURCES.resolve("dev/outboxrelay/store/ReasonCodes.java"),
          SOURCES.resolve("dev/outboxrelay/mapping/UnpublishableReasons.java"));

  private static final Pattern CONSTANT =
      Pattern.compile("static final String \\w+\\s*=\\s*\"([A-Z][A-Z0-9_]+)\"");

  /** Where a code the table lists must still be named. */
  private static final Set<Path> EMITTERS =
      Set.of(SOURCES, Path.of("../cli/src/main/java"), Path.of("../writer/src/main/java"));

  private static final Pattern BLOCK_COMMENT = Pattern.compile("(?s)/\\*.*?\\*/");

  /**
   * A line's {@code //} comment, whole-line or trailing; group 1 is the code before it, whose
   * string and character literals may hold {@code //} ({@code "jdbc:postgresql://"}).
   */
  private static final Pattern LINE_COMMENT =
      Pattern.compile(
          "(?m)^((?:[^\"'/\\n]|\"(?:\\\\.|[^\"\\\\\\n])*\"|'(?:\\\\.|[^'\\\\\\n])+'|/(?!/))*)//.*$");

  @Test
  void everyLoggedReasonCodeIsInTheReadme() throws IOException {
    Set<String> logged = new TreeSet<>();
    try (Stream<Path> files = Files.walk(SOURCES)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
        String text = Files.readString(file, StandardCharsets.UTF_8);
        Matcher m = LOGGED.matcher(text);
        while (m.find()) {
          logged.add(m.group(1));
        }
        if (CODE_CLASSES.contains(file)) {
          Matcher c = CONSTANT.matcher(text);
          while (c.find()) {
            logged.add(c.group(1));
          }
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
    assertTrue(logged.contains("PAYLOAD_TOO_LARGE"), "the constants too: " + logged);
    assertEquals(Set.of(), missing, "reason codes logged but not in README.md's table");

    Set<String> stale = new TreeSet<>(rowCodes);
    for (Path root : EMITTERS) {
      try (Stream<Path> files = Files.walk(root)) {
        for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
          // Code, not comments; the code whole (FOO is not named by FOO_BAR).
          String withoutBlocks =
              BLOCK_COMMENT.matcher(Files.readString(file, StandardCharsets.UTF_8)).replaceAll(" ");
          String code = LINE_COMMENT.matcher(withoutBlocks).replaceAll("$1");
          stale.removeIf(c -> Pattern.compile("\\b" + c + "\\b").matcher(code).find());
        }
      }
    }
    assertEquals(Set.of(), stale, "README.md's table lists codes nothing names any more");
  }
}
