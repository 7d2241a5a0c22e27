package dev.outboxrelay.connect;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.mapping.MappingSettings;
import java.util.Map;
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
   * @throws ConnectException naming the setting at fault (never its value)
   */
  static TaskConfig parse(Map<String, String> props) {
    OutboxSourceConfig config;
    try {
      config = new OutboxSourceConfig(props);
    } catch (ConfigException e) {
      throw new ConnectException("Invalid outbox-relay task configuration: " + e.getMessage());
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
}
