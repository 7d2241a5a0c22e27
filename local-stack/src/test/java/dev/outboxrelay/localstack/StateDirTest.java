package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A state directory named by --state-dir or LOCAL_STACK_HOME may be anything (a checkout, a home):
 * the stack cleans only one that holds nothing but what it writes. Until this release, up deleted
 * all such a directory held, and down its kafka/ and the like.
 */
class StateDirTest {
  @Test
  void aDirectoryHoldingAnythingElseIsNeverCleaned(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("notes.txt"), "mine");
    Files.createDirectories(dir.resolve("kafka"));
    Files.writeString(dir.resolve("kafka/x"), "an install of my own");
    StateDir state = new StateDir(dir);

    StackException wipe = assertThrows(StackException.class, state::wipe);
    assertTrue(wipe.getMessage().contains("holds notes.txt, which the local stack does not write"));
    assertThrows(StackException.class, state::clearAfterStop);
    assertTrue(Files.exists(dir.resolve("notes.txt")));
    assertTrue(Files.exists(dir.resolve("kafka/x")));

    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit =
        LocalStack.run(
            new String[] {"down", "--state-dir=" + dir, "--repo-root=" + dir},
            Map.of(),
            new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(1, exit, err.toString(StandardCharsets.UTF_8));
    assertTrue(
        err.toString(StandardCharsets.UTF_8).contains("nothing in it was deleted"),
        err.toString(StandardCharsets.UTF_8));
    assertTrue(Files.exists(dir.resolve("kafka/x")));
  }

  /** Its own, with what a crashed worker's JVM left in its working directory, is cleaned. */
  @Test
  void aStacksOwnDirectoryIsCleaned(@TempDir Path dir) throws Exception {
    StateDir state = new StateDir(dir);
    state.createLayout();
    StateDir.write(state.log("kafka"), "started\n");
    StateDir.write(state.stackFile(), "x=1\n");
    StateDir.write(dir.resolve("hs_err_pid4711.log"), "A fatal error has been detected\n");
    state.clearAfterStop();
    assertFalse(Files.exists(state.kafkaDir()));
    assertTrue(Files.exists(state.log("kafka")), "logs stay for a look after the fact");
    state.wipe();
    try (var entries = Files.list(dir)) {
      assertEquals(0, entries.count());
    }
  }
}
