package dev.outboxrelay.reliability;

import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * A test SMT that slows every record by the milliseconds of the system property {@value
 * #DELAY_PROPERTY}, and does nothing where it is unset: set on a {@link WorkerProcess} only, it
 * keeps that worker's exactly-once transactions open (records sent, commit pending) for most of the
 * time, so a SIGKILL of it lands inside one, while the other workers run at full speed.
 */
public class SlowVictimTransform implements Transformation<SourceRecord> {
  static final String DELAY_PROPERTY = "outbox.test.record.delay.ms";

  private final long delayMs = Long.getLong(DELAY_PROPERTY, 0);

  @Override
  public SourceRecord apply(SourceRecord record) {
    if (delayMs > 0) {
      try {
        Thread.sleep(delayMs); // the fault itself: a slow transform, not a wait
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
