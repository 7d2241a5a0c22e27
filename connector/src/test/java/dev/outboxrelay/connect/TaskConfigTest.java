package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.kafka.connect.errors.ConnectException;
import org.junit.jupiter.api.Test;

/**
 * A task configuration Connect hands over and the task refuses (one valid under an earlier build)
 * is named in the task status by its setting and a reason code, never by its value: Kafka's own
 * message quotes the value.
 */
class TaskConfigTest {
  private static ConnectException refused(String key, String value) {
    return assertThrows(
        ConnectException.class,
        () ->
            TaskConfig.parse(
                Map.of(
                    "connection.url",
                    "jdbc:postgresql://h/db",
                    "instance.keys",
                    "eu",
                    key,
                    value)));
  }

  @Test
  void aRefusedSettingIsNamedWithoutItsValue() {
    for (Map.Entry<String, String> bad :
        Map.of("poll.interval.ms", "SENTINEL-7", "claim.batch.size", "-7777777").entrySet()) {
      ConnectException refused = refused(bad.getKey(), bad.getValue());
      String message = refused.getMessage();
      // Connect's status prints the cause chain too, and Kafka's ConfigException quotes the value.
      assertNull(refused.getCause(), message);
      assertTrue(message.contains("invalid value for " + bad.getKey()), message);
      assertTrue(message.endsWith("(reason=INVALID_TASK_CONFIG)"), message);
      assertFalse(message.contains(bad.getValue()), message);
    }
  }
}
