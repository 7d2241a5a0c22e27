package dev.outboxrelay.reliability;

import dev.outboxrelay.mapping.SourceOffsets;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * A test SMT that hangs one exactly-once task thread with its Kafka transaction open: once armed,
 * the first record it meets that is not the first of its claim batch (same epoch and batch as the
 * record before it on this task) blocks until the test releases it. The records before it in the
 * batch were already handed to the producer, so the task's transaction has begun and holds them.
 * One instance per task, so "the record before" is that task's; the arming is static (tasks run in
 * the test JVM).
 */
public class HangInTransactionTransform implements Transformation<SourceRecord> {
  /** Never hang the test JVM for longer than this, whatever happens to the test. */
  private static final long MAX_HANG_MINUTES = 10;

  private static volatile Hang armed;

  private Object lastEpoch;
  private Object lastBatch;

  /** What the test holds: whether and where a task hangs, and the release. */
  static final class Hang {
    private final CountDownLatch entered = new CountDownLatch(1);
    private final CountDownLatch released = new CountDownLatch(1);
    private final AtomicBoolean used = new AtomicBoolean();
    private volatile String thread;
    private volatile String messageId;

    boolean hasHung() {
      return entered.getCount() == 0;
    }

    /** Connect's task thread, {@code task-thread-<connector>-<task>}. */
    String thread() {
      return thread;
    }

    String messageId() {
      return messageId;
    }

    void release() {
      released.countDown();
    }
  }

  /** Arms the transform: the next record met mid-batch hangs its task. */
  static Hang arm() {
    Hang hang = new Hang();
    armed = hang;
    return hang;
  }

  static void disarm() {
    Hang hang = armed;
    armed = null;
    if (hang != null) {
      hang.release();
    }
  }

  @Override
  public SourceRecord apply(SourceRecord record) {
    Map<String, ?> offset = record.sourceOffset();
    Object epoch = offset.get(SourceOffsets.EPOCH);
    Object batch = offset.get(SourceOffsets.BATCH);
    boolean midBatch =
        batch != null && Objects.equals(epoch, lastEpoch) && Objects.equals(batch, lastBatch);
    lastEpoch = epoch;
    lastBatch = batch;
    Hang hang = armed;
    if (midBatch && hang != null && hang.used.compareAndSet(false, true)) {
      hang.thread = Thread.currentThread().getName();
      hang.messageId = SourceOffsets.messageId(record);
      hang.entered.countDown();
      try {
        hang.released.await(MAX_HANG_MINUTES, TimeUnit.MINUTES);
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
