package dev.outboxrelay.cli.operator;

/**
 * A batched requeue or discard stopped between two batches because {@link
 * BatchProgress#stopRequested()} said so: no batch was in progress, so {@link #changed()} is
 * exactly what was done.
 */
public final class ParkedChangeStoppedException extends RuntimeException {
  private final long changed;

  ParkedChangeStoppedException(long changed) {
    super(null, null, false, false);
    this.changed = changed;
  }

  /** Rows changed by the batches that committed before the stop. */
  public long changed() {
    return changed;
  }
}
