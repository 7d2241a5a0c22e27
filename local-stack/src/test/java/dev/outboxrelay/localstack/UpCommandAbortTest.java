package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A stop (Ctrl-C, SIGTERM) while {@code up} starts the services: its shutdown hook stops what runs
 * and removes the stack's record; the start, going on meanwhile on the main thread, must not write
 * the record again, or {@code status} and a second {@code up} took a stopped stack for a running
 * one. No process starts here.
 */
class UpCommandAbortTest {
  @TempDir Path stateDir;

  @Test
  void aRecordIsNotWrittenOnceTheStartWasStopped() {
    StackOptions options =
        StackOptions.parse(List.of("up", "--state-dir=" + stateDir), Map.of(), RepoFiles.root());
    UpCommand up =
        new UpCommand(
            options,
            new Console(
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)));
    StackRecord stack =
        new StackRecord(
            "127.0.0.1:9092",
            "http://127.0.0.1:8083",
            "http://127.0.0.1:9404/metrics",
            "jdbc:postgresql://127.0.0.1:15432/outbox",
            "postgres",
            true,
            Delivery.AT_LEAST_ONCE,
            false);
    Path record = new StateDir(stateDir).stackFile();

    up.record(stack);
    assertTrue(Files.exists(record), "written while starting");

    up.abort();
    assertFalse(Files.exists(record), "the stop removes it");
    assertThrows(StackException.class, () -> up.record(stack));
    assertFalse(Files.exists(record), "and a start that goes on does not write it again");
  }
}
