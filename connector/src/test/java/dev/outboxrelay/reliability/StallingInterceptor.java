package dev.outboxrelay.reliability;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * Makes Kafka stop acknowledging a producer's records, as a broker that accepts but does not answer
 * would: while stalled, the acknowledgement callback of a chosen producer blocks its I/O thread, so
 * no acknowledgement reaches the task and nothing more is sent, while the task thread keeps
 * polling. Installed on a connector with {@code producer.override.interceptor.classes}.
 */
public class StallingInterceptor implements ProducerInterceptor<byte[], byte[]> {
  private static final ReentrantLock LOCK = new ReentrantLock();
  private static final Condition RESUMED = LOCK.newCondition();
  private static final AtomicInteger STALLED_THREADS = new AtomicInteger();
  private static Predicate<String> stalled = id -> false;

  private String clientId = "";

  /** From now on, producers whose client id matches stop acknowledging. */
  static void stall(Predicate<String> clientIds) {
    LOCK.lock();
    try {
      stalled = clientIds;
    } finally {
      LOCK.unlock();
    }
  }

  static void resume() {
    LOCK.lock();
    try {
      stalled = id -> false;
      RESUMED.signalAll();
    } finally {
      LOCK.unlock();
    }
  }

  /** Producer I/O threads blocked right now. */
  static int stalledThreads() {
    return STALLED_THREADS.get();
  }

  @Override
  public void configure(Map<String, ?> configs) {
    clientId = String.valueOf(configs.get(ProducerConfig.CLIENT_ID_CONFIG));
  }

  @Override
  public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
    return record;
  }

  @Override
  public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
    LOCK.lock();
    try {
      if (stalled.test(clientId)) {
        STALLED_THREADS.incrementAndGet();
        try {
          while (stalled.test(clientId)) {
            RESUMED.await(); // until the test resumes; never a timed wait
          }
        } finally {
          STALLED_THREADS.decrementAndGet();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      LOCK.unlock();
    }
  }

  @Override
  public void close() {}
}
