package dev.outboxrelay.reliability;

import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.LogCapture;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;

/**
 * The exactly-once side of the reliability suite: its cluster (two workers with exactly-once source
 * support, connector-level producer overrides allowed), the connector settings of the mode, a look
 * at a task's Kafka transaction, and the recoveries the relay logged.
 */
final class ExactlyOnceMode {
  /** {@link ConnectCluster#TWO_WORKERS} with exactly-once source support. */
  static final ConnectCluster.Options WORKERS =
      ConnectCluster.TWO_WORKERS
          .workerProp("exactly.once.source.support", "enabled")
          .workerProp("connector.client.config.override.policy", "All");

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
