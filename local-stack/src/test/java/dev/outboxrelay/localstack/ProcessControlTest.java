package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How the stack's processes are started: their environment, and out of reach of the terminal's
 * Ctrl-C (which must reach the launcher only, so that its abort hook stops the stack in order).
 */
class ProcessControlTest {
  @TempDir Path dir;

  @Test
  void childrenGetNoneOfTheCliOrStackVariablesButWhatTheyNeed() {
    Map<String, String> launcher =
        Map.of(
            "PATH", "/usr/bin:/bin",
            "HOME", "/home/dev",
            "OUTBOX_JDBC_URL", "jdbc:postgresql://prod-db:5432/app",
            "OUTBOX_USER", "ops",
            "OUTBOX_PASSWORD", "ops-secret",
            "OUTBOX_DB_PASSWORD", "deprecated-secret",
            "LOCAL_STACK_DB_PASSWORD", "stack-secret",
            "LOCAL_STACK_PORTS", "auto");

    assertEquals(
        Map.of("PATH", "/usr/bin:/bin", "HOME", "/home/dev"),
        ProcessControl.childEnvironment(launcher, Map.of()));
    assertEquals(
        Map.of(
            "PATH", "/usr/bin:/bin",
            "HOME", "/home/dev",
            "OUTBOX_DB_PASSWORD", "stack-secret",
            "CLASSPATH", "/kafka/*"),
        ProcessControl.childEnvironment(
            launcher, Map.of("OUTBOX_DB_PASSWORD", "stack-secret", "CLASSPATH", "/kafka/*")));
  }

  /** A process whose pid file could not be written is killed, not left running unrecorded. */
  @Test
  void aProcessThatCouldNotBeRecordedIsKilled() throws Exception {
    Process sleeping = new ProcessBuilder("sleep", "60").start();
    try {
      IllegalStateException e =
          assertThrows(
              IllegalStateException.class,
              () ->
                  ProcessControl.recorded(
                      sleeping,
                      () -> {
                        throw new IllegalStateException("pids/ is not writable");
                      }));
      assertEquals("pids/ is not writable", e.getMessage());
      assertTrue(sleeping.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), "killed");
    } finally {
      sleeping.destroyForcibly();
    }
    Process recorded = new ProcessBuilder("sleep", "60").start();
    try {
      assertSame(recorded, ProcessControl.recorded(recorded, () -> {}));
      assertTrue(recorded.isAlive(), "recorded: left running");
    } finally {
      recorded.destroyForcibly();
    }
  }

  @Test
  void aDetachedCommandRunsInItsOwnSessionOrElseIgnoresSigint() {
    List<String> java = List.of("/jdk/bin/java", "-Dx=y", "kafka.Kafka", "server.properties");
    assertEquals(
        List.of("/usr/bin/setsid", "/jdk/bin/java", "-Dx=y", "kafka.Kafka", "server.properties"),
        ProcessControl.detachedCommand(java, Optional.of(Path.of("/usr/bin/setsid"))));
    assertEquals(
        List.of(
            "/bin/sh",
            "-c",
            "trap '' INT; exec \"$@\"",
            "sh",
            "/jdk/bin/java",
            "-Dx=y",
            "kafka.Kafka",
            "server.properties"),
        ProcessControl.detachedCommand(java, Optional.empty()));
  }

  /** The services as {@code up} starts them: the pid it records leads a session of its own. */
  @Test
  void aDetachedJvmLeadsItsOwnSessionUnderThePidTheLauncherRecords() throws Exception {
    assumeTrue(Files.isReadable(Path.of("/proc/self/stat")), "Linux /proc");
    assumeTrue(ProcessControl.setsid().isPresent(), "setsid");
    Path log = dir.resolve("probe.log");
    Process probe =
        ProcessControl.startJava(
            probeClasspath(),
            List.of(),
            SignalProbe.class.getName(),
            List.of(),
            Map.of(),
            log,
            dir,
            true);
    assertTrue(probe.waitFor(60, TimeUnit.SECONDS), "the probe did not finish");
    String out = Files.readString(log);
    assertEquals(0, probe.exitValue(), out);

    assertTrue(out.contains("pid " + probe.pid() + "\n"), "setsid forked: " + out);
    assertEquals(probe.pid(), session(out), out);
    assertTrue(session(out) != ownSession(), out);
  }

  /**
   * Without {@code setsid} (macOS) a service stays in the launcher's process group but ignores
   * SIGINT, and so does the JVM it becomes.
   */
  @Test
  void withoutSetsidTheJvmIgnoresSigint() throws Exception {
    assumeTrue(Files.isReadable(Path.of("/proc/self/status")), "Linux /proc");
    Path log = dir.resolve("probe.log");
    List<String> java =
        List.of(ProcessControl.javaBinary().toString(), SignalProbe.class.getName());
    Process probe =
        ProcessControl.start(
            ProcessControl.detachedCommand(java, Optional.empty()),
            Map.of("CLASSPATH", probeClasspath()),
            log,
            dir);
    assertTrue(probe.waitFor(60, TimeUnit.SECONDS), "the probe did not finish");
    String out = Files.readString(log);
    assertEquals(0, probe.exitValue(), out);

    String ignored =
        out.lines()
            .filter(l -> l.startsWith("SigIgn:"))
            .findFirst()
            .orElseThrow(() -> new AssertionError(out));
    long mask = Long.parseUnsignedLong(ignored.substring("SigIgn:".length()).trim(), 16);
    assertTrue((mask & (1L << (2 - 1))) != 0, "SIGINT (2) is not ignored: " + out);
  }

  /** Field 6 of {@code /proc/<pid>/stat}: the session id (after the command in parentheses). */
  private static long session(String probeOutput) {
    String stat =
        probeOutput
            .lines()
            .filter(l -> l.startsWith("stat "))
            .findFirst()
            .orElseThrow(() -> new AssertionError(probeOutput));
    return sessionOf(stat);
  }

  private static long ownSession() throws Exception {
    return sessionOf(Files.readString(Path.of("/proc/self/stat")));
  }

  private static long sessionOf(String stat) {
    String[] after = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
    return Long.parseLong(after[3]); // state, ppid, pgrp, session
  }

  private static String probeClasspath() throws Exception {
    return Path.of(SignalProbe.class.getProtectionDomain().getCodeSource().getLocation().toURI())
        .toString();
  }
}
