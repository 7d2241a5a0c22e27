package dev.outboxrelay.localstack;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Starts the stack's processes so that they outlive the launcher (output to a log file, no terminal
 * input), and stops them again. A pid is only ever signalled after its command line proved it is
 * ours, so a recycled pid of an unrelated process is never touched.
 */
final class ProcessControl {
  private ProcessControl() {}

  /** The Java of the launcher itself: the stack runs on the version the script checked. */
  static Path javaBinary() {
    return Path.of(System.getProperty("java.home"), "bin", "java");
  }

  /**
   * Starts {@code mainClass} in a new JVM. The classpath travels in the CLASSPATH variable, which
   * keeps {@code ps} readable. Returns the running process.
   */
  static Process startJava(
      String classpath,
      List<String> jvmOptions,
      String mainClass,
      List<String> args,
      Map<String, String> extraEnv,
      Path logFile,
      Path workingDir) {
    List<String> command = new ArrayList<>();
    command.add(javaBinary().toString());
    command.addAll(jvmOptions);
    command.add(mainClass);
    command.addAll(args);
    ProcessBuilder builder = new ProcessBuilder(command).directory(workingDir.toFile());
    builder.environment().put("CLASSPATH", classpath);
    builder.environment().putAll(extraEnv);
    builder.redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
    builder.redirectErrorStream(true);
    builder.redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
    try {
      return builder.start();
    } catch (IOException e) {
      throw new StackException("could not start " + mainClass + ": " + e.getMessage(), e);
    }
  }

  /** True when {@code pid} runs and its command line contains {@code marker}. */
  static boolean isOurs(long pid, String marker) {
    Optional<ProcessHandle> handle = ProcessHandle.of(pid);
    if (handle.isEmpty() || !handle.get().isAlive()) {
      return false;
    }
    return commandLine(pid).map(cmd -> cmd.contains(marker)).orElse(false);
  }

  /**
   * Asks the process to stop (SIGTERM: Kafka, Connect and PostgreSQL all shut down cleanly on it)
   * and waits up to {@code grace}; kills it after that. Returns false when it had to be killed.
   */
  static boolean stop(long pid, Duration grace) {
    Optional<ProcessHandle> handle = ProcessHandle.of(pid);
    if (handle.isEmpty()) {
      return true;
    }
    ProcessHandle process = handle.get();
    process.destroy();
    if (awaitExit(process, grace)) {
      return true;
    }
    process.destroyForcibly();
    awaitExit(process, Duration.ofSeconds(10));
    return false;
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
