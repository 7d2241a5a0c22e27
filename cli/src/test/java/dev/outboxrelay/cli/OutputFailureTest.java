package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A write to stdout that fails (a closed pipe, a full disk) is not success: a PrintWriter swallows
 * the IOException, so the CLI asks it afterwards.
 */
class OutputFailureTest {
  /** A stdout whose every write fails, as a pipe whose reader has quit. */
  private static final class BrokenPipe extends OutputStream {
    @Override
    public void write(int b) throws IOException {
      throw new IOException("Broken pipe");
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      throw new IOException("Broken pipe");
    }
  }

  private static final String MESSAGE =
      "error: the output could not be written in full (stdout closed or full); what the command"
          + " changed stays changed\n";

  /** Over the stream itself, and over a PrintStream as in main (System.out swallows it too). */
  @Test
  void aFailedWriteToStdoutExitsWithSix() {
    for (PrintWriter out :
        new PrintWriter[] {
          new PrintWriter(new BrokenPipe(), true),
          new PrintWriter(new PrintStream(new BrokenPipe(), true), true)
        }) {
      StringWriter err = new StringWriter();
      int code =
          OutboxRelayCli.run(
              new String[] {"schema-sql"}, Map.of(), out, new PrintWriter(err, true));

      assertEquals(ExitCode.OUTPUT, code, err::toString);
      assertEquals(MESSAGE, err.toString());
    }
  }

  /** The same command with a working stdout: done. */
  @Test
  void aWrittenOutputExitsWithZero() {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code =
        OutboxRelayCli.run(
            new String[] {"schema-sql"},
            Map.of(),
            new PrintWriter(out, true),
            new PrintWriter(err, true));

    assertEquals(ExitCode.OK, code, err::toString);
    assertEquals("", err.toString());
    assertTrue(out.toString().contains("CREATE TABLE"), out::toString);
  }
}
