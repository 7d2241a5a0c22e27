package dev.outboxrelay.benchmark;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Duplicates and order violations are counted to the topic's end: the run's last row arriving is
 * not the end, and a second copy on another partition read later went uncounted.
 */
class TopicReaderTest {
  private static final TopicPartition P0 = new TopicPartition("run", 0);
  private static final TopicPartition P1 = new TopicPartition("run", 1);

  private static ConsumerRecord<byte[], byte[]> row(TopicPartition tp, long offset, int n) {
    byte[] value =
        ("{\"n\":" + n + ",\"a\":0,\"s\":" + n + ",\"p\":\"x\"}").getBytes(StandardCharsets.UTF_8);
    return new ConsumerRecord<>(tp.topic(), tp.partition(), offset, null, value);
  }

  @Test
  void aSecondCopyReadAfterTheLastRowIsCountedBeforeTheFiguresAreRead() throws Exception {
    MockConsumer<byte[], byte[]> consumer = new MockConsumer<>("earliest");
    consumer.updateBeginningOffsets(Map.of(P0, 0L, P1, 0L));
    consumer.updateEndOffsets(Map.of(P0, 2L, P1, 1L)); // the copy on P1 is in the topic already
    try (TopicReader reader = new TopicReader(consumer, "run", 2, 2, 1, false, true)) {
      consumer.schedulePollTask(
          () -> {
            consumer.addRecord(row(P0, 0, 1));
            consumer.addRecord(row(P0, 1, 2));
          });
      await().until(() -> reader.distinct() == 2);
      deliverWhenTheEndIsAsked(consumer, reader, row(P1, 0, 1));

      reader.readToEnd(Duration.ofSeconds(30));

      assertEquals(1, reader.duplicates());
      assertEquals(0, reader.orderViolations(), "a second copy is a duplicate, not a violation");
    }
  }

  /** The copy reaches the reader only once the end was asked for: fetched late. */
  private static void deliverWhenTheEndIsAsked(
      MockConsumer<byte[], byte[]> consumer,
      TopicReader reader,
      ConsumerRecord<byte[], byte[]> copy) {
    consumer.schedulePollTask(
        () -> {
          if (reader.endAsked()) {
            consumer.addRecord(copy);
          } else {
            deliverWhenTheEndIsAsked(consumer, reader, copy);
          }
        });
  }
}
