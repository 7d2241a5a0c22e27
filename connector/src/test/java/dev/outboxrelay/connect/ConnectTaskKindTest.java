package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Held to the Kafka Connect runtime the tests run: its exactly-once task's end of a transaction is
 * where the check looks. Renamed or moved, the check would find nothing, and an at-least-once task
 * on an exactly-once worker would again hold rows a transform dropped in flight for ever.
 */
class ConnectTaskKindTest {
  @Test
  void theExactlyOnceTasksEndOfATransactionIsWhereTheCheckLooks()
      throws ReflectiveOperationException {
    Class<?> exactlyOnce =
        Class.forName("org.apache.kafka.connect.runtime.ExactlyOnceWorkerSourceTask");
    Method commit = exactlyOnce.getDeclaredMethod("commitTransaction");
    assertTrue(
        ConnectTaskKind.isTransactionCommit(
            commit.getDeclaringClass().getName(), commit.getName()));
    Class<?> plain = Class.forName("org.apache.kafka.connect.runtime.WorkerSourceTask");
    assertEquals(
        List.of(),
        Arrays.stream(plain.getDeclaredMethods())
            .filter(m -> m.getName().equals("commitTransaction"))
            .toList(),
        "a worker without exactly-once support has no such frame");
  }

  @Test
  void otherFramesAreNot() {
    assertFalse(
        ConnectTaskKind.isTransactionCommit(
            "org.apache.kafka.connect.runtime.WorkerSourceTask", "commitOffsets"));
    assertFalse(
        ConnectTaskKind.isTransactionCommit(
            "com.example.ExactlyOnceWorkerSourceTask", "commitTransaction"));
    assertFalse(ConnectTaskKind.isCommittingATransaction(Thread.currentThread()));
  }
}
