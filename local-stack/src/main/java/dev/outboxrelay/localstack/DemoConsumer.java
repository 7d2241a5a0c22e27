package dev.outboxrelay.localstack;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/** Reads the relayed records back from Kafka, as any downstream consumer would. */
final class DemoConsumer {
  /** Every topic the default template {@code outbox.${aggregate_type}} can name. */
  static final Pattern TOPICS = Pattern.compile("outbox\\..*");

  static final String INSTANCE_KEY_HEADER = "outbox.instance_key";

  private final String bootstrapServers;
  private final Delivery delivery;
  private final Console console;

  DemoConsumer(String bootstrapServers, Delivery delivery, Console console) {
    this.bootstrapServers = bootstrapServers;
    this.delivery = delivery;
    this.console = console;
  }

  /**
   * The consumer's settings: a group of its own per run, from the earliest offset, and in
   * exactly-once mode {@code isolation.level=read_committed}, as every consumer of an exactly-once
   * connector must read (records of aborted transactions are in the log too).
   */
  Properties consumerProperties(String runId) {
    Properties p = new Properties();
    p.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    p.setProperty(ConsumerConfig.GROUP_ID_CONFIG, "local-stack-demo-" + runId);
    p.setProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.setProperty(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "1000");
    if (delivery.exactlyOnce()) {
      p.setProperty(ConsumerConfig.ISOLATION_LEVEL_CONFIG, delivery.isolationLevel());
    }
    return p;
  }

  static final String MESSAGE_ID_HEADER = "outbox.message_id";

  /** How long the consumer reads on after the last row arrived, for a duplicate to show. */
  static final Duration AFTER_THE_LAST = Duration.ofSeconds(1);

  /**
   * Returns once every row of {@code owned} arrived, and {@link #AFTER_THE_LAST} later, with what
   * it says of them ({@link #judge}): records of run {@code runId} and of {@code instanceKeys} only
   * (records of other keys, relayed by other connectors, are not counted); throws after timeout.
   */
  String await(String runId, Set<String> instanceKeys, List<DemoRows.Row> owned, Duration timeout) {
    Properties p = consumerProperties(runId);
    List<String> seen = new ArrayList<>();
    Set<String> expected = new java.util.HashSet<>();
    owned.forEach(r -> expected.add(r.messageId()));
    console.step(
        "Kafka",
        "consuming topics matching "
            + TOPICS
            + " from "
            + bootstrapServers
            + (delivery.exactlyOnce() ? " (isolation.level=read_committed)" : ""));
    try (KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(p, new StringDeserializer(), new ByteArrayDeserializer())) {
      consumer.subscribe(TOPICS);
      long deadline = System.nanoTime() + timeout.toNanos();
      boolean allArrived = false;
      long readUntil = 0; // once every row arrived: read on until then, for a copy to show
      while (!allArrived || System.nanoTime() - readUntil < 0) {
        if (!allArrived && System.nanoTime() - deadline > 0) {
          throw new StackException(
              "only "
                  + seen.stream().filter(expected::contains).distinct().count()
                  + " of "
                  + expected.size()
                  + " rows arrived in Kafka within "
                  + timeout.toSeconds()
                  + " s; see the connector's status and .local-stack/logs/connect.log");
        }
        for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(250))) {
          String value =
              record.value() == null ? "" : new String(record.value(), StandardCharsets.UTF_8);
          String key = instanceKey(record);
          if (value.contains(runId) && key != null && instanceKeys.contains(key)) {
            seen.add(header(record, MESSAGE_ID_HEADER));
            console.detail(describe(record, value));
          }
        }
        if (!allArrived && seen.containsAll(expected)) {
          allArrived = true;
          readUntil = System.nanoTime() + AFTER_THE_LAST.toNanos();
        }
      }
    }
    return judge(seen, owned, delivery.exactlyOnce());
  }

  /**
   * What the records say of the rows, in the order they arrived (message ids): each arrived once
   * (exactly once: a second copy fails the demo; at least once it is counted, as the guarantee
   * allows), and each aggregate's events in the order they were written (per-aggregate order, which
   * both guarantees keep: a row of an aggregate before an earlier one fails the demo).
   */
  static String judge(List<String> arrived, List<DemoRows.Row> owned, boolean exactlyOnce) {
    java.util.Map<String, DemoRows.Row> byId = new java.util.HashMap<>();
    owned.forEach(r -> byId.put(r.messageId(), r));
    java.util.Map<String, Integer> copies = new java.util.HashMap<>();
    java.util.Map<String, Integer> nextOfAggregate = new java.util.HashMap<>();
    for (String id : arrived) {
      DemoRows.Row row = byId.get(id);
      if (row == null || copies.merge(id, 1, Integer::sum) > 1) {
        continue; // a copy: its first arrival was judged
      }
      List<DemoRows.Row> ofAggregate =
          owned.stream().filter(r -> r.aggregateId().equals(row.aggregateId())).toList();
      int expectedIndex = nextOfAggregate.getOrDefault(row.aggregateId(), 0);
      if (!ofAggregate.get(expectedIndex).messageId().equals(id)) {
        throw new StackException(
            row.aggregateId()
                + "'s "
                + row.eventType()
                + " arrived before its "
                + ofAggregate.get(expectedIndex).eventType()
                + ": per-aggregate order broken");
      }
      nextOfAggregate.put(row.aggregateId(), expectedIndex + 1);
    }
    long twice = copies.values().stream().filter(n -> n > 1).count();
    if (twice > 0 && exactlyOnce) {
      throw new StackException(
          twice + " of the rows reached a read_committed consumer more than once, exactly once");
    }
    return owned.size()
        + " rows arrived, each aggregate's events in the order written"
        + (twice == 0
            ? ", each once"
            : "; " + twice + " of them more than once, as at least once allows");
  }

  private static String header(ConsumerRecord<String, byte[]> record, String name) {
    Header header = record.headers().lastHeader(name);
    return header == null || header.value() == null
        ? null
        : new String(header.value(), StandardCharsets.UTF_8);
  }

  static String instanceKey(ConsumerRecord<String, byte[]> record) {
    return header(record, INSTANCE_KEY_HEADER);
  }

  static String describe(ConsumerRecord<String, byte[]> record, String value) {
    List<String> headers = new ArrayList<>();
    for (Header h : record.headers()) {
      String v = h.value() == null ? "null" : new String(h.value(), StandardCharsets.UTF_8);
      headers.add(h.key() + "=" + (v.length() > 40 ? v.substring(0, 37) + "..." : v));
    }
    return record.topic()
        + "-"
        + record.partition()
        + "@"
        + record.offset()
        + "  key="
        + record.key()
        + "  value="
        + value
        + (headers.isEmpty() ? "" : "\n             headers: " + String.join(", ", headers));
  }
}
