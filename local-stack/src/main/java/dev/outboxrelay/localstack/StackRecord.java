package dev.outboxrelay.localstack;

import java.io.IOException;
import java.io.Reader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import java.util.Properties;

/**
 * Where a running stack is: {@code .local-stack/stack.properties}, written by {@code up}, read by
 * {@code status}, {@code down} and a second {@code up}. Never holds a password (the JDBC URL as
 * given is kept, readable by the owner only, since {@code status} connects with it).
 *
 * @param delivery the guarantee the stack was started with ({@code delivery=}; a stack started
 *     before the setting existed ran at least once)
 * @param jdbcUrlFromDeprecatedEnv the database was named only by the deprecated {@code
 *     OUTBOX_JDBC_URL} ({@code up --no-demo}): a later {@code demo} refuses it as {@code up} would
 */
record StackRecord(
    String bootstrapServers,
    String connectUrl,
    String metricsUrl,
    String jdbcUrl,
    String dbUser,
    boolean embedded,
    Delivery delivery,
    boolean jdbcUrlFromDeprecatedEnv) {

  /** True when the worker serves Prometheus metrics (a stack started before it did has none). */
  boolean hasMetrics() {
    return !metricsUrl.isEmpty();
  }

  void write(Path file) {
    Properties p = new Properties();
    p.setProperty("bootstrap.servers", bootstrapServers);
    p.setProperty("connect.url", connectUrl);
    p.setProperty("metrics.url", metricsUrl);
    p.setProperty("jdbc.url", jdbcUrl);
    p.setProperty("db.user", dbUser);
    p.setProperty("postgres.embedded", Boolean.toString(embedded));
    p.setProperty("delivery", delivery.label());
    p.setProperty("jdbc.url.deprecated.env", Boolean.toString(jdbcUrlFromDeprecatedEnv));
    StringWriter out = new StringWriter();
    try {
      p.store(out, "outbox-relay local stack (written by ./local-stack.sh up)");
      StateDir.write(file, out.toString());
      try {
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
      } catch (UnsupportedOperationException e) {
        // Not a POSIX file system: nothing secret is in the file anyway.
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static Optional<StackRecord> read(Path file) {
    if (!Files.isRegularFile(file)) {
      return Optional.empty();
    }
    Properties p = new Properties();
    try (Reader in = Files.newBufferedReader(file)) {
      p.load(in);
    } catch (IOException e) {
      return Optional.empty();
    }
    return Optional.of(
        new StackRecord(
            p.getProperty("bootstrap.servers", ""),
            p.getProperty("connect.url", ""),
            p.getProperty("metrics.url", ""),
            p.getProperty("jdbc.url", ""),
            p.getProperty("db.user", "postgres"),
            Boolean.parseBoolean(p.getProperty("postgres.embedded", "true")),
            Delivery.fromLabel(p.getProperty("delivery", "")),
            Boolean.parseBoolean(p.getProperty("jdbc.url.deprecated.env", "false"))));
  }
}
