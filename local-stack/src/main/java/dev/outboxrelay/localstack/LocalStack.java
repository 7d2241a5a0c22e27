package dev.outboxrelay.localstack;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Entry point of {@code ./local-stack.sh}: a real PostgreSQL, a KRaft Kafka broker and a
 * distributed Connect worker as local processes, the outbox connector registered through the REST
 * API, and a demo that shows rows becoming records.
 */
public final class LocalStack {
  private LocalStack() {}

  /** Held so the setting is not lost when the logger is collected. */
  private static final java.util.logging.Logger DRIVER_LOG =
      java.util.logging.Logger.getLogger("org.postgresql");

  public static void main(String[] args) {
    // The driver's own warnings quote a malformed URL whole, password and all; the launcher says
    // what failed itself.
    DRIVER_LOG.setLevel(java.util.logging.Level.OFF);
    System.exit(run(args, System.getenv(), System.out, System.err));
  }

  /** Runs one command; returns the exit code. */
  static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
    Console console = new Console(out);
    try {
      StackOptions options =
          StackOptions.parse(Arrays.asList(args), env, Path.of("").toAbsolutePath());
      // Before anything logs: the launcher's own log goes next to the services' logs.
      System.setProperty(
          "outboxrelay.localstack.log", options.stateDir().resolve("logs/launcher.log").toString());
      // Only where the settings are read: down and running take none of them.
      if (List.of("up", "status", "demo").contains(options.command())) {
        options.warnings().forEach(w -> err.println("local-stack: warning: " + w));
      }
      return switch (options.command()) {
        case "up" -> new UpCommand(options, console).run();
        case "down" -> new DownCommand(options, console).run();
        case "status" -> new StatusCommand(options, console).run();
        case "demo" -> new DemoCommand(options, console).run();
        case "running" ->
            StackProcesses.runningStack(new StateDir(options.stateDir())).isPresent() ? 0 : 1;
        default -> {
          console.line(StackOptions.USAGE);
          yield 0;
        }
      };
    } catch (StackException e) {
      err.println();
      err.println("local-stack: " + e.getMessage());
      return 1;
    } catch (Exception e) {
      // The class and where, not the message: a library's may quote a URL or a password.
      err.println("local-stack: unexpected failure: " + e.getClass().getName());
      for (StackTraceElement frame : e.getStackTrace()) {
        err.println("\tat " + frame);
      }
      return 2;
    }
  }
}
