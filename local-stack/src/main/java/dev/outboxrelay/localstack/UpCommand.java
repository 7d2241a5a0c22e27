package dev.outboxrelay.localstack;

import java.nio.file.Files;
import java.util.Map;
import java.util.Optional;

/**
 * {@code up}: starts PostgreSQL (unless the user brings one), a Kafka broker and a Connect worker,
 * then runs the demo and leaves everything running. Finds a running stack instead of starting a
 * second one, and cleans up what an earlier run left behind.
 */
final class UpCommand {
  private final StackOptions options;
  private final Console console;
  private final StateDir state;
  private final SpawnGate gate = new SpawnGate();
  private boolean aborted;

  UpCommand(StackOptions options, Console console) {
    this.options = options;
    this.console = console;
    this.state = new StateDir(options.stateDir());
  }

  int run() throws Exception {
    return state.withLock(this::start);
  }

  private int start() {
    Map<Component, Long> running = StackProcesses.running(state);
    Optional<StackRecord> record = StackRecord.read(state.stackFile());
    if (record.isPresent() && running.size() == expectedComponents(record.get())) {
      console.line("The local stack is already running (pids " + running.values() + ").");
      Summary.print(console, record.get(), state, options.repoRoot());
      boolean same = sameDelivery(record.get()) & sameDatabase(record.get());
      if (options.runDemo()) {
        // An up after `up --no-demo` ran no demo either: say how to run it.
        console.line(
            "The demo did not run again: ./local-stack.sh demo runs it against this stack.");
      }
      return same & samePorts(record.get()) ? 0 : 1;
    }
    if (options.runDemo()) {
      options.requireDemoDatabaseNamedExplicitly();
    }
    options.requireNoPasswordInJdbcUrls();
    stopPartialStack(running);
    StackPorts ports = StackPorts.resolve(options);
    ports.requireFree();
    if (state.exists()) {
      console.step("Stack", "removing the state of an earlier run in " + state.root());
      state.wipe();
    }
    KafkaProcesses kafka = KafkaProcesses.from(state, options.kafkaClasspathFile());
    if (!ConnectWorker.hasPlugin(options.pluginDir())) {
      throw new StackException(
          "no Connect plugin under "
              + options.pluginDir()
              + ": build it with `mvn -B -DskipTests package`");
    }
    requireMetricsAgent();
    state.createLayout();
    return startServicesAndDemo(ports, kafka);
  }

  /**
   * Starts the services and runs the demo, and until both are done stops what it started when the
   * user interrupts (Ctrl-C reaches the launcher only: the services run in sessions of their own)
   * or a service fails to start. A failing demo leaves the services running.
   */
  private int startServicesAndDemo(StackPorts ports, KafkaProcesses kafka) {
    Thread abort = new Thread(this::abort, "local-stack-abort");
    Runtime.getRuntime().addShutdownHook(abort);
    try {
      StackRecord stack;
      try {
        stack = startServices(ports, kafka);
      } catch (RuntimeException e) {
        // The hook stays while this stops the services: a second Ctrl-C then waits for it (abort
        // is idempotent) instead of leaving detached services running.
        console.step("Stack", "start failed; stopping what was started");
        abort();
        throw e;
      }
      return runDemo(stack) ? 0 : 1;
    } finally {
      removeQuietly(abort);
    }
  }

  /**
   * A running stack is kept as it is: when it runs another guarantee than the one asked for, says
   * so (the worker's exactly-once support is fixed when it starts) and returns false.
   */
  private boolean sameDelivery(StackRecord running) {
    Delivery asked = options.delivery();
    if (running.delivery() == asked) {
      return true;
    }
    console.blank();
    console.line(
        "It runs "
            + running.delivery().label()
            + ", not "
            + asked.label()
            + " as asked: ./local-stack.sh down, then ./local-stack.sh up"
            + (asked.exactlyOnce() ? " --exactly-once" : "")
            + ", to switch.");
    return false;
  }

  /**
   * Whether the running stack uses the database asked for: a second {@code up} naming another one
   * (or the embedded one beside a stack on another) is not "already running" on it, and a script
   * checking the exit code took it for so.
   */
  private boolean sameDatabase(StackRecord running) {
    Optional<String> asked = options.externalJdbcUrl();
    boolean same =
        asked.isEmpty()
            ? running.embedded()
            : !running.embedded() && asked.get().equals(running.jdbcUrl());
    if (!same) {
      console.blank();
      console.line(
          "It runs on "
              + (running.embedded()
                  ? "the embedded PostgreSQL"
                  : Redaction.jdbcUrl(running.jdbcUrl()))
              + ", not on "
              + (asked.isEmpty() ? "the embedded PostgreSQL" : Redaction.jdbcUrl(asked.get()))
              + " as asked: ./local-stack.sh down, then ./local-stack.sh up, to switch.");
    }
    return same;
  }

  /**
   * Whether the running stack listens on each port asked for (a flag or its environment variable):
   * a second {@code up} asking for others is not "already running" there either.
   */
  private boolean samePorts(StackRecord running) {
    Map<String, Integer> serving = new java.util.HashMap<>();
    serving.put(StackOptions.KAFKA_PORT, port("//" + running.bootstrapServers()));
    serving.put(StackOptions.CONNECT_PORT, port(running.connectUrl()));
    if (running.hasMetrics()) {
      serving.put(StackOptions.METRICS_PORT, port(running.metricsUrl()));
    }
    if (running.embedded()) {
      serving.put(StackOptions.PG_PORT, port(running.jdbcUrl().substring("jdbc:".length())));
    }
    boolean same = true;
    for (Map.Entry<String, Integer> asked :
        new java.util.TreeMap<>(options.requestedPorts()).entrySet()) {
      Integer port = serving.get(asked.getKey());
      if (port != null && port != -1 && !port.equals(asked.getValue())) {
        if (same) {
          console.blank();
        }
        same = false;
        console.line(
            "It runs the "
                + StackOptions.PORTS.get(asked.getKey()).purpose()
                + " on port "
                + port
                + ", not "
                + asked.getValue()
                + " as asked: ./local-stack.sh down, then ./local-stack.sh up, to switch.");
      }
    }
    return same;
  }

  private static int port(String uri) {
    try {
      return java.net.URI.create(uri).getPort();
    } catch (IllegalArgumentException e) {
      return -1; // not judged
    }
  }

  private void requireMetricsAgent() {
    if (!Files.isRegularFile(options.metricsAgentJar())) {
      throw new StackException(
          options.metricsAgentJar()
              + " (the worker's Prometheus JMX exporter agent) is missing: build first with `mvn -B"
              + " -DskipTests package` (./local-stack.sh up does it unless --no-build is given)");
    }
    if (!Files.isRegularFile(options.metricsRules())) {
      throw new StackException(
          options.metricsRules()
              + " (the JMX exporter's rules for the relay's metrics) is missing");
    }
  }

  private static int expectedComponents(StackRecord record) {
    return record.embedded() ? 3 : 2;
  }

  private void stopPartialStack(Map<Component, Long> running) {
    if (!running.isEmpty()) {
      console.step(
          "Stack", "found a partial stack from an earlier run " + running + "; stopping it");
      StackProcesses.stop(state, running, console);
    }
  }

  /** Starts the services and writes the stack's record. */
  private StackRecord startServices(StackPorts ports, KafkaProcesses kafka) {
    Database database = startDatabase(ports);
    new KafkaBroker(state, ports, kafka, console, gate).start();
    kafka.loggingConfig("tools-log4j2.xml");
    new ConnectWorker(state, ports, kafka, console, gate)
        .start(
            options.workerConfigTemplate(),
            options.pluginDir(),
            new ConnectWorker.MetricsAgent(options.metricsAgentJar(), options.metricsRules()),
            database.password().orElse(""),
            options.delivery());
    StackRecord stack =
        new StackRecord(
            ports.bootstrapServers(),
            ports.connectUrl(),
            ports.metricsUrl(),
            database.jdbcUrl(),
            database.user(),
            database.embedded(),
            options.delivery(),
            options.jdbcUrlFromDeprecatedEnv());
    record(stack);
    return stack;
  }

  /**
   * Writes the stack's record, unless a stop (Ctrl-C, SIGTERM) came while the services started: its
   * shutdown hook stopped them and removed the record, and one written after that named a stack
   * that does not run. Under the abort's lock, so that the two never interleave.
   */
  synchronized void record(StackRecord stack) {
    if (aborted) {
      throw new StackException("stopped while starting: nothing of the stack runs");
    }
    stack.write(state.stackFile());
  }

  private synchronized boolean aborted() {
    return aborted;
  }

  private Database startDatabase(StackPorts ports) {
    if (options.embeddedPostgres()) {
      return new EmbeddedPostgresServer(state, ports.postgres(), console, gate).start();
    }
    Database database =
        new Database(
            options.externalJdbcUrl().orElseThrow(), options.dbUser(), options.dbPassword(), false);
    console.step(
        "PostgreSQL",
        "using your own " + database.displayUrl() + " (" + database.credentialsNote() + ")");
    database.requireReachable();
    return database;
  }

  /**
   * The services stay up when the demo fails, so the user can look at them; the exit code and the
   * message say what went wrong.
   */
  private boolean runDemo(StackRecord stack) {
    Database database =
        new Database(stack.jdbcUrl(), stack.dbUser(), options.dbPassword(), stack.embedded());
    boolean ok = true;
    if (options.runDemo()) {
      try {
        new OutboxDemo(
                console,
                database,
                new ConnectRest(stack.connectUrl()),
                stack.bootstrapServers(),
                stack.delivery())
            .run(options.connectorConfig(), stack.jdbcUrl());
      } catch (StackException e) {
        ok = false;
        console.blank();
        console.line("The demo failed (the services keep running for a look):");
        console.line("  " + e.getMessage().replace("\n", "\n  "));
      }
    }
    if (aborted()) {
      return false; // stopped meanwhile: no summary of a stack that does not run
    }
    Summary.print(console, stack, state, options.repoRoot());
    return ok;
  }

  /**
   * Closes the gate, so nothing starts any more, then stops whatever of this stack runs (every
   * started process has its pid file by then) and removes its record, data and pid files; the logs
   * stay.
   */
  synchronized void abort() {
    if (aborted) {
      return; // the shutdown hook and a start that failed because of the interrupt: once is enough
    }
    aborted = true;
    gate.close();
    StackProcesses.stop(state, StackProcesses.running(state), console);
    try {
      state.clearAfterStop();
    } catch (StackException e) {
      console.step("Stack", e.getMessage());
    }
  }

  private static void removeQuietly(Thread hook) {
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // The JVM is already shutting down: the hook runs (or ran) anyway.
    }
  }
}
