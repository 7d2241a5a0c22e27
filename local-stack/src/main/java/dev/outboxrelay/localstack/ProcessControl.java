package dev.outboxrelay.localstack;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Starts the stack's processes so that they outlive the launcher (output to a log file, no terminal
 * input, a session of their own, none of the launcher's {@code OUTBOX_*} or {@code LOCAL_STACK_*}
 * variables), and stops them again. A pid is only ever signalled after its command line proved it
 * is ours, so a recycled pid of an unrelated process is never touched.
 */
final class ProcessControl {
  /** Variables no child inherits: the operator CLI's ({@code OUTBOX_*}) and the stack's own. */
  static final List<String> STRIPPED_ENV_PREFIXES = List.of("OUTBOX_", "LOCAL_STACK_");

  private ProcessControl() {}

  /** The Java of the launcher itself: the stack runs on the version the script checked. */
  static Path javaBinary() {
    return Path.of(System.getProperty("java.home"), "bin", "java");
  }

  /**
   * Starts {@code mainClass} in a new JVM. The classpath travels in the CLASSPATH variable, which
   * keeps {@code ps} readable. Returns the running process.
   *
   * @param extraEnv what this process needs of the stack's settings: the only {@code OUTBOX_*} or
   *     {@code LOCAL_STACK_*} variables it gets (see {@link #childEnvironment})
   * @param detached true for the long-running services: they run in a session of their own (see
   *     {@link #detachedCommand}), so a Ctrl-C in the terminal reaches the launcher only, whose
   *     abort hook stops them in order; false for a short tool the launcher waits for
   */
  static Process startJava(
      String classpath,
      List<String> jvmOptions,
      String mainClass,
      List<String> args,
      Map<String, String> extraEnv,
      Path logFile,
      Path workingDir,
      boolean detached) {
    List<String> command = new ArrayList<>();
    command.add(javaBinary().toString());
    command.addAll(jvmOptions);
    command.add(mainClass);
    command.addAll(args);
    Map<String, String> env = new HashMap<>(extraEnv);
    env.put("CLASSPATH", classpath);
    try {
      return start(
          detached ? detachedCommand(command, setsid()) : command, env, logFile, workingDir);
    } catch (IOException e) {
      throw new StackException("could not start " + mainClass + ": " + e.getMessage(), e);
    }
  }

  /**
   * Starts {@code command} with its output appended to {@code logFile}, no terminal input, and the
   * launcher's environment without the stack's and the operator CLI's variables plus {@code
   * extraEnv}.
   */
  static Process start(
      List<String> command, Map<String, String> extraEnv, Path logFile, Path workingDir)
      throws IOException {
    ProcessBuilder builder = new ProcessBuilder(command).directory(workingDir.toFile());
    Map<String, String> env = childEnvironment(builder.environment(), extraEnv);
    builder.environment().clear();
    builder.environment().putAll(env);
    builder.redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
    builder.redirectErrorStream(true);
    builder.redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
    return builder.start();
  }

  /**
   * {@code process}, once {@code record} (its pid file written) went through; if it failed, the
   * process is killed first: the clean-up of a failed start, and {@code down}, find processes by
   * their pid files only, so one started but not recorded ran on, holding its ports.
   */
  static Process recorded(Process process, Runnable record) {
    try {
      record.run();
      return process;
    } catch (RuntimeException | Error e) {
      process.destroyForcibly();
      throw e;
    }
  }

  /**
   * The environment of a child process: the launcher's, without any {@code OUTBOX_*} or {@code
   * LOCAL_STACK_*} variable (the operator CLI's credentials, the stack's settings and password,
   * which the Connect worker's {@code env} config provider would otherwise hand to any connector),
   * plus {@code extra}: exactly what the child needs, such as the worker's {@code
   * OUTBOX_DB_PASSWORD}.
   */
  static Map<String, String> childEnvironment(
      Map<String, String> inherited, Map<String, String> extra) {
    Map<String, String> env = new TreeMap<>();
    inherited.forEach(
        (name, value) -> {
          if (!STRIPPED_ENV_PREFIXES.stream().anyMatch(name::startsWith)) {
            env.put(name, value);
          }
        });
    env.putAll(extra);
    return env;
  }

  /**
   * {@code command} in a new session, so that it is in no process group of the terminal: {@code
   * setsid command} where {@code setsid} exists (it execs, keeping the pid, since a child of the
   * JVM leads no process group), else {@code sh -c "trap '' INT; exec command"}, which leaves it in
   * the launcher's process group but ignoring SIGINT (a JVM keeps an ignored SIGINT ignored).
   */
  static List<String> detachedCommand(List<String> command, Optional<Path> setsid) {
    List<String> detached = new ArrayList<>();
    if (setsid.isPresent()) {
      detached.add(setsid.get().toString());
    } else {
      detached.addAll(List.of("/bin/sh", "-c", "trap '' INT; exec \"$@\"", "sh"));
    }
    detached.addAll(command);
    return detached;
  }

  /** The {@code setsid} program (util-linux; not on macOS), if there is one. */
  static Optional<Path> setsid() {
    List<Path> dirs = new ArrayList<>();
    String path = System.getenv("PATH");
    if (path != null) {
      for (String dir : path.split(java.io.File.pathSeparator)) {
        if (!dir.isEmpty()) {
          dirs.add(Path.of(dir));
        }
      }
    }
    dirs.addAll(List.of(Path.of("/usr/bin"), Path.of("/bin")));
    return dirs.stream().map(dir -> dir.resolve("setsid")).filter(Files::isExecutable).findFirst();
  }

  /** True when {@code pid} runs and its command line contains {@code marker}. */
  static boolean isOurs(long pid, String marker) {
    Optional<ProcessHandle> handle = ProcessHandle.of(pid);
    if (handle.isEmpty() || !handle.get().isAlive()) {
      return false;
    }
    return commandLine(pid).map(cmd -> cmd.contains(marker)).orElse(false);
  }

  /** How a process is asked to stop. */
  enum StopSignal {
    /** SIGTERM: Kafka and Connect shut down cleanly on it. */
    TERM,
    /**
     * SIGINT: PostgreSQL's fast shutdown, which ends client sessions (an open psql) and shuts down
     * cleanly. (SIGTERM is its smart shutdown, which waits for every session to end by itself.)
     */
    INT
  }

  /**
   * Asks the process to stop with {@code signal} and waits up to {@code grace}; kills it after
   * that. Returns false when it had to be killed.
   */
  static boolean stop(long pid, Duration grace, StopSignal signal) {
    Optional<ProcessHandle> handle = ProcessHandle.of(pid);
    if (handle.isEmpty()) {
      return true;
    }
    ProcessHandle process = handle.get();
    if (signal != StopSignal.INT || !interrupt(pid)) {
      process.destroy();
    }
    if (awaitExit(process, grace)) {
      return true;
    }
    process.destroyForcibly();
    awaitExit(process, Duration.ofSeconds(10));
    return false;
  }

  /**
   * {@code kill -s INT pid} (the JDK sends SIGTERM and SIGKILL only). False when that could not be
   * sent: no {@code kill} program, or it failed.
   */
  private static boolean interrupt(long pid) {
    try {
      Process kill =
          new ProcessBuilder("kill", "-s", "INT", Long.toString(pid))
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .start();
      if (!kill.waitFor(10, TimeUnit.SECONDS)) {
        kill.destroyForcibly();
        return false;
      }
      return kill.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private static boolean awaitExit(ProcessHandle process, Duration timeout) {
    try {
      process.onExit().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (TimeoutException e) {
      return false;
    } catch (ExecutionException e) {
      return !process.isAlive();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return !process.isAlive();
    }
  }

  /** The full command line: /proc on Linux (complete), else what the JDK reports. */
  static Optional<String> commandLine(long pid) {
    Path proc = Path.of("/proc", Long.toString(pid), "cmdline");
    if (Files.isReadable(proc)) {
      try {
        return Optional.of(
            new String(Files.readAllBytes(proc), StandardCharsets.UTF_8).replace('\0', ' '));
      } catch (IOException e) {
        return Optional.empty();
      }
    }
    return ProcessHandle.of(pid).flatMap(h -> h.info().commandLine());
  }

  /** The last {@code lines} lines of a log, for error messages. */
  static String tail(Path logFile, int lines) {
    try {
      List<String> all =
          new String(Files.readAllBytes(logFile), StandardCharsets.UTF_8).lines().toList();
      return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    } catch (IOException e) {
      return "(no log at " + logFile + ")";
    }
  }
}
