package dev.outboxrelay.benchmark;

import java.lang.management.ManagementFactory;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * What the Kafka transactions of an exactly-once drain cost, from figures that exist anyway: the
 * time the tasks' transactional producers spent in {@code commitTransaction} (the producer's
 * cumulative {@code txn-commit-time-ns-total}, read over JMX: the embedded workers run in this JVM)
 * and the number of transactions the tasks committed, from Connect's own source-task metrics
 * ({@link #transactions}). {@code poll()} returns one claim batch, so with Connect's default {@code
 * transaction.boundary=poll} that is the number of claim batches the run's rows were published
 * from. (Until schema version 8 it was counted from the rows' claim batches; a published row now
 * leaves the table, and its published log entry keeps no claim batch.)
 *
 * <p>A commit waits until every record of its transaction is acknowledged, so the commit time
 * includes the sends' round trip; it is the part of each poll the task spends blocked on Kafka.
 */
final class TransactionCost {
  private TransactionCost() {}

  /**
   * @param transactions claim batches of the run, one transaction each
   * @param rowsPerTransaction rows divided by transactions
   * @param commitSeconds time in {@code commitTransaction}, summed over the tasks
   * @param commitMsPerTransaction {@code commitSeconds} per transaction, in milliseconds
   * @param commitShare {@code commitSeconds} over the drain's time times tasks: the part of the
   *     tasks' time spent committing
   */
  record Result(
      long transactions,
      double rowsPerTransaction,
      double commitSeconds,
      double commitMsPerTransaction,
      double commitShare) {
    static Result of(
        long transactions, int rows, double commitSeconds, double drainSeconds, int tasks) {
      return new Result(
          transactions,
          transactions == 0 ? Double.NaN : (double) rows / transactions,
          commitSeconds,
          transactions == 0 ? Double.NaN : 1e3 * commitSeconds / transactions,
          commitSeconds / (drainSeconds * tasks));
    }

    @Override
    public String toString() {
      return "transactions=%d rowsPerTransaction=%.1f commitSeconds=%.3f commitMsPerTransaction=%.2f commitShare=%.3f"
          .formatted(
              transactions, rowsPerTransaction, commitSeconds, commitMsPerTransaction, commitShare);
    }
  }

  /**
   * Nanoseconds the connector's task producers spent in {@code commitTransaction} so far, summed
   * over its tasks (Connect names them {@code connector-producer-<connector>-<task>}).
   */
  static double commitNanos(String connector) {
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    try {
      double total = 0;
      ObjectName pattern =
          new ObjectName(
              "kafka.producer:type=producer-metrics,client-id=connector-producer-"
                  + connector
                  + "-*");
      for (ObjectName name : server.queryNames(pattern, null)) {
        Object value = server.getAttribute(name, "txn-commit-time-ns-total");
        if (value instanceof Number n && Double.isFinite(n.doubleValue())) {
          total += n.doubleValue();
        }
      }
      return total;
    } catch (JMException e) {
      throw new IllegalStateException("could not read the producers' transaction metrics", e);
    }
  }

  /**
   * The transactions the connector's tasks committed so far, summed over its tasks: per task
   * (Connect names its metrics {@code
   * kafka.connect:type=source-task-metrics,connector=<connector>,task=<n>}), the records it wrote
   * ({@code source-record-write-total}, cumulative) divided by the average size of its committed
   * transactions ({@code transaction-size-avg}, recorded once per commit). That average is a
   * windowed one: the exactly-once worker keeps its samples for longer than any run ({@link
   * BenchConnect#METRICS_WINDOW_MS}), so it covers every transaction of the task. Read while the
   * tasks run: their metrics go with them.
   */
  static long transactions(String connector) {
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    try {
      long total = 0;
      ObjectName pattern = new ObjectName("kafka.connect:type=source-task-metrics,*");
      for (ObjectName name : server.queryNames(pattern, null)) {
        if (!connector.equals(unquoted(name.getKeyProperty("connector")))) {
          continue;
        }
        double written = number(server.getAttribute(name, "source-record-write-total"));
        double size = number(server.getAttribute(name, "transaction-size-avg"));
        if (written > 0 && size > 0) {
          total += Math.round(written / size);
        }
      }
      return total;
    } catch (JMException e) {
      throw new IllegalStateException("could not read the tasks' transaction metrics", e);
    }
  }

  private static double number(Object value) {
    return value instanceof Number n && Double.isFinite(n.doubleValue()) ? n.doubleValue() : 0;
  }

  private static String unquoted(String value) {
    return value != null && value.startsWith("\"") ? ObjectName.unquote(value) : value;
  }
}
