package dev.outboxrelay.reliability;

import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.LogCapture;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;

/**
 * The exactly-once side of the reliability suite: its cluster (two workers with exactly-once source
 * support, connector-level producer overrides allowed), the connector settings of the mode, a look
 * at a task's Kafka transaction, and the recoveries the relay logged.
 */
final class ExactlyOnceMode {
  /**
   * {@link ConnectCluster#TWO_WORKERS} with exactly-once source support. A dead worker's tasks are
   * reassigned 1 s after the session timeout instead of 10 s (the worker-crash test's victim is
   * killed for good; in the broker-restart test the workers stay in the group, so no reassignment
   * waits on that delay), and the broker looks for timed-out transactions every second instead of
   * every 10 s: only how soon the scenarios' conditions hold changes.
   */
  static final ConnectCluster.Options WORKERS =
      ConnectCluster.TWO_WORKERS
          .workerProp("exactly.once.source.support", "enabled")
          .workerProp("connector.client.config.override.policy", "All")
          .workerProp("scheduled.rebalance.max.delay.ms", "1000")
          .brokerProp("transaction.abort.timed.out.transaction.cleanup.interval.ms", "1000");

  static final String RECOVERED = "Exactly-once task recovered";
  private static final Pattern COUNTS =
      Pattern.compile("recorded_published=(\\d+) released=(\\d+)");

  private ExactlyOnceMode() {}

  /** {@code config} switched to exactly-once delivery (a scenario's own settings otherwise). */
  static Map<String, String> exactlyOnce(Map<String, String> config) {
    config.put("delivery.guarantee", "exactly-once");
    config.put("exactly.once.support", "required");
    config.put("exactly.once.buckets", "16");
    return config;
  }

  /** Connect's transactional id of a task: {@code <group.id>-<connector>-<task>}. */
  static String transactionalId(ConnectCluster kit, String connector, int task) {
    return kit.workerProps().get("group.id") + "-" + connector + "-" + task;
  }

  /** The broker's view of a transactional id, empty if it never began a transaction. */
  static Optional<TransactionDescription> transaction(ConnectCluster kit, String transactionalId) {
    try (Admin admin = kit.connect().kafka().createAdminClient()) {
      return transaction(admin, transactionalId);
    }
  }

  static Optional<TransactionDescription> transaction(Admin admin, String transactionalId) {
    try {
      return Optional.of(
          admin.describeTransactions(List.of(transactionalId)).all().get().get(transactionalId));
    } catch (ExecutionException e) {
      if (e.getCause() instanceof TransactionalIdNotFoundException) {
        return Optional.empty();
      }
      throw new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /**
   * Every transaction the broker knows that is not complete, with its state, age and partitions,
   * and the partitions of these topics whose last stable offset lags their end: what a
   * read_committed reader waits for.
   */
  static String openTransactions(ConnectCluster kit, String... topics) {
    StringBuilder out = new StringBuilder();
    try (Admin admin = kit.connect().kafka().createAdminClient()) {
      List<String> ids =
          admin.listTransactions().all().get().stream()
              .filter(t -> t.state() != TransactionState.COMPLETE_COMMIT)
              .filter(t -> t.state() != TransactionState.COMPLETE_ABORT)
              .filter(t -> t.state() != TransactionState.EMPTY)
              .map(TransactionListing::transactionalId)
              .toList();
      admin
          .describeTransactions(ids)
          .all()
          .get()
          .forEach(
              (id, t) ->
                  out.append(id)
                      .append(' ')
                      .append(t.state())
                      .append(" started ")
                      .append(t.transactionStartTimeMs().orElse(-1))
                      .append(' ')
                      .append(t.topicPartitions())
                      .append('\n'));
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      for (var d : admin.describeTopics(List.of(topics)).allTopicNames().get().values()) {
        d.partitions()
            .forEach(
                p -> latest.put(new TopicPartition(d.name(), p.partition()), OffsetSpec.latest()));
      }
      var committed =
          admin
              .listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
              .all()
              .get();
      var end = admin.listOffsets(latest).all().get();
      committed.forEach(
          (tp, lso) -> {
            long high = end.get(tp).offset();
            if (lso.offset() < high) {
              out.append(tp).append(" LSO ").append(lso.offset()).append(" < end ").append(high);
              out.append('\n');
            }
          });
    } catch (ExecutionException e) {
      out.append("(could not describe: ").append(e.getCause()).append(')');
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return out.toString();
  }

  /** What the recoveries of a connector's tasks recorded and released, from the log lines. */
  record Recoveries(int starts, long published, long released) {
    Recoveries plus(Recoveries other) {
      return new Recoveries(
          starts + other.starts, published + other.published, released + other.released);
    }

    static Recoveries of(List<String> lines) {
      int starts = 0;
      long published = 0;
      long released = 0;
      for (String line : lines) {
        Matcher m = COUNTS.matcher(line);
        if (line.contains(RECOVERED) && m.find()) {
          starts++;
          published += Long.parseLong(m.group(1));
          released += Long.parseLong(m.group(2));
        }
      }
      return new Recoveries(starts, published, released);
    }
  }

  /** The recoveries this JVM's tasks of {@code connector} logged since {@code mark}. */
  static Recoveries recoveries(String connector, long mark) {
    return Recoveries.of(
        LogCapture.get()
            .matching(
                mark, e -> e.message().startsWith(RECOVERED) && connector.equals(e.connector()))
            .stream()
            .map(LogCapture.Event::message)
            .toList());
  }
}
