package dev.outboxrelay.testing;

import dev.outboxrelay.mapping.OutboxHeaders;
import dev.outboxrelay.testing.OutboxDb.Row;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.connect.util.clusters.EmbeddedKafkaCluster;

/** Reads whole topics back from the broker, every partition from its start to its end. */
public final class KafkaRecords {
  private KafkaRecords() {}

  /** A record as it is in Kafka ({@code timestamp} in epoch milliseconds). */
  public record Delivered(
      String topic,
      int partition,
      long offset,
      String key,
      byte[] value,
      Map<String, String> headers,
      long timestamp) {

    public String messageId() {
      return headers.get(OutboxHeaders.MESSAGE_ID);
    }

    public String instanceKey() {
      return headers.get(OutboxHeaders.INSTANCE_KEY);
    }
  }

  /**
   * Every record of {@code topics} up to their end offsets at the time of the call, in topic, then
   * partition, then offset order.
   */
  public static List<Delivered> readAll(EmbeddedKafkaCluster kafka, String... topics) {
    return readAll(kafka, "read_uncommitted", topics);
  }

  /**
   * As {@link #readAll(EmbeddedKafkaCluster, String...)}, with this {@code isolation.level}:
   * read_committed sees only committed transactions (exactly-once), read_uncommitted also records
   * of aborted ones.
   */
  public static List<Delivered> readAll(
      EmbeddedKafkaCluster kafka, String isolationLevel, String... topics) {
    Map<String, Object> props = new HashMap<>();
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolationLevel);
    props.put(ConsumerConfig.GROUP_ID_CONFIG, "test-reader-" + System.nanoTime());
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
    List<Delivered> records = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> consumer = kafka.createConsumer(props)) {
      List<TopicPartition> partitions = new ArrayList<>();
      for (String topic : topics) {
        for (PartitionInfo p : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
          partitions.add(new TopicPartition(topic, p.partition()));
        }
      }
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(30));
      long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
      while (!caughtUp(consumer, end)) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError("could not read " + end + " within 2 minutes");
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          records.add(
              new Delivered(
                  r.topic(),
                  r.partition(),
                  r.offset(),
                  r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8),
                  r.value(),
                  headers(r),
                  r.timestamp()));
        }
      }
    }
    records.sort(
        Comparator.comparing(Delivered::topic)
            .thenComparingInt(Delivered::partition)
            .thenComparingLong(Delivered::offset));
    return records;
  }

  /** The records by message id, each message's copies in the order given. */
  public static Map<String, List<Delivered>> byMessageId(Collection<Delivered> records) {
    Map<String, List<Delivered>> byId = new LinkedHashMap<>();
    for (Delivered r : records) {
      byId.computeIfAbsent(r.messageId(), k -> new ArrayList<>()).add(r);
    }
    return byId;
  }

  /** The Kafka coordinates the row records hold one of these copies of its message. */
  public static boolean pointsAtOneOf(Row row, Collection<Delivered> copies) {
    return copies.stream()
        .anyMatch(
            d ->
                d.topic().equals(row.kafkaTopic())
                    && Integer.valueOf(d.partition()).equals(row.kafkaPartition())
                    && Long.valueOf(d.offset()).equals(row.kafkaOffset()));
  }

  private static boolean caughtUp(
      KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> end) {
    for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
      if (consumer.position(e.getKey(), Duration.ofSeconds(30)) < e.getValue()) {
        return false;
      }
    }
    return true;
  }

  private static Map<String, String> headers(ConsumerRecord<byte[], byte[]> r) {
    Map<String, String> headers = new LinkedHashMap<>();
    for (Header h : r.headers()) {
      headers.put(
          h.key(), h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8));
    }
    return headers;
  }
}
