package dev.outboxrelay.localstack;

import java.util.Map;

/** {@code down}: stops the stack, keeps its logs. */
final class DownCommand {
  private final StackOptions options;
  private final Console console;

  DownCommand(StackOptions options, Console console) {
    this.options = options;
    this.console = console;
  }

  int run() throws Exception {
    StateDir state = new StateDir(options.stateDir());
    if (!state.exists()) {
      console.line("No local stack in " + state.root() + ": nothing to stop.");
      return 0;
    }
    return state.withLock(
        () -> {
          Map<Component, Long> running = StackProcesses.running(state);
          if (running.isEmpty()) {
            console.line("Nothing of the local stack runs any more; cleaning " + state.root());
          }
          StackProcesses.stop(state, running, console);
          state.clearAfterStop();
          console.line(
              "Stopped. Logs stay in " + Summary.relative(options.repoRoot(), state.logs()) + ".");
          return 0;
        });
  }
}
