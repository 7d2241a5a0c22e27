package dev.outboxrelay.connect;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * The plugin version Connect shows ({@code GET /connector-plugins}, task status), written into
 * {@code version.properties} by the build's resource filtering; the jar's manifest carries none.
 */
final class Version {
  private static final String VERSION = read();

  private Version() {}

  static String get() {
    return VERSION;
  }

  private static String read() {
    try (InputStream in = Version.class.getResourceAsStream("version.properties")) {
      if (in == null) {
        throw new IllegalStateException("version.properties is missing from the plugin");
      }
      Properties properties = new Properties();
      properties.load(in);
      return properties.getProperty("version");
    } catch (IOException e) {
      throw new UncheckedIOException("version.properties is unreadable", e);
    }
  }
}
