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

  /**
   * Returns once {@code expected} records of run {@code runId} and of {@code instanceKeys} arrived
   * (records of other keys, relayed by other connectors, are not counted); throws after timeout.
   */
  List<ConsumerRecord<String, byte[]>> await(
      String runId, Set<String> instanceKeys, int expected, Duration timeout) {
    Properties p = consumerProperties(runId);
    List<ConsumerRecord<String, byte[]>> seen = new ArrayList<>();
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
      while (seen.size() < expected) {
        if (System.nanoTime() - deadline > 0) {
          throw new StackException(
              "only "
                  + seen.size()
                  + " of "
                  + expected
                  + " records arrived in Kafka within "
                  + timeout.toSeconds()
                  + " s; see the connector's status and .local-stack/logs/connect.log");
        }
        for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(500))) {
          String value =
              record.value() == null ? "" : new String(record.value(), StandardCharsets.UTF_8);
          String key = instanceKey(record);
          if (value.contains(runId) && key != null && instanceKeys.contains(key)) {
            seen.add(record);
            console.detail(describe(record, value));
          }
        }
      }
    }
    return seen;
  }

  static String instanceKey(ConsumerRecord<String, byte[]> record) {
    Header header = record.headers().lastHeader(INSTANCE_KEY_HEADER);
    return header == null || header.value() == null
        ? null
        : new String(header.value(), StandardCharsets.UTF_8);
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
