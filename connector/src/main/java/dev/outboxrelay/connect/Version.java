package dev.outboxrelay.connect;

/** The plugin version, from the jar manifest (Maven fills Implementation-Version). */
final class Version {
  private Version() {}

  static String get() {
    String v = Version.class.getPackage().getImplementationVersion();
    return v == null ? "0.1.0-SNAPSHOT" : v;
  }
}
