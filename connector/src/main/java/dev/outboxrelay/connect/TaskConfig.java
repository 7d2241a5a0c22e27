package dev.outboxrelay.connect;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.mapping.MappingSettings;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.errors.ConnectException;

/**
 * A task's configuration, parsed and typed once at start: the connector's settings, which task this
 * is, and what its loops and mapper need.
 */
record TaskConfig(
    OutboxSourceConfig connector,
    TaskIdentity identity,
    TaskSettings settings,
    MappingSettings mapping) {

  /**
   * Parses the properties Connect hands the task.
   *
   * @throws ConnectException naming the setting at fault, not the value Kafka's message quotes
   */
  static TaskConfig parse(Map<String, String> props) {
    OutboxSourceConfig config;
    try {
      config = new OutboxSourceConfig(props);
    } catch (ConfigException e) {
      throw new ConnectException(
          "outbox-relay: invalid task configuration: "
              + withoutValue(String.valueOf(e.getMessage()))
              + " (reason=INVALID_TASK_CONFIG)");
    }
    TaskIdentity identity = TaskIdentity.from(props);
    String owner =
        LeaseOwners.newOwner(identity.connectorName(), Integer.toString(identity.index()));
    return new TaskConfig(
        config,
        identity,
        TaskSettingsFactory.from(config, owner, identity.index(), identity.count()),
        TaskSettingsFactory.mapping(config));
  }

  /**
   * Kafka's "Invalid value X for configuration name: why" without X: the task status shows it, and
   * a value has no place there (validation, which ran first, names the setting the same way).
   */
  static String withoutValue(String message) {
    Matcher m = INVALID_VALUE.matcher(message);
    return m.matches()
        ? "invalid value for " + m.group(1) + (m.group(2) == null ? "" : ": " + m.group(2))
        : message;
  }

  private static final Pattern INVALID_VALUE =
      Pattern.compile("Invalid value .* for configuration ([^\\s:]+)(?::\\s(.*))?", Pattern.DOTALL);
}
