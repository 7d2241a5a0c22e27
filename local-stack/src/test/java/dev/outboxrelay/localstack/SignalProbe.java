package dev.outboxrelay.localstack;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A child JVM for ProcessControlTest: prints its pid, its {@code /proc/self/stat} line (session id
 * among its fields) and its set of ignored signals, as the JVM left them once it started.
 */
public final class SignalProbe {
  private SignalProbe() {}

  public static void main(String[] args) throws Exception {
    System.out.println("pid " + ProcessHandle.current().pid());
    System.out.println("stat " + Files.readString(Path.of("/proc/self/stat")).trim());
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("SigIgn:")) {
        System.out.println(line);
      }
    }
  }
}
