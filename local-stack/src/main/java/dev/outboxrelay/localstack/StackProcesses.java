package dev.outboxrelay.localstack;

import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The processes of one stack that still run, found through their pid files. */
final class StackProcesses {
  private static final Duration STOP_GRACE = Duration.ofSeconds(60);

  private StackProcesses() {}

  static String marker(StateDir state, Component component) {
    return component == Component.POSTGRES
        ? EmbeddedPostgresServer.marker(state)
        : KafkaProcesses.marker(state, component);
  }

  /**
   * Component to pid, for each one whose pid file names a live process of this stack. PostgreSQL
   * without one (a launcher killed while zonky started it, before it wrote the file) is found by
   * its own postmaster.pid: unseen, it ran on holding its port, and down deleted its data under it.
   */
  static Map<Component, Long> running(StateDir state) {
    Map<Component, Long> running = new EnumMap<>(Component.class);
    for (Component component : Component.values()) {
      Optional<Long> pid = state.readPid(component);
      if (pid.isEmpty() && component == Component.POSTGRES) {
        pid = EmbeddedPostgresServer.postmasterPidOf(state);
      }
      if (pid.isPresent() && ProcessControl.isOurs(pid.get(), marker(state, component))) {
        running.put(component, pid.get());
      }
    }
    return running;
  }

  /**
   * The stack recorded in {@code state} when every one of its processes runs: what {@code up}
   * leaves behind. Empty when nothing, or only part of it, runs.
   */
  static Optional<StackRecord> runningStack(StateDir state) {
    Optional<StackRecord> record = StackRecord.read(state.stackFile());
    if (record.isEmpty()) {
      return Optional.empty();
    }
    int expected = record.get().embedded() ? 3 : 2;
    return running(state).size() == expected ? record : Optional.empty();
  }

  /**
   * PostgreSQL gets SIGINT, its fast shutdown: SIGTERM would be its smart shutdown, which waits
   * until every client session (a psql left open) has ended. Kafka and Connect get SIGTERM.
   */
  static ProcessControl.StopSignal signal(Component component) {
    return component == Component.POSTGRES
        ? ProcessControl.StopSignal.INT
        : ProcessControl.StopSignal.TERM;
  }

  /** Stops in reverse start order: Connect (its tasks finish), then Kafka, then PostgreSQL. */
  static void stop(StateDir state, Map<Component, Long> running, Console console) {
    List<Component> order = List.of(Component.CONNECT, Component.KAFKA, Component.POSTGRES);
    for (Component component : order) {
      Long pid = running.get(component);
      if (pid != null) {
        console.step(component.title(), "stopping (pid " + pid + ") ...");
        boolean clean = ProcessControl.stop(pid, STOP_GRACE, signal(component));
        console.step(
            component.title(),
            clean ? "stopped" : "did not stop within " + STOP_GRACE + "; killed");
      }
      state.deletePid(component);
    }
  }
}
