package dev.outboxrelay.it;

import dev.outboxrelay.mapping.SourceOffsets;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * A test SMT that hangs the task thread it runs on: the first time it sees the armed message id, it
 * blocks until the test releases the {@link Gate} (a hung transform, as far as the task can tell).
 * Every other record, and that message's later deliveries, pass unchanged.
 */
public class BlockOnceTransform implements Transformation<SourceRecord> {
  /** Never hang the test JVM for longer than this, whatever happens to the test. */
  private static final long MAX_BLOCK_SECONDS = 120;

  private static volatile Gate gate;

  /** What the test holds: when the transform blocked, on which thread, and the release. */
  static final class Gate {
    final String messageId;
    final CountDownLatch entered = new CountDownLatch(1);
    final CountDownLatch released = new CountDownLatch(1);
    private final AtomicBoolean used = new AtomicBoolean();
    volatile String blockedThread;

    private Gate(String messageId) {
      this.messageId = messageId;
    }

    boolean hasBlocked() {
      return entered.getCount() == 0;
    }

    void release() {
      released.countDown();
    }
  }

  /** Arms the transform for the next record with this message id. */
  static Gate arm(String messageId) {
    Gate g = new Gate(messageId);
    gate = g;
    return g;
  }

  /** Releases any blocked thread and disarms. */
  static void disarm() {
    Gate g = gate;
    gate = null;
    if (g != null) {
      g.release();
    }
  }

  @Override
  public SourceRecord apply(SourceRecord record) {
    Gate g = gate;
    if (g != null
        && g.messageId.equals(SourceOffsets.messageId(record))
        && g.used.compareAndSet(false, true)) {
      g.blockedThread = Thread.currentThread().getName();
      g.entered.countDown();
      try {
        g.released.await(MAX_BLOCK_SECONDS, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return record;
  }

  @Override
  public void configure(Map<String, ?> configs) {}

  @Override
  public ConfigDef config() {
    return new ConfigDef();
  }

  @Override
  public void close() {}
}
