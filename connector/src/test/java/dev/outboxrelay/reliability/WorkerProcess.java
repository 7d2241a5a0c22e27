package dev.outboxrelay.reliability;

import dev.outboxrelay.testing.LogCapture;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A distributed Connect worker in a JVM of its own ({@code ConnectDistributed}), joining the group
 * of the in-process cluster with the same settings, so it can die abruptly: {@link #kill()} is
 * SIGKILL, with no shutdown hook, no task stop, no producer flush. Its class path is the test class
 * path (the connector is found by service loading, as in the cluster), its log a file.
 */
final class WorkerProcess implements AutoCloseable {
  private static final Pattern STARTED_AS =
      Pattern.compile("Started outbox-relay task \\S+ as lease owner (\\S+) for instance keys");

  private final Process process;
  private final int port;
  private final Path log;
  private final HttpClient http = HttpClient.newHttpClient();

  private WorkerProcess(Process process, int port, Path log) {
    this.process = process;
    this.port = port;
    this.log = log;
  }

  /** Starts a worker with the cluster's worker settings, its own REST port on loopback. */
  static WorkerProcess start(Map<String, String> clusterWorkerProps, Path dir) {
    return start(clusterWorkerProps, dir, List.of());
  }

  /** As {@link #start(Map, Path)}, with these extra JVM options (system properties, say). */
  static WorkerProcess start(Map<String, String> clusterWorkerProps, Path dir, List<String> jvm) {
    try {
      Files.createDirectories(dir);
      int port = freePort();
      Properties props = new Properties();
      clusterWorkerProps.forEach(
          (k, v) -> {
            if (!k.startsWith("listeners")
                && !k.startsWith("admin.listeners")
                && !k.startsWith("rest.advertised")) {
              props.setProperty(k, v);
            }
          });
      props.setProperty("listeners", "http://127.0.0.1:" + port);
      props.setProperty("rest.advertised.host.name", "127.0.0.1");
      props.setProperty("rest.advertised.port", Integer.toString(port));
      Path config = dir.resolve("worker.properties");
      try (var out = Files.newBufferedWriter(config)) {
        props.store(out, "external worker of the reliability suite");
      }
      Path log = dir.resolve("worker.log");
      Files.deleteIfExists(log); // a log of this run only: owners and claim-lost lines are read
      Path logConfig = dir.resolve("log4j2.xml");
      Files.writeString(logConfig, logConfig(log), StandardCharsets.UTF_8);
      List<String> command = new ArrayList<>();
      command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      command.add("-Xmx384m");
      command.add("-XX:+UseSerialGC");
      command.add("-XX:TieredStopAtLevel=1"); // starts faster; plenty for a test worker
      command.add("-Dlog4j2.configurationFile=" + logConfig.toAbsolutePath());
      command.addAll(jvm);
      command.add("org.apache.kafka.connect.cli.ConnectDistributed");
      command.add(config.toAbsolutePath().toString());
      ProcessBuilder builder = new ProcessBuilder(command);
      builder.environment().put("CLASSPATH", testClassPath());
      builder.redirectErrorStream(true);
      builder.redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("worker.out").toFile()));
      builder.redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
      return new WorkerProcess(builder.start(), port, log);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Surefire runs tests from a manifest-only jar; the real class path is in this property. */
  private static String testClassPath() {
    return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
  }

  /**
   * A free loopback port below the kernel's range of ephemeral ports (32768 and up on Linux, 49152
   * and up on macOS): the worker binds it seconds later, and a port that a bind to port 0 handed
   * out and got back could be handed meanwhile to a broker, worker or database of a test running in
   * the other test JVM. One picked at random below that range can only meet another such pick.
   */
  private static int freePort() throws IOException {
    for (int tries = 0; tries < 100; tries++) {
      int port = 20_000 + ThreadLocalRandom.current().nextInt(12_000);
      try (ServerSocket socket = new ServerSocket(port, 0, InetAddress.getLoopbackAddress())) {
        return socket.getLocalPort();
      } catch (BindException taken) { // NOPMD: taken, pick another
        continue;
      }
    }
    throw new IOException("no free loopback port found between 20000 and 32000");
  }

  private static String logConfig(Path log) {
    return """
        <?xml version="1.0" encoding="UTF-8"?>
        <Configuration status="WARN">
          <Appenders>
            <File name="file" fileName="%s" append="true">
              <PatternLayout pattern="%%d{HH:mm:ss.SSS} %%-5p [%%t] %%c{1} %%X - %%m%%n%%throwable"/>
            </File>
          </Appenders>
          <Loggers>
            <Logger name="dev.outboxrelay" level="DEBUG"/>
            <Logger name="org.eclipse.jetty" level="WARN"/>
            <Root level="INFO"><AppenderRef ref="file"/></Root>
          </Loggers>
        </Configuration>
        """
        .formatted(log.toAbsolutePath());
  }

  /** The worker id Connect reports for this worker in task statuses. */
  String workerId() {
    return "127.0.0.1:" + port;
  }

  boolean alive() {
    return process.isAlive();
  }

  /** True once its REST API answers and it has joined the group (GET /health is 200). */
  boolean healthy() {
    if (!process.isAlive()) {
      throw new IllegalStateException("the worker process exited; see " + log);
    }
    try {
      HttpResponse<String> response =
          http.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health"))
                  .timeout(Duration.ofSeconds(5))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      return response.statusCode() == 200;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** SIGSTOP: the JVM freezes where it is (what it holds stays held), until {@link #thaw}. */
  void freeze() {
    signal("-STOP");
  }

  /** SIGCONT. */
  void thaw() {
    signal("-CONT");
  }

  private void signal(String signal) {
    try {
      Process kill =
          new ProcessBuilder("kill", signal, Long.toString(process.pid()))
              .redirectErrorStream(true)
              .start();
      if (!kill.waitFor(30, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill " + signal + " " + process.pid() + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** SIGKILL: the JVM vanishes mid-stream, its sockets closed by the kernel. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  /** Message ids of the claim-lost lines this worker logged (before it died, if it did). */
  List<String> claimLost() {
    return matches(LogCapture.CLAIM_LOST, 2); // every form the relay logs, as in this JVM
  }

  /** The first group of every log line matching the pattern. */
  List<String> matches(Pattern pattern) {
    return matches(pattern, 1);
  }

  /** Group {@code group} of every log line matching the pattern. */
  private List<String> matches(Pattern pattern, int group) {
    List<String> found = new ArrayList<>();
    if (!Files.exists(log)) {
      return found;
    }
    try {
      for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
        Matcher m = pattern.matcher(line);
        if (m.find()) {
          found.add(m.group(group));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return found;
  }

  /**
   * Lease owners of the task instances of a connector this worker started (from its log). Task
   * statuses can lag a rebalance; an owner started in this JVM is certainly this worker's.
   */
  List<String> leaseOwners(String connector) {
    return matches(STARTED_AS).stream()
        .filter(owner -> owner.startsWith(connector + "/task-"))
        .toList();
  }

  Path log() {
    return log;
  }

  /**
   * Stops it gracefully (SIGTERM), then forcibly if it does not stop within 20 s. A teardown: the
   * tests' verdicts are in by then, and a worker whose Connect shutdown hung (seen once, after
   * Jetty's "Unable to destroy") held the build a whole minute.
   */
  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      process.destroy();
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
      }
    }
  }
}
