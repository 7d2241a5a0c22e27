package dev.outboxrelay.localstack;

import java.nio.file.Path;
import java.util.Arrays;

/**
 * Entry point of {@code ./local-stack.sh}: a real PostgreSQL, a KRaft Kafka broker and a
 * distributed Connect worker as local processes, the outbox connector registered through the REST
 * API, and a demo that shows rows becoming records.
 */
public final class LocalStack {
  private LocalStack() {}

  public static void main(String[] args) {
    System.exit(run(args));
  }

  static int run(String[] args) {
    Console console = new Console(System.out);
    try {
      StackOptions options =
          StackOptions.parse(Arrays.asList(args), System.getenv(), Path.of("").toAbsolutePath());
      // Before anything logs: the launcher's own log goes next to the services' logs.
      System.setProperty(
          "outboxrelay.localstack.log", options.stateDir().resolve("logs/launcher.log").toString());
      return switch (options.command()) {
        case "up" -> new UpCommand(options, console).run();
        case "down" -> new DownCommand(options, console).run();
        case "status" -> new StatusCommand(options, console).run();
        case "demo" -> new DemoCommand(options, console).run();
        default -> {
          console.line(StackOptions.USAGE);
          yield 0;
        }
      };
    } catch (StackException e) {
      System.err.println();
      System.err.println("local-stack: " + e.getMessage());
      return 1;
    } catch (Exception e) {
      System.err.println("local-stack: unexpected failure: " + e);
      e.printStackTrace(System.err);
      return 2;
    }
  }
}
