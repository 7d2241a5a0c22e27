package dev.outboxrelay.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Runs the CLI in-process, as the shell would, and captures what it prints. */
final class Cli {
  private final Map<String, String> env = new HashMap<>();

  Cli() {}

  /** A CLI whose environment points at this database as the superuser. */
  static Cli against(String jdbcUrl) {
    return new Cli()
        .env(ConnectionOptions.JDBC_URL_ENV, jdbcUrl)
        .env(ConnectionOptions.USER_ENV, TestDatabase.user());
  }

  Cli env(String name, String value) {
    env.put(name, value);
    return this;
  }

  Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code =
        OutboxRelayCli.run(args, env, new PrintWriter(out, true), new PrintWriter(err, true));
    return new Result(code, out.toString(), err.toString());
  }

  /** Runs a data command for an instance key. */
  Result forKey(String instanceKey, String command, String... more) {
    List<String> args = new ArrayList<>(List.of(command, "--instance-key", instanceKey));
    args.addAll(List.of(more));
    return run(args.toArray(String[]::new));
  }

  record Result(int exitCode, String out, String err) {
    JsonNode json() {
      try {
        return Text.json().readTree(out);
      } catch (JsonProcessingException e) {
        throw new AssertionError("not JSON: " + out, e);
      }
    }

    /** True when some line of stdout matches {@code regex} as a whole. */
    boolean hasLine(String regex) {
      return out.lines().anyMatch(line -> line.matches(regex));
    }

    @Override
    public String toString() {
      return "exit " + exitCode + "\n--- out\n" + out + "--- err\n" + err;
    }
  }
}
