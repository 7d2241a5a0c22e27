package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;

/**
 * The packaged plugin (connector/target, written at package, so this runs after it): a directory
 * plugin.path takes as-is, in the Confluent Hub layout, with the connector's runtime dependencies
 * and nothing the worker provides.
 */
class PluginPackageIT {
  private static final String VERSION = System.getProperty("outboxrelay.version");
  private static final String NAME = "outboxrelay-outbox-relay-connector-" + VERSION;
  private static final Path PLUGIN_PATH = RepoFiles.file("connector/target/plugin");
  private static final Path PLUGIN = PLUGIN_PATH.resolve(NAME);
  private static final Path ZIP = RepoFiles.file("connector/target/" + NAME + ".zip");

  /** Jars of the worker's own classpath: a second copy in a plugin breaks class identity. */
  private static final List<String> WORKER_JAR_PREFIXES =
      List.of(
          "kafka-", "kafka_", "connect-api", "connect-runtime", "connect-json", "slf4j-", "log4j-");

  /** {@code flyway-core-13.12.1.jar}, {@code jackson-annotations-2.20.jar}: name and version. */
  private static final Pattern VERSIONED_JAR = Pattern.compile("(.+?)-\\d[^-]*(-SNAPSHOT)?\\.jar");

  /** A Markdown link's target, without its anchor: {@code [text](target#anchor)}. */
  private static final Pattern MARKDOWN_LINK = Pattern.compile("\\]\\(([^)#\\s]+)(?:#[^)]*)?\\)");

  /** How docs/deployment.md names a jar of lib/: {@code flyway-core-<v>.jar}. */
  private static final Pattern DOCUMENTED_JAR =
      Pattern.compile("([A-Za-z][A-Za-z0-9.-]*?)-<(?:v|version)>\\.jar");

  @Test
  void pluginPathHoldsOnePluginInTheConfluentHubLayout() throws IOException {
    try (Stream<Path> plugins = Files.list(PLUGIN_PATH)) {
      assertEquals(List.of(PLUGIN), plugins.toList());
    }
    for (String part :
        List.of("manifest.json", "lib", "doc/README.md", "etc/local-connector.json")) {
      assertTrue(Files.exists(PLUGIN.resolve(part)), part);
    }
    // Every connector config that the shipped doc/config/README.md describes.
    for (String config :
        List.of(
            "local-connector.json",
            "production-connector.json",
            "exactly-once-connector.json",
            "schema-registry-connector.json")) {
      assertEquals(
          Files.readString(RepoFiles.file("config/" + config)),
          Files.readString(PLUGIN.resolve("etc/" + config)),
          config);
    }
  }

  /**
   * The README the manifest points to, and every Markdown file shipped beside it, link only to
   * files the archive holds: relative links resolve inside doc/ as they do in the repository.
   */
  @Test
  void everyRelativeLinkOfTheShippedDocsResolvesInsideThePlugin() throws IOException {
    Path root = PLUGIN.toAbsolutePath().normalize();
    Path doc = root.resolve("doc");
    List<String> broken = new java.util.ArrayList<>();
    int links = 0;
    try (Stream<Path> files = Files.walk(doc)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".md")).toList()) {
        Matcher m = MARKDOWN_LINK.matcher(Files.readString(file));
        while (m.find()) {
          String target = m.group(1);
          if (target.startsWith("http:")
              || target.startsWith("https:")
              || target.startsWith("mailto:")) {
            continue;
          }
          links++;
          Path resolved = file.getParent().resolve(target).normalize();
          if (!resolved.startsWith(root) || !Files.exists(resolved)) {
            broken.add(root.relativize(file) + " -> " + target);
          }
        }
      }
    }
    assertTrue(links > 50, "the shipped docs' relative links were read: " + links);
    assertEquals(List.of(), broken);
  }

  @Test
  void manifestDescribesThisSourceConnectorAndVersion() {
    JsonNode manifest = RepoFiles.json("connector/target/plugin/" + NAME + "/manifest.json");
    assertEquals("outbox-relay-connector", manifest.path("name").asText());
    assertEquals(VERSION, manifest.path("version").asText());
    assertEquals("source", manifest.path("component_types").get(0).asText());
    assertFalse(manifest.toString().contains("${"), "unfiltered placeholder in manifest.json");
  }

  @Test
  void libHoldsTheConnectorAndItsRuntimeDependenciesButNoWorkerJars() throws IOException {
    Set<String> jars = jarNames();
    for (String expected :
        List.of(
            "outbox-relay-connector-" + VERSION + ".jar",
            "outbox-relay-writer-" + VERSION + ".jar",
            "postgresql-",
            "HikariCP-",
            "flyway-core-",
            "flyway-database-postgresql-")) {
      assertTrue(jars.stream().anyMatch(j -> j.startsWith(expected)), expected + " in " + jars);
    }
    for (String jar : jars) {
      assertFalse(
          WORKER_JAR_PREFIXES.stream().anyMatch(jar::startsWith),
          jar + " belongs to the worker, not the plugin");
      try (ZipFile zip = new ZipFile(PLUGIN.resolve("lib").resolve(jar).toFile())) {
        assertFalse(
            zip.stream()
                .map(ZipEntry::getName)
                .anyMatch(n -> n.startsWith("org/apache/kafka/") || n.startsWith("org/slf4j/")),
            jar + " embeds Kafka or slf4j classes");
      }
    }
  }

  @Test
  void deploymentMdListsEveryJarOfLibAndNoOther() throws IOException {
    Set<String> inLib = new TreeSet<>();
    for (String jar : jarNames()) {
      Matcher m = VERSIONED_JAR.matcher(jar);
      assertTrue(m.matches(), jar + " is not <name>-<version>.jar");
      inLib.add(m.group(1));
    }
    Set<String> documented = new TreeSet<>();
    Matcher m = DOCUMENTED_JAR.matcher(RepoFiles.read("docs/deployment.md"));
    while (m.find()) {
      documented.add(m.group(1));
    }
    assertEquals(inLib, documented, "docs/deployment.md's lib/ list against " + PLUGIN);
  }

  @Test
  void theConnectorJarDeclaresItsConnectorForServiceLoading() throws IOException {
    Path jar = PLUGIN.resolve("lib/outbox-relay-connector-" + VERSION + ".jar");
    try (ZipFile zip = new ZipFile(jar.toFile())) {
      ZipEntry services =
          zip.getEntry("META-INF/services/org.apache.kafka.connect.source.SourceConnector");
      String declared =
          new String(zip.getInputStream(services).readAllBytes(), StandardCharsets.UTF_8).trim();
      assertEquals(ConnectWorker.CONNECTOR_CLASS, declared);
      assertTrue(
          zip.getEntry(declared.replace('.', '/') + ".class") != null,
          declared + " is declared but not in the jar");
    }
  }

  @Test
  void theZipHoldsExactlyTheDirectory() throws IOException {
    Set<String> inDirectory = new TreeSet<>();
    try (Stream<Path> files = Files.walk(PLUGIN)) {
      files
          .filter(Files::isRegularFile)
          .forEach(
              f ->
                  inDirectory.add(NAME + "/" + PLUGIN.relativize(f).toString().replace('\\', '/')));
    }
    Set<String> inZip = new TreeSet<>();
    try (ZipFile zip = new ZipFile(ZIP.toFile())) {
      zip.stream().filter(e -> !e.isDirectory()).forEach(e -> inZip.add(e.getName()));
    }
    assertEquals(inDirectory, inZip);
  }

  private static Set<String> jarNames() throws IOException {
    try (Stream<Path> files = Files.list(PLUGIN.resolve("lib"))) {
      Set<String> names = new TreeSet<>();
      files.forEach(f -> names.add(f.getFileName().toString()));
      return names;
    }
  }
}
