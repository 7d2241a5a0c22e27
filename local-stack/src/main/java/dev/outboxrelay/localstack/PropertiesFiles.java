package dev.outboxrelay.localstack;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.TreeMap;

/** Properties files written in key order, so the effective configs are easy to read and diff. */
final class PropertiesFiles {
  private PropertiesFiles() {}

  static Properties read(Path file) {
    Properties p = new Properties();
    try (Reader in = Files.newBufferedReader(file)) {
      p.load(in);
      return p;
    } catch (IOException e) {
      throw new StackException("could not read " + file + ": " + e.getMessage(), e);
    }
  }

  static void write(Path file, Properties properties, String comment) {
    StringBuilder out = new StringBuilder("# ").append(comment).append('\n');
    new TreeMap<>(properties)
        .forEach((k, v) -> out.append(k).append('=').append(escape(v.toString())).append('\n'));
    StateDir.write(file, out.toString());
  }

  private static String escape(String value) {
    return value.replace("\\", "\\\\");
  }
}
