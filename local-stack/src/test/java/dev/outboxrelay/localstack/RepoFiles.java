package dev.outboxrelay.localstack;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The repository's files as the tests read them: JSON, YAML (multi-document) and properties. */
final class RepoFiles {
  static final ObjectMapper JSON = new ObjectMapper();
  static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

  private RepoFiles() {}

  /** The repository root: the nearest directory upwards that holds local-stack.sh. */
  static Path root() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isRegularFile(dir.resolve("local-stack.sh"))) {
      dir = dir.getParent();
    }
    if (dir == null) {
      throw new IllegalStateException("no local-stack.sh above " + Path.of("").toAbsolutePath());
    }
    return dir;
  }

  static Path file(String relative) {
    return root().resolve(relative);
  }

  static String read(String relative) {
    try {
      return Files.readString(file(relative));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static JsonNode json(String relative) {
    try {
      return JSON.readTree(file(relative).toFile());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Every document of a YAML file, in order. */
  static List<JsonNode> yamlDocuments(String relative) {
    try (var parser = YAML.getFactory().createParser(file(relative).toFile())) {
      List<JsonNode> docs = new ArrayList<>();
      var it = YAML.readValues(parser, JsonNode.class);
      while (it.hasNext()) {
        JsonNode doc = it.next();
        if (doc != null && !doc.isNull() && !doc.isEmpty()) {
          docs.add(doc);
        }
      }
      return docs;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static JsonNode yaml(String relative) {
    return yamlDocuments(relative).get(0);
  }

  static Properties properties(String relative) {
    Properties p = new Properties();
    try (var in = Files.newBufferedReader(file(relative))) {
      p.load(in);
      return p;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code <kafka.version>} of the root pom: the one Kafka version of the whole project. */
  static String kafkaVersion() {
    Matcher m = Pattern.compile("<kafka.version>([^<]+)</kafka.version>").matcher(read("pom.xml"));
    if (!m.find()) {
      throw new IllegalStateException("no kafka.version in pom.xml");
    }
    return m.group(1);
  }

  /** A JSON or YAML object of string values as a map (numbers and booleans as text). */
  static Map<String, String> stringMap(JsonNode object) {
    Map<String, String> map = new LinkedHashMap<>();
    object.properties().forEach(e -> map.put(e.getKey(), e.getValue().asText()));
    return map;
  }
}
