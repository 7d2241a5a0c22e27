package dev.outboxrelay.connect;

/**
 * Whether a thread is inside Connect's close of a source task: {@code AbstractWorkerSourceTask
 * .close()} (before Kafka 3.3, {@code WorkerSourceTask.close()}) calls the task's {@code stop()},
 * then closes the task's producer, waiting for what it still sends (30 s at most, then it aborts
 * the rest); Connect calls {@code stop()} from nowhere else since Kafka 3.0. Once the thread that
 * called {@code stop()} has left that close, the producer is closed and no acknowledgement can
 * come: a stopped task need not wait out its grace for them (a task that failed has no successor to
 * tell it, {@link TaskSuccession}).
 */
final class ConnectTaskClose {
  private static final String RUNTIME = "org.apache.kafka.connect.runtime.";

  private ConnectTaskClose() {}

  /** True if {@code thread}'s stack holds Connect's close of a source task. */
  static boolean isClosingATask(Thread thread) {
    for (StackTraceElement frame : thread.getStackTrace()) {
      if (isTaskClose(frame.getClassName(), frame.getMethodName())) {
        return true;
      }
    }
    return false;
  }

  /** Whether a frame of this method of this class is Connect's close of a source task. */
  static boolean isTaskClose(String type, String method) {
    return method.equals("close") && type.startsWith(RUNTIME) && type.endsWith("WorkerSourceTask");
  }
}
