package dev.outboxrelay.benchmark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * CPU time of the PostgreSQL server's process tree, from /proc (Linux). The embedded server is not
 * a child of this JVM ({@code pg_ctl} starts it and exits), so its postmaster is found through its
 * {@code postmaster.pid} file. The server's CPU is the postmaster's own user + system time, the
 * time of the children it has already reaped ({@code cutime}, {@code cstime}: backends of closed
 * connections, finished autovacuum workers) and the time of its live children. Reading them at two
 * moments gives the server's CPU in between, processes that came and went included.
 */
final class ServerCpu {
  private final long postmaster;
  private final double ticksPerSecond;

  private ServerCpu(long postmaster, double ticksPerSecond) {
    this.postmaster = postmaster;
    this.ticksPerSecond = ticksPerSecond;
  }

  /** The server whose data directory is given; a reader that answers NaN where /proc is absent. */
  static ServerCpu of(Path dataDirectory) {
    try {
      List<String> pidFile = Files.readAllLines(dataDirectory.resolve("postmaster.pid"));
      long pid = Long.parseLong(pidFile.get(0).trim());
      if (!Files.exists(Path.of("/proc", Long.toString(pid), "stat"))) {
        return new ServerCpu(-1, 100);
      }
      return new ServerCpu(pid, clockTicks());
    } catch (IOException | RuntimeException e) {
      return new ServerCpu(-1, 100);
    }
  }

  double seconds() {
    if (postmaster < 0) {
      return Double.NaN;
    }
    // A backend reaped between the postmaster's reading and the scan of its children would be in
    // neither: read again while the postmaster's reaped children's time moved meanwhile.
    for (int attempt = 0; attempt < 10; attempt++) {
      long[] own = stat(postmaster);
      if (own == null) {
        return Double.NaN;
      }
      double seconds = withChildren(own);
      long[] after = stat(postmaster);
      if (after == null || Double.isNaN(seconds)) {
        return Double.NaN;
      }
      if (after[3] == own[3] && after[4] == own[4]) {
        return seconds;
      }
    }
    return Double.NaN; // connections closing all the time: no consistent reading
  }

  private double withChildren(long[] own) {
    long ticks = own[1] + own[2] + own[3] + own[4];
    try (Stream<Path> processes = Files.list(Path.of("/proc"))) {
      for (Path p : (Iterable<Path>) processes::iterator) {
        String name = p.getFileName().toString();
        if (name.isEmpty() || !Character.isDigit(name.charAt(0))) {
          continue;
        }
        long[] child = stat(Long.parseLong(name));
        if (child != null && child[0] == postmaster) {
          ticks += child[1] + child[2] + child[3] + child[4];
        }
      }
    } catch (IOException e) {
      return Double.NaN;
    }
    return ticks / ticksPerSecond;
  }

  /** ppid, utime, stime, cutime, cstime of a process; null if it is gone. */
  private static long[] stat(long pid) {
    String line;
    try {
      line = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
    } catch (IOException e) {
      return null; // exited meanwhile: its time is in the postmaster's cutime/cstime once reaped
    }
    // The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
    String[] f = line.substring(line.lastIndexOf(')') + 2).trim().split(" ");
    // f[0] is field 3 (state): field k is f[k - 3].
    return new long[] {
      Long.parseLong(f[1]),
      Long.parseLong(f[11]),
      Long.parseLong(f[12]),
      Long.parseLong(f[13]),
      Long.parseLong(f[14])
    };
  }

  /** USER_HZ, the unit of /proc/<pid>/stat times: {@code getconf CLK_TCK}, 100 if it fails. */
  private static double clockTicks() {
    try {
      Process p = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes()).trim();
      if (p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 0) {
        return Double.parseDouble(out);
      }
    } catch (IOException | RuntimeException e) {
      // fall through
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return 100;
  }
}
