package dev.outboxrelay.localstack;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.lang.ProcessBuilder.Redirect;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * A real PostgreSQL from the binaries that zonky ships as Maven artifacts. Started without a
 * shutdown hook and with its output in a log file, so it keeps running after the launcher exits;
 * {@code down} stops it through its pid like the other processes, with SIGINT: a fast shutdown,
 * which ends open client sessions (SIGTERM, a smart shutdown, would wait for them). {@code pg_ctl},
 * which zonky starts it with, runs it in a session of its own, so a Ctrl-C in the terminal does not
 * reach it.
 */
final class EmbeddedPostgresServer {
  static final String DATABASE = "outbox";
  static final String USER = "postgres";

  private final StateDir state;
  private final int port;
  private final Console console;
  private final SpawnGate gate;

  /**
   * How long zonky waits for the server to accept connections: its 10 s default is too little for a
   * first start on a loaded machine.
   */
  static final Duration STARTUP_WAIT = Duration.ofSeconds(60);

  /** How zonky's exception begins when it stopped waiting for a start that goes on. */
  private static final String ZONKY_GAVE_UP = "Gave up waiting for server to start";

  /** How long a start that zonky gave up on is given to write its postmaster.pid. */
  private static final Duration PID_FILE_WAIT = Duration.ofSeconds(10);

  private final Duration startupWait;

  EmbeddedPostgresServer(StateDir state, int port, Console console, SpawnGate gate) {
    this(state, port, console, gate, STARTUP_WAIT);
  }

  EmbeddedPostgresServer(
      StateDir state, int port, Console console, SpawnGate gate, Duration startupWait) {
    this.state = state;
    this.port = port;
    this.console = console;
    this.gate = gate;
    this.startupWait = startupWait;
  }

  Database start() {
    console.step("PostgreSQL", "starting embedded PostgreSQL on " + Ports.LOOPBACK + ":" + port);
    EmbeddedPostgres postgres = gate.spawn(this::startServer);
    long pid = postmasterPid();
    createDatabase(postgres);
    console.step("PostgreSQL", "ready (pid " + pid + ")");
    return new Database(jdbcUrl(port), USER, Optional.empty(), true);
  }

  /** Starts the server and writes its pid file. */
  private EmbeddedPostgres startServer() {
    Path log = state.log(Component.POSTGRES.id());
    EmbeddedPostgres postgres;
    try {
      Files.createDirectories(state.postgresData().getParent());
      postgres =
          EmbeddedPostgres.builder()
              .setPort(port)
              .setDataDirectory(state.postgresData())
              .setCleanDataDirectory(false)
              .setRegisterShutdownHook(false)
              .setPGStartupWait(startupWait)
              .setServerConfig("listen_addresses", Ports.LOOPBACK)
              // Its defaults trade durability for speed (it starts the server with -F, fsync
              // off); a relay demo should not.
              .setServerConfig("fsync", "on")
              .setServerConfig("full_page_writes", "on")
              .setServerConfig("synchronous_commit", "on")
              .setServerConfig("max_connections", "100")
              .setOutputRedirector(Redirect.appendTo(log.toFile()))
              .setErrorRedirector(Redirect.appendTo(log.toFile()))
              .start();
    } catch (IOException | RuntimeException e) {
      if (String.valueOf(e.getMessage()).startsWith(ZONKY_GAVE_UP)) {
        recordPidOfGivenUpStart();
      }
      throw new StackException(
          "embedded PostgreSQL did not start: "
              + e.getMessage()
              + "\n  Last lines of "
              + log
              + ":\n"
              + ProcessControl.tail(log, 15),
          e);
    }
    try {
      state.writePid(Component.POSTGRES, postmasterPid());
    } catch (RuntimeException e) {
      // Unrecorded, the server would run on unseen by the clean-up and by down, holding its port.
      try {
        postgres.close();
      } catch (IOException | RuntimeException closing) {
        e.addSuppressed(closing);
      }
      throw e;
    }
    return postgres;
  }

  /**
   * zonky gives up waiting for a slow start without stopping the server, which goes on starting:
   * its pid is recorded once it has one, so that the failed start's clean-up (and {@code down})
   * stops it. Without, it ran on with no pid file, holding the port, and its data directory was
   * deleted under it.
   */
  private void recordPidOfGivenUpStart() {
    long[] pid = {0};
    try {
      // Until the file holds a pid: the postmaster creates it, then writes it.
      Waiter.until("postmaster.pid", PID_FILE_WAIT, () -> (pid[0] = readPid()) > 0, () -> {});
      state.writePid(Component.POSTGRES, pid[0]);
    } catch (StackException e) {
      // No server is starting after all (it failed, and a postmaster removes its pid file).
    }
  }

  /** The postmaster's pid from its postmaster.pid, or 0 while there is none to read. */
  private long readPid() {
    try {
      return postmasterPid();
    } catch (StackException e) {
      return 0;
    }
  }

  static String jdbcUrl(int port) {
    return "jdbc:postgresql://" + Ports.LOOPBACK + ":" + port + "/" + DATABASE;
  }

  /** The postmaster's command line names its data directory: proof that a pid is ours. */
  static String marker(StateDir state) {
    return state.postgresData().toString();
  }

  /**
   * zonky starts the server through {@code pg_ctl}, which exits; the server's own pid is the first
   * line of {@code postmaster.pid} in its data directory.
   */
  private long postmasterPid() {
    Path pidFile = state.postgresData().resolve("postmaster.pid");
    try {
      return Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
    } catch (IOException | RuntimeException e) {
      throw new StackException("could not read the PostgreSQL pid from " + pidFile, e);
    }
  }

  /** The pid in the data directory's postmaster.pid, where one is there to read. */
  static Optional<Long> postmasterPidOf(StateDir state) {
    try {
      List<String> lines = Files.readAllLines(state.postgresData().resolve("postmaster.pid"));
      return lines.isEmpty() ? Optional.empty() : Optional.of(Long.parseLong(lines.get(0).trim()));
    } catch (IOException | RuntimeException e) {
      return Optional.empty(); // none, or one being written
    }
  }

  private static void createDatabase(EmbeddedPostgres postgres) {
    try (Connection c = postgres.getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE " + DATABASE);
    } catch (SQLException e) {
      throw new StackException("could not create database " + DATABASE + ": " + e.getMessage(), e);
    }
  }
}
