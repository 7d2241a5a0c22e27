package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.source.ConnectorTransactionBoundaries;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.junit.jupiter.api.Test;

/** What the connector tells Connect: exactly-once support, transaction boundaries, task configs. */
class OutboxSourceConnectorTest {

  private static Map<String, String> config(String guarantee) {
    Map<String, String> props = new HashMap<>();
    props.put("name", "orders-outbox");
    props.put("connection.url", "jdbc:postgresql://db.example:5432/app");
    props.put("instance.keys", "orders");
    if (guarantee != null) {
      props.put("delivery.guarantee", guarantee);
      props.put("exactly.once.support", "required");
    }
    return props;
  }

  @Test
  void exactlyOnceIsSupportedOnlyInExactlyOnceMode() {
    OutboxSourceConnector connector = new OutboxSourceConnector();
    assertEquals(
        ExactlyOnceSupport.SUPPORTED, connector.exactlyOnceSupport(config("exactly-once")));
    assertEquals(
        ExactlyOnceSupport.SUPPORTED, connector.exactlyOnceSupport(config(" Exactly-Once ")));
    assertEquals(ExactlyOnceSupport.UNSUPPORTED, connector.exactlyOnceSupport(config(null)));
    assertEquals(
        ExactlyOnceSupport.UNSUPPORTED, connector.exactlyOnceSupport(config("at-least-once")));
    assertEquals(
        ConnectorTransactionBoundaries.UNSUPPORTED,
        connector.canDefineTransactionBoundaries(config("exactly-once")));
  }

  @Test
  void exactlyOnceStartsAtMostOneTaskPerBucket() {
    Map<String, String> props = config("exactly-once");
    props.put("exactly.once.buckets", "3");
    OutboxSourceConnector connector = new OutboxSourceConnector();
    connector.start(props);
    List<Map<String, String>> tasks = connector.taskConfigs(5);
    assertEquals(3, tasks.size());
    for (int i = 0; i < 3; i++) {
      assertEquals(Integer.toString(i), tasks.get(i).get(OutboxSourceTask.TASK_ID));
      assertEquals("3", tasks.get(i).get(OutboxSourceTask.TASK_COUNT));
    }
  }

  @Test
  void atLeastOnceStartsEveryTaskAsked() {
    OutboxSourceConnector connector = new OutboxSourceConnector();
    connector.start(config(null));
    assertEquals(5, connector.taskConfigs(5).size());
  }
}
