package dev.outboxrelay.benchmark;

import java.lang.management.ManagementFactory;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * What the Kafka transactions of an exactly-once drain cost, from figures that exist anyway: the
 * time the tasks' transactional producers spent in {@code commitTransaction} (the producer's
 * cumulative {@code txn-commit-time-ns-total}, read over JMX: the embedded workers run in this JVM)
 * and the number of transactions, which is the number of claim batches the run's rows were
 * published from (the exactly-once claim writes its batch into each row, and {@code poll()} returns
 * one claim batch, so with Connect's default {@code transaction.boundary=poll} each is one
 * transaction).
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

  /** Claim batches the run's rows were published from: one transaction each. */
  static long transactions(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM (SELECT DISTINCT lease_epoch, claim_batch FROM "
                    + BenchPostgres.TABLE.qualified()
                    + " WHERE instance_key = '"
                    + Backlog.INSTANCE_KEY
                    + "' AND status = 'PUBLISHED' AND claim_batch IS NOT NULL) b")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
