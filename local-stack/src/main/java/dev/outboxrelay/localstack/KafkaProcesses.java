package dev.outboxrelay.localstack;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/** What the broker and the Connect worker JVMs share: classpath, logging and JVM options. */
final class KafkaProcesses {
  private final StateDir state;
  private final String classpath;

  private KafkaProcesses(StateDir state, String classpath) {
    this.state = state;
    this.classpath = classpath;
  }

  /**
   * Reads the classpath that the build wrote (local-stack/target/kafka.classpath): Kafka's jars and
   * a logging binding, nothing of the connector.
   */
  static KafkaProcesses from(StateDir state, Path classpathFile) {
    if (!Files.isRegularFile(classpathFile)) {
      throw new StackException(
          classpathFile
              + " is missing: build first with `mvn -B -DskipTests package`"
              + " (./local-stack.sh up does it unless --no-build is given)");
    }
    try {
      return new KafkaProcesses(state, Files.readString(classpathFile).trim());
    } catch (IOException e) {
      throw new StackException("could not read " + classpathFile + ": " + e.getMessage(), e);
    }
  }

  String classpath() {
    return classpath;
  }

  /** A marker on the command line that says which stack and which component a pid belongs to. */
  static String marker(StateDir state, Component component) {
    return "-Doutboxrelay.localstack=" + state.root() + "#" + component.id();
  }

  List<String> jvmOptions(Component component) {
    return List.of(
        "-Xms128m",
        "-Xmx512m",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-Djava.awt.headless=true",
        "-Dlog4j2.configurationFile=" + loggingConfig("kafka-log4j2.xml"),
        marker(state, component));
  }

  /** Copies a logging config out of the launcher jar into the state directory, once. */
  Path loggingConfig(String name) {
    Path target = state.root().resolve("config").resolve(name);
    if (!Files.exists(target)) {
      try (InputStream in = KafkaProcesses.class.getResourceAsStream("/localstack/" + name)) {
        Files.createDirectories(target.getParent());
        Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
      } catch (IOException | NullPointerException e) {
        throw new StackException("could not write " + target + ": " + e.getMessage(), e);
      }
    }
    return target;
  }

  /** Fails, with the end of its log, when a process died while we waited for it. */
  static Runnable aliveCheck(Process process, String title, Path log) {
    return () -> {
      if (!process.isAlive()) {
        throw new StackException(
            title
                + " exited with code "
                + process.exitValue()
                + " while starting. Last lines of "
                + log
                + ":\n"
                + ProcessControl.tail(log, 25));
      }
    };
  }
}
