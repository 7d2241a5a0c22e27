package dev.outboxrelay.localstack;

import dev.outboxrelay.config.OutboxSourceConfig;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.connect.components.ConnectPlugin;
import org.apache.kafka.connect.runtime.ConnectorConfig;
import org.apache.kafka.connect.runtime.SourceConnectorConfig;
import org.apache.kafka.connect.runtime.TopicCreationConfig;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

/**
 * The keys of a source connector config that Kafka Connect would silently ignore: every key must be
 * defined by the outbox connector, by Connect for source connectors, or belong to one of Connect's
 * key families with a name that family really has. Checked against the Kafka jars of this build,
 * never against hand-kept lists.
 */
final class ConnectorConfigKeys {
  private static final String TOPIC_CREATION = SourceConnectorConfig.TOPIC_CREATION_PREFIX;
  private static final String DEFAULT_GROUP = TopicCreationConfig.DEFAULT_TOPIC_CREATION_GROUP;
  private static final String TRANSFORMS = ConnectorConfig.TRANSFORMS_CONFIG;
  private static final String PREDICATES = ConnectorConfig.PREDICATES_CONFIG;

  /** The client overrides Connect passes to a source task's clients, and the clients' keys. */
  private static final Map<String, Set<String>> CLIENT_OVERRIDES =
      Map.of(
          ConnectorConfig.CONNECTOR_CLIENT_PRODUCER_OVERRIDES_PREFIX, ProducerConfig.configNames(),
          // A source task's offsets consumer (exactly-once, or a connector-specific offsets topic).
          ConnectorConfig.CONNECTOR_CLIENT_CONSUMER_OVERRIDES_PREFIX, ConsumerConfig.configNames(),
          ConnectorConfig.CONNECTOR_CLIENT_ADMIN_OVERRIDES_PREFIX, AdminClientConfig.configNames());

  /** Connector-level converter settings: passed to the converter only if the class is set too. */
  private static final List<String> CONVERTERS =
      List.of(
          ConnectorConfig.KEY_CONVERTER_CLASS_CONFIG,
          ConnectorConfig.VALUE_CONVERTER_CLASS_CONFIG,
          ConnectorConfig.HEADER_CONVERTER_CLASS_CONFIG);

  /** What Connect itself defines under transforms.<alias>. and predicates.<alias>. */
  private static final Set<String> TRANSFORM_KEYS =
      Set.of("type", "plugin.version", "predicate", "negate");

  private static final Set<String> PREDICATE_KEYS = Set.of("type", "plugin.version");

  private ConnectorConfigKeys() {}

  /** The keys of {@code config} Connect or the connector would ignore, each with the reason. */
  static Set<String> problems(Map<String, String> config) {
    Set<String> problems = new TreeSet<>();
    for (String key : config.keySet()) {
      String problem = problem(key, config);
      if (problem != null) {
        problems.add(problem);
      }
    }
    Set<String> predicates = aliases(config, PREDICATES);
    for (String alias : aliases(config, TRANSFORMS)) {
      requireType(config, TRANSFORMS, alias, problems);
      String predicate = config.get(TRANSFORMS + "." + alias + ".predicate");
      if (predicate != null && !predicates.contains(predicate)) {
        problems.add(
            TRANSFORMS + "." + alias + ".predicate: '" + predicate + "' is not in " + PREDICATES);
      }
    }
    for (String alias : predicates) {
      requireType(config, PREDICATES, alias, problems);
    }
    return problems;
  }

  /** Why {@code key} would be ignored, or null if something takes it. */
  private static String problem(String key, Map<String, String> config) {
    if (OutboxSourceConfig.configDef().names().contains(key)
        || SourceConnectorConfig.configDef().names().contains(key)) {
      return null;
    }
    for (var family : CLIENT_OVERRIDES.entrySet()) {
      if (key.startsWith(family.getKey())) {
        String name = key.substring(family.getKey().length());
        return family.getValue().contains(name)
            ? null
            : key + ": '" + name + "' is no config of that Kafka client";
      }
    }
    for (String converter : CONVERTERS) {
      // The rest depends on the converter class, so it is not checked.
      if (key.startsWith(converter + ".")) {
        return config.containsKey(converter)
            ? null
            : key + ": ignored, the config does not set " + converter;
      }
    }
    if (key.startsWith(TOPIC_CREATION)) {
      return topicCreation(key, config);
    }
    if (key.startsWith(TRANSFORMS + ".")) {
      return plugin(key, config, TRANSFORMS, TRANSFORM_KEYS);
    }
    if (key.startsWith(PREDICATES + ".")) {
      return plugin(key, config, PREDICATES, PREDICATE_KEYS);
    }
    return key + ": neither the connector nor Connect defines it";
  }

  /** {@code topic.creation.<group>.<k>}: a declared group, and a key Connect or a topic takes. */
  private static String topicCreation(String key, Map<String, String> config) {
    Set<String> groups =
        new HashSet<>(list(config.get(SourceConnectorConfig.TOPIC_CREATION_GROUPS_CONFIG)));
    groups.add(DEFAULT_GROUP);
    String rest = key.substring(TOPIC_CREATION.length());
    Optional<String> group = longestPrefix(rest, groups);
    if (group.isEmpty()) {
      return key
          + ": its group is neither '"
          + DEFAULT_GROUP
          + "' nor listed in "
          + SourceConnectorConfig.TOPIC_CREATION_GROUPS_CONFIG;
    }
    String name = rest.substring(group.get().length() + 1);
    Set<String> known = topicConfigNames();
    known.add(TopicCreationConfig.REPLICATION_FACTOR_CONFIG);
    known.add(TopicCreationConfig.PARTITIONS_CONFIG);
    // Connect drops include and exclude of the default group: it takes every topic not in another.
    if (!group.get().equals(DEFAULT_GROUP)) {
      known.add(TopicCreationConfig.INCLUDE_REGEX_CONFIG);
      known.add(TopicCreationConfig.EXCLUDE_REGEX_CONFIG);
    }
    return known.contains(name)
        ? null
        : key + ": '" + name + "' is no topic config of group " + group.get();
  }

  /**
   * {@code transforms.<alias>.<k>} or {@code predicates.<alias>.<k>}: a listed alias, and a key
   * Connect defines for every alias or, when the plugin class is on this classpath, one the plugin
   * defines (unchecked for plugins that are not).
   */
  private static String plugin(
      String key, Map<String, String> config, String family, Set<String> frameworkKeys) {
    String rest = key.substring(family.length() + 1);
    Optional<String> alias = longestPrefix(rest, aliases(config, family));
    if (alias.isEmpty()) {
      return key + ": its alias is not listed in " + family;
    }
    String name = rest.substring(alias.get().length() + 1);
    if (frameworkKeys.contains(name)) {
      return null;
    }
    Optional<Set<String>> pluginKeys = pluginKeys(config.get(family + "." + alias.get() + ".type"));
    return pluginKeys.isEmpty() || pluginKeys.get().contains(name)
        ? null
        : key + ": '" + name + "' is no config of " + family + "." + alias.get() + ".type";
  }

  private static Set<String> aliases(Map<String, String> config, String family) {
    return new HashSet<>(list(config.get(family)));
  }

  private static void requireType(
      Map<String, String> config, String family, String alias, Set<String> problems) {
    String type = family + "." + alias + ".type";
    if (config.getOrDefault(type, "").isBlank()) {
      problems.add(type + ": missing for the alias listed in " + family);
    }
  }

  /** The config names of a transformation or predicate class, if it is on this classpath. */
  private static Optional<Set<String>> pluginKeys(String className) {
    if (className == null) {
      return Optional.empty();
    }
    try {
      Class<?> type = Class.forName(className.trim());
      if (!Transformation.class.isAssignableFrom(type) && !Predicate.class.isAssignableFrom(type)) {
        return Optional.empty();
      }
      ConnectPlugin plugin = (ConnectPlugin) type.getDeclaredConstructor().newInstance();
      ConfigDef def = plugin.config();
      return Optional.of(def.names());
    } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
      return Optional.empty();
    }
  }

  /** Every topic-level config Kafka defines: TopicConfig's *_CONFIG constants. */
  static Set<String> topicConfigNames() {
    Set<String> names = new HashSet<>();
    for (Field field : TopicConfig.class.getFields()) {
      if (Modifier.isStatic(field.getModifiers())
          && field.getType() == String.class
          && field.getName().endsWith("_CONFIG")) {
        try {
          names.add((String) field.get(null));
        } catch (IllegalAccessException e) {
          throw new IllegalStateException(e);
        }
      }
    }
    return names;
  }

  /** The longest of {@code candidates} that {@code rest} starts with, followed by a dot. */
  private static Optional<String> longestPrefix(String rest, Set<String> candidates) {
    return candidates.stream()
        .filter(c -> !c.isEmpty() && rest.startsWith(c + ".") && rest.length() > c.length() + 1)
        .max((a, b) -> Integer.compare(a.length(), b.length()));
  }

  private static List<String> list(String value) {
    if (value == null || value.isBlank()) {
      return List.of();
    }
    return Arrays.stream(value.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
  }
}
