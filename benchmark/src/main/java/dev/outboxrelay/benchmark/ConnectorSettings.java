package dev.outboxrelay.benchmark;

import dev.outboxrelay.config.OutboxSourceConfig;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.runtime.ConnectorConfig;
import org.apache.kafka.connect.runtime.SourceConnectorConfig;

/**
 * Checks {@code --connector-setting} before anything starts: a misspelt key would be ignored by the
 * connector yet named in every label, and a value the connector refuses (a {@code
 * lease.duration.ms} below the default {@code lease.renewal.interval.ms}) would only fail the first
 * drain, after the warm-up.
 */
final class ConnectorSettings {
  /** Where the URL would be: never connected to, only checked for its form. */
  static final String PLACEHOLDER_URL = "jdbc:postgresql://localhost:5432/benchmark";

  /** Key prefixes Connect reads from a connector's config besides its own keys. */
  static final List<String> CONNECT_PREFIXES =
      List.of(
          ConnectorConfig.CONNECTOR_CLIENT_PRODUCER_OVERRIDES_PREFIX,
          ConnectorConfig.CONNECTOR_CLIENT_CONSUMER_OVERRIDES_PREFIX,
          ConnectorConfig.CONNECTOR_CLIENT_ADMIN_OVERRIDES_PREFIX,
          ConnectorConfig.TRANSFORMS_CONFIG + ".",
          ConnectorConfig.PREDICATES_CONFIG + ".",
          ConnectorConfig.KEY_CONVERTER_CLASS_CONFIG + ".",
          ConnectorConfig.VALUE_CONVERTER_CLASS_CONFIG + ".",
          ConnectorConfig.HEADER_CONVERTER_CLASS_CONFIG + ".",
          SourceConnectorConfig.TOPIC_CREATION_PREFIX);

  private ConnectorSettings() {}

  /**
   * Refuses a key that is neither the connector's nor Connect's (its source connector keys or one
   * of {@link #CONNECT_PREFIXES}), and a value the connector's config refuses, alone or with the
   * other keys, in any relay drain the run will make (the warm-up's included): the same maps the
   * drains hand to Connect, with a placeholder URL.
   *
   * @throws IllegalArgumentException naming the key, or the drain and the connector's message
   */
  static void check(Options options) {
    if (options.connectorSettings.isEmpty()) {
      return;
    }
    Set<String> known = new HashSet<>(OutboxSourceConfig.configDef().names());
    known.addAll(SourceConnectorConfig.configDef().names());
    for (String key : options.connectorSettings.keySet()) {
      if (!known.contains(key) && CONNECT_PREFIXES.stream().noneMatch(key::startsWith)) {
        throw new IllegalArgumentException(
            "--connector-setting "
                + key
                + ": neither a setting of the connector nor one of Kafka Connect's (misspelt?)");
      }
    }
    List<Drain.Config> drains = new ArrayList<>();
    drains.add(BenchmarkMain.warmUpConfig(options));
    drains.addAll(BenchmarkMain.throughputConfigs(options, new LinkedHashMap<>()));
    for (Drain.Config drain : drains) {
      if (drain.naive()) {
        continue; // not the relay: the settings do not reach it
      }
      Map<String, String> config = Drain.connectorConfig(drain, PLACEHOLDER_URL);
      try {
        new OutboxSourceConfig(config);
      } catch (ConfigException e) {
        throw new IllegalArgumentException(
            "--connector-setting: the connector refuses the config of "
                + drain.label()
                + ": "
                + e.getMessage(),
            e);
      }
    }
  }
}
