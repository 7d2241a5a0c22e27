package dev.outboxrelay.connect;

/**
 * Whether a thread waits in Connect's pause of a task: a paused connector's task threads wait in
 * {@code WorkerTask.awaitUnpause()} until it is resumed (or stopped), polling nothing, and Connect
 * tells the task nothing of it. Such a thread is not hung: read as one, its leases ran out, and at
 * the resume each task's first claim took the rows another had in flight, which both then sent.
 */
final class ConnectPause {
  private static final String RUNTIME = "org.apache.kafka.connect.runtime.";

  private ConnectPause() {}

  /**
   * True if, from the top of {@code thread}'s stack down, only JDK frames come before Connect's
   * {@code awaitUnpause} (matched by package and method: all a task can see of it).
   */
  static boolean isPaused(Thread thread) {
    if (thread == null) {
      return false;
    }
    for (StackTraceElement frame : thread.getStackTrace()) {
      String type = frame.getClassName();
      if (type.startsWith(RUNTIME) && frame.getMethodName().equals("awaitUnpause")) {
        return true;
      }
      if (!ProducerWait.isJdk(type)) {
        return false;
      }
    }
    return false;
  }
}
