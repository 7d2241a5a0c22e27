package dev.outboxrelay.localstack;

import java.io.PrintStream;
import java.util.Locale;

/** Progress lines with the time since start, so a slow step is visible while it happens. */
final class Console {
  private final PrintStream out;
  private final long startNanos = System.nanoTime();

  Console(PrintStream out) {
    this.out = out;
  }

  /** A step: {@code [ 3.2s] PostgreSQL starting ...}. */
  void step(String component, String message) {
    out.printf(Locale.ROOT, "[%5.1fs] %-10s %s%n", elapsedSeconds(), component, message);
    out.flush();
  }

  /** An indented detail line under the previous step. */
  void detail(String message) {
    out.println("           " + message);
    out.flush();
  }

  void line(String message) {
    out.println(message);
    out.flush();
  }

  void blank() {
    out.println();
  }

  double elapsedSeconds() {
    return (System.nanoTime() - startNanos) / 1e9;
  }
}
