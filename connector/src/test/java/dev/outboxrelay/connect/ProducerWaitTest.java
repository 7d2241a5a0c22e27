package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A real producer, with no broker to answer it, as Connect's producer waits in a broker outage. */
class ProducerWaitTest {
  /** What a hung thread waits for (static: Kafka creates the interceptor). */
  private static volatile CountDownLatch release;

  private Thread sender;

  @BeforeEach
  void hold() {
    release = new CountDownLatch(1);
  }

  @AfterEach
  void release() throws InterruptedException {
    release.countDown();
    if (sender != null) {
      sender.join(10_000);
    }
  }

  /** Connect's own producer setting: a send waits for its topic's metadata without end. */
  private static Map<String, Object> producerConfig() {
    Map<String, Object> config = new HashMap<>();
    config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1"); // nothing listens
    config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.MAX_VALUE);
    config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    return config;
  }

  private Thread sending(KafkaProducer<byte[], byte[]> producer) {
    sender =
        new Thread(
            () -> {
              try {
                producer.send(new ProducerRecord<>("orders", new byte[] {1}));
              } catch (RuntimeException e) { // NOPMD: closed under it at the end of the test
              }
            },
            "task-thread");
    sender.start();
    return sender;
  }

  @Test
  void aSendWaitingForItsTopicsMetadataIsWaitingOnKafka() {
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig())) {
      Thread task = sending(producer);
      await().until(() -> ProducerWait.isWaitingOnKafka(task));
      producer.close(Duration.ZERO); // the send ends, with an error
      await().until(() -> !task.isAlive());
      assertFalse(ProducerWait.isWaitingOnKafka(task), "a thread that ended waits on nothing");
    }
  }

  /**
   * Connect's topic creation (topic.creation.*) asks the admin client about a topic before its
   * first send, waiting on the broker as a send does: not hung. Read as hung, a restart in a broker
   * outage let the task's leases run out, and another task sent its rows too.
   */
  @Test
  void aTopicCreationWaitingForTheBrokerIsWaitingOnKafka() {
    Map<String, Object> adminConfig = new HashMap<>();
    adminConfig.put("bootstrap.servers", "127.0.0.1:1"); // nothing listens
    org.apache.kafka.connect.util.TopicAdmin admin =
        new org.apache.kafka.connect.util.TopicAdmin(adminConfig);
    try {
      sender =
          new Thread(
              () -> {
                try {
                  admin.describeTopics("orders");
                } catch (RuntimeException e) { // NOPMD: closed under it at the end of the test
                }
              },
              "task-thread");
      sender.start();
      await().until(() -> ProducerWait.isWaitingOnKafka(sender));
    } finally {
      admin.close(Duration.ZERO); // the call ends, with an error
    }
  }

  /** An interceptor the producer calls is the task's own code: hung there, it is not Kafka. */
  @Test
  void aSendHungInAnInterceptorIsNotWaitingOnKafka() {
    Map<String, Object> config = producerConfig();
    config.put(ProducerConfig.INTERCEPTOR_CLASSES_CONFIG, HangingInterceptor.class.getName());
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config)) {
      Thread task = sending(producer);
      await().until(() -> task.getState() == Thread.State.WAITING);
      assertFalse(ProducerWait.isWaitingOnKafka(task));
      producer.close(Duration.ZERO);
    }
  }

  @Test
  void aThreadHungInItsOwnCodeOrRunningIsNotWaitingOnKafka() {
    assertFalse(ProducerWait.isWaitingOnKafka(Thread.currentThread()));
    assertFalse(ProducerWait.isWaitingOnKafka(null));
    sender = new Thread(ProducerWaitTest::hang, "task-thread");
    sender.start();
    await().until(() -> sender.getState() == Thread.State.WAITING);
    assertFalse(ProducerWait.isWaitingOnKafka(sender));
    assertTrue(sender.isAlive());
  }

  private static void hang() {
    try {
      release.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Hangs in onSend, before the producer waits for any metadata. */
  public static final class HangingInterceptor implements ProducerInterceptor<byte[], byte[]> {
    @Override
    public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
      hang();
      return record;
    }

    @Override
    public void onAcknowledgement(RecordMetadata metadata, Exception exception) {}

    @Override
    public void close() {}

    @Override
    public void configure(Map<String, ?> configs) {}
  }
}
