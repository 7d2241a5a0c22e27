package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code down} stops the embedded PostgreSQL while a client session is open (docs/local-stack.md
 * suggests psql): a fast shutdown, which ends the session, not a smart one, which would wait for it
 * until the grace period ran out and the server was killed.
 */
class EmbeddedPostgresStopTest {
  @TempDir Path root;

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final Console console = new Console(new PrintStream(out, true, StandardCharsets.UTF_8));
  private StateDir state;

  @AfterEach
  void stopWhatRuns() {
    if (state != null) {
      StackProcesses.stop(state, StackProcesses.running(state), console);
    }
  }

  /**
   * A server whose pid file the launcher never wrote (killed while zonky started it) is found by
   * its own postmaster.pid, and stopped: unseen, it held its port, and down deleted its data.
   */
  @Test
  void aServerWithoutItsPidFileIsStillFoundAndStopped() throws Exception {
    state = new StateDir(root);
    state.createLayout();
    new EmbeddedPostgresServer(state, Ports.anyFree(), console, SpawnGate.open()).start();
    long pid = StackProcesses.running(state).get(Component.POSTGRES);
    state.deletePid(Component.POSTGRES);

    assertEquals(pid, StackProcesses.running(state).get(Component.POSTGRES));
    StackProcesses.stop(state, StackProcesses.running(state), console);
    assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
    assertTrue(StackProcesses.running(state).isEmpty(), "nothing left");
  }

  @Test
  void downStopsPostgresCleanlyWhileASessionIsOpen() throws Exception {
    state = new StateDir(root);
    state.createLayout();
    Database database =
        new EmbeddedPostgresServer(state, Ports.anyFree(), console, SpawnGate.open()).start();
    Map<Component, Long> running = StackProcesses.running(state);
    long pid = running.get(Component.POSTGRES);

    try (Connection session = database.dataSource().getConnection()) {
      assertTrue(session.isValid(5));
      for (String durable : List.of("fsync", "full_page_writes", "synchronous_commit")) {
        try (Statement show = session.createStatement();
            ResultSet r = show.executeQuery("SHOW " + durable)) {
          r.next();
          assertEquals("on", r.getString(1), durable + ": zonky's default trades durability");
        }
      }

      StackProcesses.stop(state, running, console);

      String log = out.toString(StandardCharsets.UTF_8);
      assertTrue(log.contains("PostgreSQL stopped\n"), log);
      assertFalse(log.contains("killed"), log);
      assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
      assertFalse(session.isValid(5), "the session outlived the server");
    }
    assertEquals(Map.of(), StackProcesses.running(state));
  }

  /**
   * A start zonky gave up waiting for goes on (zonky does not stop it): its pid is recorded, so
   * that the failed start's clean-up and {@code down} stop it. Without, the server ran on with no
   * pid file, holding the port, and its data directory was deleted under it.
   */
  @Test
  void aStartGivenUpOnLeavesThePidOfTheServerStillStarting() {
    state = new StateDir(root);
    state.createLayout();
    EmbeddedPostgresServer server =
        new EmbeddedPostgresServer(
            state, Ports.anyFree(), console, SpawnGate.open(), Duration.ofMillis(1));

    StackException e = assertThrows(StackException.class, server::start);
    assertTrue(e.getMessage().startsWith("embedded PostgreSQL did not start"), e.getMessage());
    Long pid = StackProcesses.running(state).get(Component.POSTGRES);
    assertNotNull(pid, "the pid of the server still starting");
    assertTrue(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
  }
}
