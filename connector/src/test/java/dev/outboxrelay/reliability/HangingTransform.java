package dev.outboxrelay.reliability;

import dev.outboxrelay.mapping.OutboxHeaders;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * A transform that hangs the task thread it runs on: the first time it sees the record of message
 * {@code trigger}, it blocks (on the task thread, inside Connect's send loop) until the test
 * releases it. Any other record, and that record on any later occasion, passes unchanged.
 */
public class HangingTransform implements Transformation<SourceRecord> {
  static final String TRIGGER = "trigger";

  /** One hang per trigger message id, shared across tasks (they run in this JVM). */
  static final class Hang {
    final CountDownLatch entered = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    final AtomicBoolean used = new AtomicBoolean();
    volatile String threadName;
  }

  private static final Map<String, Hang> HANGS = new ConcurrentHashMap<>();

  private String trigger;

  static Hang arm(String trigger) {
    Hang hang = new Hang();
    HANGS.put(trigger, hang);
    return hang;
  }

  @Override
  public void configure(Map<String, ?> configs) {
    trigger = String.valueOf(configs.get(TRIGGER));
  }

  @Override
  public SourceRecord apply(SourceRecord record) {
    Header id = record.headers().lastWithName(OutboxHeaders.MESSAGE_ID);
    Hang hang = HANGS.get(trigger);
    if (hang != null
        && id != null
        && trigger.equals(id.value())
        && hang.used.compareAndSet(false, true)) {
      hang.threadName = Thread.currentThread().getName();
      hang.entered.countDown();
      try {
        hang.release.await(); // released by the test; never a timed wait
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return record;
  }

  @Override
  public ConfigDef config() {
    return new ConfigDef().define(TRIGGER, ConfigDef.Type.STRING, ConfigDef.Importance.LOW, "id");
  }

  @Override
  public void close() {}
}
