package dev.outboxrelay.connect;

/**
 * Whether Connect runs a source task in its exactly-once task, which a worker with {@code
 * exactly.once.source.support=enabled} does for every source task, whatever the connector's
 * guarantee: that task calls {@code SourceTask.commit()} only from its {@code commitTransaction()}
 * (connect-runtime 4.3.1, both its calls), after a transaction's end or after finding none to end;
 * a worker without support calls it from its offset commit.
 */
final class ConnectTaskKind {
  private static final String EXACTLY_ONCE_TASK =
      "org.apache.kafka.connect.runtime.ExactlyOnceWorkerSourceTask";

  private ConnectTaskKind() {}

  /** True if {@code thread}'s stack holds Connect's exactly-once task ending a transaction. */
  static boolean isCommittingATransaction(Thread thread) {
    for (StackTraceElement frame : thread.getStackTrace()) {
      if (isTransactionCommit(frame.getClassName(), frame.getMethodName())) {
        return true;
      }
    }
    return false;
  }

  /** Whether a frame of this method of this class is the exactly-once task ending a transaction. */
  static boolean isTransactionCommit(String type, String method) {
    return method.equals("commitTransaction") && type.equals(EXACTLY_ONCE_TASK);
  }
}
