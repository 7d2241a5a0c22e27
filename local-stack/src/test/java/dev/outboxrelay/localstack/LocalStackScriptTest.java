package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ./local-stack.sh}'s own steps, with a stand-in {@code mvn} (see LocalStackScript). */
class LocalStackScriptTest {
  @TempDir Path work;

  @Test
  void upWithoutARunningStackSaysItBuildsAndAsksMavenForNoColourInAFile() throws Exception {
    LocalStackScript.Result result =
        LocalStackScript.run(work, Map.of(), "up", "--state-dir=" + work.resolve("state"));

    LocalStackScript.assertBuiltWithoutColour(result);
    assertTrue(result.mvnCalls().contains("args: -B -q -Dstyle.color=never -DskipTests"));
    assertTrue(
        result.output().contains("local-stack: the build failed (see the Maven output above)."),
        result.output());
  }

  /**
   * A Java 17 runtime without a compiler (Debian's default-jre-headless, which 'apt-get install
   * maven' brings) is refused before the build, naming a JDK: it passed the version check, and the
   * build died in a stack trace of the formatter's. The runtime's own modules tell, not a javac
   * beside it, which a shim or wrapper (mise, eselect) does not have: such a JDK builds.
   */
  @Test
  void aJavaRuntimeWithoutACompilerIsRefusedBeforeTheBuild() throws Exception {
    LocalStackScript.Result jre = upWithJava("jre-17", "java.base@17.0.15");

    assertEquals(1, jre.exit(), jre.output());
    assertTrue(jre.output().contains("without a compiler"), jre.output());
    assertTrue(jre.output().contains("JDK 17"), jre.output());
    assertEquals("", jre.mvnCalls(), "no build");

    LocalStackScript.Result jdk = upWithJava("shim", "java.base@17.0.15\\njdk.compiler@17.0.15");
    assertFalse(jdk.output().contains("without a compiler"), jdk.output());
    assertTrue(jdk.output().contains("[build]"), jdk.output()); // past the check
  }

  /**
   * {@code up} with JAVA_HOME at a stand-in Java 17 whose --list-modules prints {@code modules}.
   */
  private LocalStackScript.Result upWithJava(String home, String modules) throws Exception {
    Path java = Files.createDirectories(work.resolve(home + "/bin")).resolve("java");
    Files.writeString(
        java,
        "#!/usr/bin/env bash\n"
            + "if [[ \"$1\" == --list-modules ]]; then printf '"
            + modules
            + "\\n'; exit 0; fi\n"
            + "echo 'openjdk version \"17.0.15\" 2025-04-15' >&2\n");
    Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwx------"));
    return LocalStackScript.run(
        work,
        Map.of("JAVA_HOME", work.resolve(home).toString()),
        "up",
        "--state-dir=" + work.resolve("state"));
  }

  /**
   * Help, asked any way the launcher understands, is the launcher's usage, printed by the script:
   * no build, no Java, and never taken for {@code up}.
   */
  @Test
  void helpPrintsTheLaunchersUsageWithoutABuild() throws Exception {
    for (String[] args :
        new String[][] {
          {"--help"}, {"-h"}, {"help"}, {"down", "--help"}, {"up", "--no-build", "-h"}
        }) {
      LocalStackScript.Result result =
          LocalStackScript.run(work, Map.of("JAVA_HOME", work.resolve("no-jdk").toString()), args);

      assertEquals(0, result.exit(), String.join(" ", args) + ": " + result.output());
      assertEquals(StackOptions.USAGE.strip(), result.output().strip(), String.join(" ", args));
      assertEquals("", result.mvnCalls(), String.join(" ", args) + " ran mvn");
    }
  }

  /**
   * One build at a time in a checkout: a run that finds another one building says so and builds
   * nothing (both built into the same target/ folders); a lock left by a killed run is taken over,
   * and released when the build ends.
   */
  @Test
  void oneBuildAtATimeAndALockLeftByAKilledRunIsTakenOver() throws Exception {
    Path lock = RepoFiles.file(".local-stack-build.lock");
    String state = "--state-dir=" + work.resolve("state");
    try {
      Files.createDirectories(lock);
      Files.writeString(lock.resolve("pid"), Long.toString(ProcessHandle.current().pid()));
      LocalStackScript.Result busy = LocalStackScript.run(work, Map.of(), "up", state);
      assertEquals(1, busy.exit(), busy.output());
      assertTrue(busy.output().contains("is building in this checkout"), busy.output());
      assertEquals("", busy.mvnCalls(), "no second build");

      Files.writeString(lock.resolve("pid"), "2147483646"); // no such process: a killed run's
      LocalStackScript.Result taken = LocalStackScript.run(work, Map.of(), "up", state);
      assertTrue(taken.mvnCalls().contains("args: "), taken.output());
      assertFalse(Files.exists(lock), "released when the build ended (here, failed)");
    } finally {
      Files.deleteIfExists(lock.resolve("pid"));
      Files.deleteIfExists(lock);
    }
  }

  /**
   * In a checkout whose launcher is not built (after mvn clean, or not compiling), down and running
   * answer without a build when no pid file says a process runs: before, both ran Maven, and down
   * stopped nothing and said only that the build failed.
   */
  @Test
  void downAndRunningNeedNoBuildWhenNothingWasStarted() throws Exception {
    Path checkout = Files.createDirectories(work.resolve("checkout"));
    Path script = checkout.resolve("local-stack.sh");
    Files.copy(RepoFiles.file("local-stack.sh"), script);
    String state = "--state-dir=" + work.resolve("state");

    LocalStackScript.Result running =
        LocalStackScript.run(script, work, Map.of(), "running", state);
    assertEquals(1, running.exit(), running.output());
    assertEquals("", running.output());
    LocalStackScript.Result down = LocalStackScript.run(script, work, Map.of(), "down", state);
    assertEquals(0, down.exit(), down.output());
    assertTrue(down.output().contains("Nothing of the local stack runs."), down.output());
    assertEquals("", running.mvnCalls() + down.mvnCalls(), "no build");

    // A pid file: something may run, so the launcher is built to stop it.
    Files.createDirectories(work.resolve("state").resolve("pids"));
    Files.writeString(work.resolve("state").resolve("pids").resolve("kafka.pid"), "2147483646\n");
    LocalStackScript.Result recorded = LocalStackScript.run(script, work, Map.of(), "down", state);
    assertTrue(recorded.mvnCalls().contains("args: "), recorded.output());
    // The stand-in build fails, as a checkout mid-edit does: down says how to stop it by hand.
    assertEquals(1, recorded.exit(), recorded.output());
    assertTrue(
        recorded.output().contains("pids are in " + work.resolve("state") + "/pids/"),
        recorded.output());

    // Found where the launcher looks: under another checkout's .local-stack (--repo-root), and in a
    // state directory whose name a glob would read otherwise.
    Path other = work.resolve("other");
    Files.createDirectories(other.resolve(".local-stack").resolve("pids"));
    Files.writeString(other.resolve(".local-stack/pids/kafka.pid"), "2147483646\n");
    Files.deleteIfExists(work.resolve("mvn-calls.txt"));
    LocalStackScript.Result elsewhere =
        LocalStackScript.run(script, work, Map.of(), "down", "--repo-root=" + other);
    assertTrue(elsewhere.mvnCalls().contains("args: "), elsewhere.output());
    Path bracketed = work.resolve("st[1]");
    Files.createDirectories(bracketed.resolve("pids"));
    Files.writeString(bracketed.resolve("pids").resolve("kafka.pid"), "2147483646\n");
    Files.deleteIfExists(work.resolve("mvn-calls.txt"));
    LocalStackScript.Result globbed =
        LocalStackScript.run(script, work, Map.of(), "down", "--state-dir=" + bracketed);
    assertTrue(globbed.mvnCalls().contains("args: "), globbed.output());
  }

  @Test
  void theUsersMavenOptionsAreKept() throws Exception {
    LocalStackScript.Result result =
        LocalStackScript.run(
            work, Map.of("MAVEN_OPTS", "-Xmx700m"), "--state-dir=" + work.resolve("state"));

    assertTrue(
        result.mvnCalls().contains("MAVEN_OPTS: -Xmx700m -Djansi.noreset=true"), result.mvnCalls());
  }
}
