package dev.outboxrelay.benchmark;

/**
 * The clean-up after a run (delete its connector, topic, slot, database), which must never hide why
 * the run failed: a run refused by Connect has no connector to delete, and the 404 of that delete
 * used to replace Connect's own message.
 */
final class Cleanup {
  /** One step of a clean-up. */
  @FunctionalInterface
  interface Step {
    void run() throws Exception;
  }

  private Cleanup() {}

  /**
   * Runs every step, in order, each even when one before it failed; null steps are skipped.
   *
   * @param failure the run's own error, or null if it succeeded: each step's exception is then
   *     attached to it as suppressed and this method returns normally (the caller rethrows the
   *     run's error, unchanged)
   * @throws Exception without a run error, the first step's exception (later ones suppressed in
   *     it): a run whose clean-up failed is not a success
   */
  static void after(Throwable failure, Step... steps) throws Exception {
    Exception first = null;
    boolean interrupted = false;
    for (Step step : steps) {
      if (step == null) {
        continue;
      }
      try {
        step.run();
      } catch (Exception e) {
        interrupted |= e instanceof InterruptedException;
        if (failure != null) {
          failure.addSuppressed(e);
        } else if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (interrupted && !(first instanceof InterruptedException)) {
      Thread.currentThread().interrupt(); // swallowed above: keep the thread's interrupt
    }
    if (first != null) {
      throw first;
    }
  }
}
