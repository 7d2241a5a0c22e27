package dev.outboxrelay.reliability;

import static dev.outboxrelay.reliability.ExactlyOnceMode.exactlyOnce;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.outboxrelay.reliability.ExactlyOnceVerdict.Figures;
import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.OutboxDb;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The only broker stops for longer than a lease during an exactly-once drain, then returns. Connect
 * revokes the tasks and starts new instances once it is back; they fence the old producers and
 * recover from the offsets. A cluster of its own: a broker restart leaves the kit's cluster in a
 * state later scenarios should not inherit.
 *
 * <p>The broker stops without a controlled shutdown. With one, the controller first moves every
 * partition to no leader (leader -1: the only broker is leaving) while the broker's transaction
 * coordinator still runs. A transaction completed in that window (an EndTxn, a fencing
 * InitProducerId, or the retry of a marker refused with NOT_LEADER_OR_FOLLOWER) finds no leader
 * endpoint for its partitions, which Kafka 4.1+ takes for deleted partitions: the coordinator skips
 * their markers ("likely deleted already") and completes the transaction, and the partitions keep
 * it open for good (hanging transactions, in about half the runs). That is KAFKA-20734:
 * KRaftMetadataCache.getPartitionLeaderEndpoint returns empty instead of Node.noNode() for a
 * partition without a leader since it moved to Java (KAFKA-17573), and
 * TransactionMarkerChannelManager.addTxnMarkersToBrokerQueue then drops the marker. Without a
 * controlled shutdown the broker stops its coordinator before the controller fences it (session
 * timeout); on restart every partition gets its leader back in one metadata update, before the
 * coordinator reloads its transactions and resends their markers. Connect and the relay still lose
 * the broker mid-transaction; its logs are still closed cleanly. With it, 1 run in 15 still hung
 * (docs/reliability.md, E5), which the stuck-partition check below reports as a skip.
 */
class ExactlyOnceBrokerRestartTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER =
      ConnectCluster.shared(
          // The exactly-once workers' broker settings too: without the 1 s cleanup of timed-out
          // transactions, one the restart left open was aborted only 10 to 20 s after it began,
          // which the stuck-partition check's 20 s could take for a hanging one (a skip).
          new ConnectCluster.Options(
                  "outbox-relay-eos-broker",
                  ExactlyOnceMode.WORKERS.workers(),
                  ExactlyOnceMode.WORKERS.workerProps(),
                  ExactlyOnceMode.WORKERS.brokerProps())
              .brokerProp("controlled.shutdown.enable", "false"));

  static final int ROWS = ExactlyOnceFaultsTest.ROWS;

  /**
   * Exactly once, with transactions the broker aborts after 10 s instead of 60: one the restart
   * left open, but not hanging, is then aborted well within the stuck-partition check's patience,
   * which would otherwise take it for a hanging one and skip the test.
   */
  private static Map<String, String> briefTransactions(Map<String, String> config) {
    Map<String, String> exactlyOnce = exactlyOnce(config);
    exactlyOnce.put("producer.override.transaction.timeout.ms", "10000");
    return exactlyOnce;
  }

  @Test
  void theBrokerStopsAndReturns() throws Exception {
    try (Scenario s = Scenario.open(CLUSTER, "eos-broker-down")) {
      s.deploy(briefTransactions(s.mainConfig(3)), briefTransactions(s.otherConfig(2)));
      s.startLoad(Scenario.load(ROWS));
      s.awaitPublished(ROWS / 4);
      Instant stoppedAt = OutboxDb.serverNow();
      s.kit.connect().kafka().stopOnlyBrokers();
      try {
        Scenario.awaitTrue(
            "the broker stays away for longer than a lease",
            Scenario.DRAIN,
            () -> OutboxDb.serverNow().isAfter(stoppedAt.plus(Scenario.LEASE).plusSeconds(1)));
      } finally {
        s.kit.connect().kafka().restartOnlyBrokers();
      }
      // Connect's offsets topic too: a transaction stuck there blocks every task's start.
      Set<String> topics =
          Set.of(s.mainTopic, s.otherTopic, s.kit.workerProps().get("offset.storage.topic"));
      List<String> stuck = new ArrayList<>();
      try (Admin admin = s.kit.connect().kafka().createAdminClient()) {
        StuckPartitions partitions = new StuckPartitions(admin, topics, Duration.ofSeconds(20));
        Scenario.awaitTrue(
            "every row delivered, or a transaction left hanging by the restart",
            Scenario.DRAIN,
            Duration.ofMillis(500),
            () -> s.drained() || stuck.addAll(partitions.stuck()));
        if (stuck.isEmpty()) {
          // Drained: nothing may be open any more; a transaction still open is hanging.
          Scenario.awaitTrue(
              "no transaction open, or one hanging",
              Duration.ofSeconds(60),
              Duration.ofMillis(500),
              () -> {
                List<String> now = partitions.stuck();
                stuck.addAll(now);
                return !now.isEmpty()
                    || ExactlyOnceMode.openTransactions(s.kit, topics.toArray(String[]::new))
                        .isEmpty();
              });
        }
      }
      if (!stuck.isEmpty()) {
        Scenario.report("|  | eos-broker-down: Kafka left transactions hanging " + stuck + " |");
        // What can be checked behind a hanging transaction still is: a row PUBLISHED at
        // coordinates read_committed does not reach has its record there, not lost.
        Hidden hidden = hiddenRows(s);
        assertEquals(hidden.rows(), hidden.inTheLog(), "hidden rows are in the log" + hidden);
        Assumptions.abort(
            "Kafka left transactions hanging after the broker restart (read_committed readers"
                + " cannot pass them; docs/reliability.md, Findings): "
                + stuck
                + "\n"
                + ExactlyOnceMode.openTransactions(s.kit, topics.toArray(String[]::new))
                + hidden);
      }
      Figures f;
      try {
        f = ExactlyOnceVerdict.check(s);
      } catch (AssertionError e) {
        throw new AssertionError(
            "open transactions and stuck partitions now:\n"
                + ExactlyOnceMode.openTransactions(s.kit, s.mainTopic, s.otherTopic),
            e);
      }
      s.kit.awaitRunning(s.mainConnector, 3);
      Scenario.report(
          "|  | eos-broker-down: no transaction left hanging; " + f.recoveries() + " |");
    }
  }

  /**
   * Main rows PUBLISHED at coordinates a read_committed reader does not reach, and how many of them
   * a read_uncommitted reader finds there: in the log, behind a stuck LSO, not lost.
   */
  private record Hidden(int rows, int inTheLog) {
    @Override
    public String toString() {
      return "\nmain rows PUBLISHED at coordinates read_committed does not reach: "
          + rows
          + ", of which in the log (read_uncommitted): "
          + inTheLog;
    }
  }

  private static Hidden hiddenRows(Scenario s) {
    Set<String> committed = new HashSet<>();
    s.kit.readCommitted(s.mainTopic).forEach(d -> committed.add(d.partition() + "@" + d.offset()));
    Map<String, String> inLog = new HashMap<>();
    s.kit
        .readAll(s.mainTopic)
        .forEach(d -> inLog.put(d.partition() + "@" + d.offset(), d.messageId()));
    int hidden = 0;
    int inTheLog = 0;
    for (OutboxDb.Row row : s.db.rows(Scenario.MAIN_KEY).values()) {
      String at = row.kafkaPartition() + "@" + row.kafkaOffset();
      if (row.kafkaTopic() != null && !committed.contains(at)) {
        hidden++;
        if (row.messageId().equals(inLog.get(at))) {
          inTheLog++;
        }
      }
    }
    return new Hidden(hidden, inTheLog);
  }
}
