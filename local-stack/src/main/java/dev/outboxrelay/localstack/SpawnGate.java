package dev.outboxrelay.localstack;

import java.util.function.Supplier;

/**
 * Lets {@code up} be interrupted safely: a process is started and its pid file written while the
 * gate is held, and once the gate is closed nothing more starts. So whoever closes it sees a pid
 * file for every process there is, and no process appears after it looked.
 */
final class SpawnGate {
  private boolean closed;

  /** Runs {@code spawn} (start a process, write its pid file) unless the gate is closed. */
  synchronized <T> T spawn(Supplier<T> spawn) {
    if (closed) {
      throw new StackException("interrupted: not starting anything more");
    }
    return spawn.get();
  }

  /** Returns once no spawn is in progress; later spawns fail. */
  synchronized void close() {
    closed = true;
  }

  /** A gate that is never closed, for callers that start processes without an abort path. */
  static SpawnGate open() {
    return new SpawnGate();
  }
}
