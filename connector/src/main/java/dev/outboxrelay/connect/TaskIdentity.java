package dev.outboxrelay.connect;

import java.util.Map;
import org.apache.kafka.connect.errors.ConnectException;

/**
 * Which of its connector's tasks this is, from the keys the connector adds to each task's config. A
 * malformed value fails the task: read as task 0, two tasks would both run maintenance and claim
 * the same share of the aggregates.
 *
 * @param index this task's index among the connector's tasks
 * @param count how many tasks the connector started
 */
record TaskIdentity(String connectorName, int index, int count) {
  static final String TASK_ID = "task.id";
  static final String TASK_COUNT = "task.count";
  static final String CONNECTOR_NAME = "connector.name";

  TaskIdentity {
    if (count < 1 || index < 0 || index >= count) {
      throw new ConnectException(
          "Invalid outbox-relay task identity: " + TASK_ID + " must be in [0, " + TASK_COUNT + ")");
    }
  }

  static TaskIdentity from(Map<String, String> props) {
    return new TaskIdentity(
        props.getOrDefault(CONNECTOR_NAME, "outbox-relay"),
        parse(props, TASK_ID, "0"),
        parse(props, TASK_COUNT, "1"));
  }

  /** The first task runs the connector-wide maintenance (retention, backlog figures). */
  boolean isFirst() {
    return index == 0;
  }

  /** Names the task's pool and threads. */
  String threadSuffix() {
    return connectorName + "-" + index;
  }

  private static int parse(Map<String, String> props, String key, String absent) {
    String value = props.getOrDefault(key, absent);
    try {
      return Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      throw new ConnectException(
          "Invalid outbox-relay task identity: " + key + " must be a non-negative integer");
    }
  }
}
