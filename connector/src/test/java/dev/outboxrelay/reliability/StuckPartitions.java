package dev.outboxrelay.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;

/**
 * Watches partitions for a last stable offset (LSO) that stays behind their end: a transaction left
 * open there, which read_committed readers (Connect's offset readers included) wait for. The
 * relay's transactions last a poll (milliseconds); one open for {@code patience} is hanging. Seen
 * after the only broker of the test kit restarts under exactly-once load (docs/reliability.md,
 * Findings). It only looks: aborting a hanging transaction (what {@code kafka-transactions.sh
 * abort} does) cannot tell a lost commit marker from a lost abort marker, and would discard
 * committed records in the first case.
 */
final class StuckPartitions {
  private final Admin admin;
  private final Set<String> topics;
  private final Duration patience;
  private final Map<TopicPartition, Long> lsoSeen = new HashMap<>();
  private final Map<TopicPartition, Long> sinceNanos = new HashMap<>();

  StuckPartitions(Admin admin, Set<String> topics, Duration patience) {
    this.admin = admin;
    this.topics = topics;
    this.patience = patience;
  }

  /** Partitions whose LSO has stayed the same, behind their end, for the whole patience. */
  List<String> stuck() throws ExecutionException, InterruptedException {
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (var topic : admin.describeTopics(topics).allTopicNames().get().values()) {
      topic
          .partitions()
          .forEach(
              p ->
                  latest.put(new TopicPartition(topic.name(), p.partition()), OffsetSpec.latest()));
    }
    var stable =
        admin
            .listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
            .all()
            .get();
    var end = admin.listOffsets(latest).all().get();
    long now = System.nanoTime();
    List<String> stuck = new ArrayList<>();
    for (var e : stable.entrySet()) {
      TopicPartition tp = e.getKey();
      long lso = e.getValue().offset();
      long high = end.get(tp).offset();
      if (lso >= high) {
        lsoSeen.remove(tp);
        sinceNanos.remove(tp);
        continue;
      }
      Long seen = lsoSeen.put(tp, lso);
      if (seen == null || seen != lso) {
        sinceNanos.put(tp, now);
      } else if (now - sinceNanos.get(tp) >= patience.toNanos()) {
        stuck.add(tp + " LSO " + lso + " < end " + high);
      }
    }
    return stuck;
  }
}
