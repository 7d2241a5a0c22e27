package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs {@code ./local-stack.sh} itself, with a stand-in {@code mvn} first on the PATH that records
 * how it was called and fails: what the script does before and around the build, without running
 * one. (LocalStackIT checks, against a real stack, that a running stack skips the build.)
 */
final class LocalStackScript {
  private LocalStackScript() {}

  record Result(int exit, String output, String mvnCalls) {}

  /**
   * Runs {@code bash local-stack.sh args} with its output to a pipe (not a terminal) and {@code
   * env} added; {@code mvn} is the stand-in.
   */
  static Result run(Path work, Map<String, String> env, String... args)
      throws IOException, InterruptedException {
    return run(RepoFiles.file("local-stack.sh"), work, env, args);
  }

  /** As {@link #run(Path, Map, String...)}, of the script at {@code script}. */
  static Result run(Path script, Path work, Map<String, String> env, String... args)
      throws IOException, InterruptedException {
    Path bin = Files.createDirectories(work.resolve("bin"));
    Path calls = work.resolve("mvn-calls.txt");
    Path mvn = bin.resolve("mvn");
    Files.writeString(
        mvn,
        "#!/usr/bin/env bash\n"
            + "echo \"args: $*\" >> '"
            + calls
            + "'\n"
            + "echo \"MAVEN_OPTS: ${MAVEN_OPTS:-}\" >> '"
            + calls
            + "'\n"
            + "echo 'stand-in mvn: no build here' >&2\n"
            + "exit 1\n");
    Files.setPosixFilePermissions(mvn, PosixFilePermissions.fromString("rwx------"));
    List<String> command = new java.util.ArrayList<>(List.of("bash", script.toString()));
    command.addAll(List.of(args));
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
    builder.environment().putAll(env);
    builder.environment().put("PATH", bin + ":" + System.getenv("PATH"));
    builder.redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
    Process process = builder.start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(120, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError("local-stack.sh did not finish: " + output);
    }
    String mvnCalls = Files.exists(calls) ? Files.readString(calls) : "";
    return new Result(process.exitValue(), output, mvnCalls);
  }

  static void assertNoEscapeCodes(String text) {
    assertFalse(text.contains("\u001b"), "an ANSI escape code in: " + text);
  }

  /** The build's progress line, and nothing coloured, when the output goes to a file or pipe. */
  static void assertBuiltWithoutColour(Result result) {
    assertTrue(
        result.output().contains("[build]    Building the plugin and the launcher"),
        result.output());
    assertTrue(result.output().contains("downloads about 300 MB"), result.output());
    assertTrue(result.mvnCalls().contains("-Dstyle.color=never"), result.mvnCalls());
    assertTrue(result.mvnCalls().contains("-Djansi.noreset=true"), result.mvnCalls());
    assertEquals(1, result.exit(), result.output());
    assertNoEscapeCodes(result.output());
  }
}
