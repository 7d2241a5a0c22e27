package dev.outboxrelay.connect;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The instances of one connector task in this worker, in the order Connect started them. Connect
 * starts a task's next instance in a worker only once the previous one is gone: it removes that
 * instance, then waits for its thread to end, which closes its producer after {@code stop()}, or
 * cancels it when the graceful shutdown timeout passes, which has the producer closed at once (on
 * another thread: an acknowledgement of its last network round may still come, and is then counted
 * late, its row reclaimed, a possible duplicate, as after any grace). From then on, no
 * acknowledgement of the previous instance's records is to be waited for; without this, a stopped
 * instance waited out its whole late-acknowledgement grace (30 s) for records a closed producer
 * would never acknowledge, keeping their leases, and ordered, their aggregates' next rows waited
 * for it (after every Kafka outage long enough for Connect to restart the tasks).
 *
 * <p>Shared by every connector of the plugin in the worker (one class loader), keyed by connector
 * name and task index; an entry per task ever started stays, a few bytes each. Another worker in
 * the same JVM (tests, never a deployment) that runs the same task counts as a successor too: the
 * worst it can do is end a zombie's leases early, which its fencing reports as after a lease ran
 * out.
 */
final class TaskSuccession {
  private static final Map<String, Lineage> LINEAGES = new ConcurrentHashMap<>();

  private TaskSuccession() {}

  /** A new instance of the task starts: every earlier one still waiting is told now. */
  static Instance started(TaskIdentity identity) {
    Lineage lineage =
        LINEAGES.computeIfAbsent(
            identity.connectorName() + "\u0000" + identity.index(), k -> new Lineage());
    List<Runnable> predecessors;
    long generation;
    synchronized (lineage) {
      generation = ++lineage.latest;
      predecessors = new ArrayList<>(lineage.waiting.values());
      lineage.waiting.clear();
    }
    predecessors.forEach(Runnable::run);
    return new Instance(lineage, generation);
  }

  private static final class Lineage {
    private long latest;
    private final Map<Long, Runnable> waiting = new HashMap<>();
  }

  /** One instance of a task. */
  static final class Instance {
    private final Lineage lineage;
    private final long generation;
    private boolean ended; // under the lineage's lock

    private Instance(Lineage lineage, long generation) {
      this.lineage = lineage;
      this.generation = generation;
    }

    /**
     * Runs {@code succeeded} once a later instance of the task starts, or at once if one has
     * already (the stop of an instance whose thread was stuck until Connect cancelled it comes
     * after its successor's start).
     */
    void whenSucceeded(Runnable succeeded) {
      boolean already;
      synchronized (lineage) {
        if (ended) {
          return; // nothing left to tell (its outcome loop died before the stop)
        }
        already = lineage.latest > generation;
        if (!already) {
          lineage.waiting.put(generation, succeeded);
        }
      }
      if (already) {
        succeeded.run();
      }
    }

    /** This instance is done: nothing to tell it any more. */
    void ended() {
      synchronized (lineage) {
        ended = true;
        lineage.waiting.remove(generation);
      }
    }
  }
}
