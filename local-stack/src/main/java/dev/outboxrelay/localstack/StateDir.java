package dev.outboxrelay.localstack;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

/**
 * {@code .local-stack/}: pid files, logs, data and the effective configs of one stack. Git-ignored;
 * wiped by {@code up} when nothing of it runs any more.
 */
final class StateDir {
  private static final String LOCK_FILE = ".lock";

  /**
   * What the stack writes in its directory. Nothing else is ever deleted there, and a directory
   * holding anything else is no stack's (a checkout, a home named by {@code --state-dir} or {@code
   * LOCAL_STACK_HOME}): neither {@code up} nor {@code down} cleans it.
   */
  private static final Set<String> ENTRIES =
      Set.of(
          LOCK_FILE,
          "config",
          "logs",
          "secrets",
          "pids",
          "postgres",
          "kafka",
          "connect",
          "plugins",
          "agents",
          "stack.properties");

  private final Path root;

  StateDir(Path root) {
    this.root = root;
  }

  Path root() {
    return root;
  }

  Path logs() {
    return root.resolve("logs");
  }

  Path log(String name) {
    return logs().resolve(name + ".log");
  }

  Path pidFile(Component component) {
    return root.resolve("pids").resolve(component.id() + ".pid");
  }

  Path stackFile() {
    return root.resolve("stack.properties");
  }

  Path postgresData() {
    return root.resolve("postgres/data");
  }

  Path kafkaDir() {
    return root.resolve("kafka");
  }

  Path connectDir() {
    return root.resolve("connect");
  }

  Path plugins() {
    return root.resolve("plugins");
  }

  /**
   * Where the worker's file config provider may read: the template's {@code /opt/kafka/secrets}
   * need not exist here, and a worker whose allowed path is missing does not start.
   */
  Path secrets() {
    return root.resolve("secrets");
  }

  /** The copy of the JMX exporter agent the worker runs. */
  Path agents() {
    return root.resolve("agents");
  }

  /** True when an earlier run left anything here (the lock file alone does not count). */
  boolean exists() {
    if (!Files.isDirectory(root)) {
      return false;
    }
    try (Stream<Path> entries = Files.list(root)) {
      return entries.anyMatch(e -> !e.getFileName().toString().equals(LOCK_FILE));
    } catch (IOException e) {
      return true;
    }
  }

  void createLayout() {
    try {
      for (Path dir : List.of(logs(), root.resolve("pids"), kafkaDir(), connectDir(), plugins())) {
        Files.createDirectories(dir);
      }
    } catch (IOException e) {
      throw new StackException("could not create " + root + ": " + e.getMessage(), e);
    }
  }

  Optional<Long> readPid(Component component) {
    Path file = pidFile(component);
    try {
      return Files.isRegularFile(file)
          ? Optional.of(Long.parseLong(Files.readString(file).trim()))
          : Optional.empty();
    } catch (IOException | NumberFormatException e) {
      return Optional.empty();
    }
  }

  void writePid(Component component, long pid) {
    write(pidFile(component), pid + "\n");
  }

  void deletePid(Component component) {
    try {
      Files.deleteIfExists(pidFile(component));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Deletes what the stack wrote but the lock file. */
  void wipe() {
    if (!exists()) {
      return;
    }
    requireOnlyItsOwn();
    try (Stream<Path> entries = Files.list(root)) {
      for (Path entry : entries.toList()) {
        if (!entry.getFileName().toString().equals(LOCK_FILE)) {
          deleteRecursively(entry);
        }
      }
    } catch (IOException e) {
      throw new StackException("could not clean " + root + ": " + e.getMessage(), e);
    }
  }

  /**
   * Refuses to clean a directory holding anything the stack does not write: until this release,
   * {@code --state-dir=$HOME} had {@code up} delete all it held, and {@code down} its {@code
   * kafka/}.
   */
  private void requireOnlyItsOwn() {
    List<String> foreign;
    try (Stream<Path> entries = Files.list(root)) {
      foreign =
          entries
              .map(e -> e.getFileName().toString())
              .filter(name -> !ENTRIES.contains(name) && !leftByACrash(name))
              .sorted()
              .limit(5)
              .toList();
    } catch (IOException e) {
      throw new StackException("could not read " + root + ": " + e.getMessage(), e);
    }
    if (!foreign.isEmpty()) {
      throw new StackException(
          root
              + " holds "
              + String.join(", ", foreign)
              + ", which the local stack does not write: nothing in it was deleted. If it is the"
              + " stack's state directory, remove those; else name an empty or new directory"
              + " (--state-dir, LOCAL_STACK_HOME)");
    }
  }

  /**
   * What a crash, or a look at the directory, leaves beside the stack's entries: the processes run
   * in the state directory, so a JVM's fatal error file or a core dump lands there (and a stack
   * whose worker crashed must still be cleaned by its next {@code up}).
   */
  private static boolean leftByACrash(String name) {
    return name.startsWith("hs_err_pid")
        || name.startsWith("replay_pid")
        || name.startsWith(".attach_pid")
        || name.equals("core")
        || name.startsWith("core.")
        || name.equals(".DS_Store");
  }

  /** Deletes data directories and pid files; keeps logs for a look after the fact. */
  void clearAfterStop() {
    requireOnlyItsOwn();
    for (Path path :
        List.of(
            root.resolve("postgres"),
            kafkaDir(),
            connectDir(),
            plugins(),
            agents(),
            root.resolve("pids"),
            stackFile())) {
      try {
        deleteRecursively(path);
      } catch (IOException e) {
        throw new StackException("could not clean " + path + ": " + e.getMessage(), e);
      }
    }
  }

  /**
   * Runs {@code action} holding the state directory's lock, so two {@code ./local-stack.sh} runs
   * never start or stop the same processes at once.
   */
  <T> T withLock(java.util.concurrent.Callable<T> action) throws Exception {
    FileLock lock = lock();
    try {
      return action.call();
    } finally {
      lock.release();
      lock.channel().close();
    }
  }

  private FileLock lock() {
    try {
      Files.createDirectories(root);
      FileChannel channel =
          FileChannel.open(
              root.resolve(LOCK_FILE), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      FileLock lock = channel.tryLock();
      if (lock == null) {
        channel.close();
        throw new StackException(
            "another ./local-stack.sh command is working on " + root + "; wait for it to finish");
      }
      return lock;
    } catch (OverlappingFileLockException e) {
      throw new StackException("this process already holds the lock on " + root, e);
    } catch (IOException e) {
      throw new StackException("could not lock " + root + ": " + e.getMessage(), e);
    }
  }

  static void write(Path file, String content) {
    try {
      Files.createDirectories(file.getParent());
      Files.writeString(file, content);
    } catch (IOException e) {
      throw new StackException("could not write " + file + ": " + e.getMessage(), e);
    }
  }

  static void deleteRecursively(Path path) throws IOException {
    if (!Files.exists(path)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(path)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  static void copyRecursively(Path from, Path to) {
    try (Stream<Path> walk = Files.walk(from)) {
      for (Path source : walk.toList()) {
        Path target = to.resolve(from.relativize(source).toString());
        if (Files.isDirectory(source)) {
          Files.createDirectories(target);
        } else {
          Files.copy(source, target);
        }
      }
    } catch (IOException e) {
      throw new StackException("could not copy " + from + " to " + to + ": " + e.getMessage(), e);
    }
  }
}
