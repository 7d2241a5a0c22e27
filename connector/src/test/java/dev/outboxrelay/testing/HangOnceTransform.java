package dev.outboxrelay.testing;

import dev.outboxrelay.mapping.SourceOffsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * A test SMT that hangs the task thread it runs on: the first time it sees the record of an armed
 * message id, it blocks (on the task thread, inside Connect's send loop) until the test releases
 * the {@link Hang}: a hung transform, as far as the task can tell. Every other record, and that
 * message's later deliveries, pass unchanged. Tasks run in the test JVM, so the test arms and
 * releases it through static state.
 */
public class HangOnceTransform implements Transformation<SourceRecord> {
  /** Never hang the test JVM for longer than this, whatever happens to the test. */
  private static final long MAX_HANG_MINUTES = 10;

  private static final Map<String, Hang> HANGS = new ConcurrentHashMap<>();

  /** Every hang armed since the last release: one armed again for a row replaces it in HANGS. */
  private static final List<Hang> ARMED = new CopyOnWriteArrayList<>();

  /** What the test holds: whether a task hangs on the message, on which thread, and the release. */
  public static final class Hang {
    private final CountDownLatch entered = new CountDownLatch(1);
    private final CountDownLatch released = new CountDownLatch(1);
    private final AtomicBoolean used = new AtomicBoolean();
    private volatile String thread;

    private Hang() {}

    public boolean hasHung() {
      return entered.getCount() == 0;
    }

    /** The name of the task thread that hangs, once it does. */
    public String thread() {
      return thread;
    }

    public void release() {
      released.countDown();
    }
  }

  /** Arms the transform for the next record of this message id. */
  public static Hang arm(String messageId) {
    Hang hang = new Hang();
    ARMED.add(hang);
    HANGS.put(messageId, hang);
    return hang;
  }

  /** Releases every hung thread, a hang armed again for its row's included, and disarms. */
  public static void releaseAll() {
    HANGS.clear();
    ARMED.forEach(Hang::release);
    ARMED.clear();
  }

  @Override
  public SourceRecord apply(SourceRecord record) {
    Hang hang = HANGS.get(SourceOffsets.messageId(record));
    if (hang != null && hang.used.compareAndSet(false, true)) {
      hang.thread = Thread.currentThread().getName();
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
