package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.Postgres;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An exactly-once epoch is a transaction id: committed without WAL of its own, asynchronously, it
 * was lost in a database crash right after, and a later instance took it again. Its transaction
 * writes a WAL record, so that it commits durably (docs/design.md, "Buckets, epochs, positions").
 */
class EpochDurabilityTest {
  private static final OutboxTable TABLE = OutboxTable.parse("outbox");

  @TempDir Path dataDirectory;

  /**
   * A server of its own, with synchronous_commit off and a WAL writer that flushes an asynchronous
   * commit only at its next round (a second apart here), killed as a crash would kill it (the
   * postmaster and every backend, the WAL buffers lost) as soon as the epoch is returned.
   */
  @Test
  void anEpochTakenRightBeforeADatabaseCrashIsNotTakenAgain() throws Exception {
    EmbeddedPostgres server = start(0);
    int port = server.getPort();
    long taken;
    try (HikariDataSource pool = pool(server)) {
      taken = new PostgresOutboxStore(pool, TABLE, RelayClock.database(), null).newEpoch();
      crash(server);
    }

    try (EmbeddedPostgres restarted = start(port);
        HikariDataSource pool = pool(restarted)) {
      long next = new PostgresOutboxStore(pool, TABLE, RelayClock.database(), null).newEpoch();
      assertTrue(next > taken, "epoch " + taken + " taken again after the crash: " + next);
    }
  }

  private EmbeddedPostgres start(int port) throws IOException {
    return EmbeddedPostgres.builder()
        .setDataDirectory(dataDirectory)
        .setCleanDataDirectory(false)
        .setPort(port)
        .setServerConfig("wal_writer_delay", "1s")
        .setServerConfig("synchronous_commit", "off") // as a server, database or role may
        .start();
  }

  private static HikariDataSource pool(EmbeddedPostgres server) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(server.getJdbcUrl(Postgres.user(), "postgres"));
    config.setUsername(Postgres.user());
    config.setMaximumPoolSize(1);
    config.setPoolName("epoch-pool");
    return new HikariDataSource(config);
  }

  /**
   * Stops the postmaster and its backends at once, then kills them: none can notice another's death
   * first and flush on its way out. Then releases the server's lock on its data directory (its
   * stop, which fails on a dead server, logs an error).
   */
  private void crash(EmbeddedPostgres server) throws IOException, InterruptedException {
    // The server's process is pg_ctl's, gone once it started the postmaster: the data directory
    // names the postmaster.
    long pid =
        Long.parseLong(Files.readAllLines(dataDirectory.resolve("postmaster.pid")).get(0).strip());
    ProcessHandle postmaster = ProcessHandle.of(pid).orElseThrow();
    List<ProcessHandle> processes =
        Stream.concat(Stream.of(postmaster), postmaster.descendants()).toList();
    signal("-STOP", processes);
    signal("-KILL", processes);
    for (ProcessHandle process : processes) {
      process.onExit().join();
    }
    server.close();
  }

  private static void signal(String signal, List<ProcessHandle> processes)
      throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("kill", signal));
    processes.forEach(process -> command.add(Long.toString(process.pid())));
    // Its status is 1 where a process exited since it was listed (a backend whose session ended).
    new ProcessBuilder(command).inheritIO().start().waitFor();
  }
}
