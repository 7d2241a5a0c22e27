package dev.outboxrelay.cli.operator;

/**
 * What a batched requeue or discard says, and is asked, between its batches: the rows changed by
 * the batches committed so far, and whether to stop before the next batch (the CLI's JVM is being
 * ended from outside and must say exactly what was done).
 */
public interface BatchProgress {
  /** Nothing told, never stopped. */
  BatchProgress NONE =
      new BatchProgress() {
        @Override
        public void committed(long changedSoFar) {}

        @Override
        public boolean stopRequested() {
          return false;
        }
      };

  /** After each batch commits: the rows the committed batches changed. */
  void committed(long changedSoFar);

  /**
   * After each batch of a requeue commits: the rows the committed batches requeued, and of those
   * the rows whose deliver_before has passed (recorded FAILED again when claimed).
   */
  default void committed(long changedSoFar, long deadlinePassedSoFar) {
    committed(changedSoFar);
  }

  /** Asked before each batch begins. */
  boolean stopRequested();
}
