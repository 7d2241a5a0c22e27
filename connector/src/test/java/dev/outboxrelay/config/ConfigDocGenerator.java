package dev.outboxrelay.config;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.ConfigKey;

/**
 * Renders the configuration reference, {@code docs/configuration.md}, from {@link
 * OutboxSourceConfig#configDef()}: one table per group, keys in their order. The file is never
 * edited by hand; {@link ConfigurationDocTest} fails when it is out of date.
 */
public final class ConfigDocGenerator {
  /**
   * From the repository root; Maven runs {@code exec:java} in the directory it was started in. The
   * connector needs the writer module from the local repository: the first command puts it there.
   */
  static final String REGENERATE =
      "mvn -B -q -pl writer -am install -DskipTests && mvn -B -pl connector test-compile exec:java"
          + " -Dexec.mainClass=dev.outboxrelay.config.ConfigDocGenerator"
          + " -Dexec.classpathScope=test -Dexec.args=docs/configuration.md";

  /** A word holding a ${variable}, such as outbox.${aggregate_type}. */
  private static final Pattern VARIABLE =
      Pattern.compile("[A-Za-z0-9._-]*(\\$\\{[^}\\s]*}(?:[A-Za-z0-9._-]*[A-Za-z0-9_-])?)+");

  private ConfigDocGenerator() {}

  /** Writes the reference to the path given (from the repository root: docs/configuration.md). */
  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      throw new IllegalArgumentException("usage: ConfigDocGenerator <path of configuration.md>");
    }
    Files.writeString(Path.of(args[0]), render(), StandardCharsets.UTF_8);
  }

  public static String render() {
    ConfigDef def = OutboxSourceConfig.configDef();
    StringBuilder md = new StringBuilder();
    md.append("# Configuration reference\n\n")
        .append("<!-- Generated from OutboxSourceConfig.configDef() by ConfigDocGenerator;")
        .append(" do not edit by hand. -->\n\n")
        .append("Every setting of the outbox-relay source connector, generated from its")
        .append(" `ConfigDef`. To regenerate after changing a setting, run from the repository")
        .append(" root:\n\n")
        .append("```bash\n")
        .append(REGENERATE)
        .append("\n```\n\n")
        .append("Required: ")
        .append(
            def.configKeys().values().stream()
                .filter(key -> !key.hasDefault())
                .map(key -> "`" + key.name + "`")
                .collect(Collectors.joining(", ")))
        .append(". Times are in milliseconds.\n");
    for (String group : def.groups()) {
      md.append("\n## ").append(group).append("\n\n");
      md.append("| Key | Type | Default | Valid values | Importance | Description |\n");
      md.append("|---|---|---|---|---|---|\n");
      List<ConfigKey> keys =
          def.configKeys().values().stream()
              .filter(key -> group.equals(key.group))
              .sorted(Comparator.comparingInt(key -> key.orderInGroup))
              .toList();
      for (ConfigKey key : keys) {
        md.append("| `")
            .append(key.name)
            .append("` | ")
            .append(key.type.name().toLowerCase())
            .append(" | ")
            .append(defaultOf(key))
            .append(" | ")
            .append(validValuesOf(key))
            .append(" | ")
            .append(key.importance.name().toLowerCase())
            .append(" | ")
            .append(describe(key.documentation, def))
            .append(" |\n");
      }
    }
    return md.toString();
  }

  private static String defaultOf(ConfigKey key) {
    if (!key.hasDefault()) {
      return "*required*";
    }
    if (key.defaultValue == null) {
      return "*unset*";
    }
    String value = ConfigDef.convertToString(key.defaultValue, key.type);
    return value.isEmpty() ? "*empty*" : "`" + cell(value) + "`";
  }

  private static String validValuesOf(ConfigKey key) {
    if (key.type == ConfigDef.Type.BOOLEAN) {
      return "true, false";
    }
    return key.validator == null ? "" : cell(key.validator.toString());
  }

  /** Keys and ${variables} become code, so Markdown leaves their dots and underscores alone. */
  private static String describe(String doc, ConfigDef def) {
    String text = cell(doc);
    Matcher variables = VARIABLE.matcher(text);
    text = variables.replaceAll(m -> Matcher.quoteReplacement("`" + m.group() + "`"));
    for (String key : def.configKeys().keySet()) {
      text =
          text.replaceAll(
              "(?<![\\w.`])" + Pattern.quote(key) + "(?![\\w`])",
              Matcher.quoteReplacement("`" + key + "`"));
    }
    return text;
  }

  private static String cell(String text) {
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ");
  }
}
