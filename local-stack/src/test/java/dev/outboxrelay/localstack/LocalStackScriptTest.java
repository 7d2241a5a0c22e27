package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
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

  @Test
  void theUsersMavenOptionsAreKept() throws Exception {
    LocalStackScript.Result result =
        LocalStackScript.run(
            work, Map.of("MAVEN_OPTS", "-Xmx700m"), "--state-dir=" + work.resolve("state"));

    assertTrue(
        result.mvnCalls().contains("MAVEN_OPTS: -Xmx700m -Djansi.noreset=true"), result.mvnCalls());
  }
}
