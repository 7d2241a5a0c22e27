package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.List;
import org.apache.kafka.connect.runtime.AbstractWorkerSourceTask;
import org.junit.jupiter.api.Test;

/**
 * Held to the Kafka Connect runtime the tests run (the one the plugin is built against): its close
 * of a source task is where the check looks. Renamed or moved, the check would find nothing, and a
 * stopped task would wait out its whole grace again, which no other test would notice.
 */
class ConnectTaskCloseTest {
  @Test
  void connectsCloseOfASourceTaskIsWhereTheCheckLooks() throws ReflectiveOperationException {
    Method close = AbstractWorkerSourceTask.class.getDeclaredMethod("close");
    assertTrue(
        ConnectTaskClose.isTaskClose(close.getDeclaringClass().getName(), close.getName()),
        close::toString);
    for (String name : List.of("WorkerSourceTask", "ExactlyOnceWorkerSourceTask")) {
      Class<?> task = Class.forName("org.apache.kafka.connect.runtime." + name); // not public
      assertEquals(
          List.of(),
          Arrays.stream(task.getDeclaredMethods())
              .filter(m -> m.getName().equals("close") && m.getParameterCount() == 0)
              .toList(),
          task + " closes as its parent does");
    }
  }

  @Test
  void otherClosesAreNot() {
    assertFalse(ConnectTaskClose.isTaskClose("org.apache.kafka.connect.runtime.Worker", "close"));
    assertFalse(
        ConnectTaskClose.isTaskClose(
            "org.apache.kafka.connect.runtime.AbstractWorkerSourceTask", "stop"));
    assertFalse(ConnectTaskClose.isTaskClose("com.example.MyWorkerSourceTask", "close"));
  }

  @Test
  void aThreadOutsideConnectsCloseIsNotClosingATask() {
    assertFalse(ConnectTaskClose.isClosingATask(Thread.currentThread()));
  }
}
