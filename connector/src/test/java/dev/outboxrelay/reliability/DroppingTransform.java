package dev.outboxrelay.reliability;

import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * Drops every record that carries the header {@value #HEADER} (a row header of the outbox row), so
 * Connect acknowledges it without metadata: the relay must then retry the row and, once its
 * attempts are spent, park it EXHAUSTED, never mark it published.
 */
public class DroppingTransform implements Transformation<SourceRecord> {
  static final String HEADER = "drop-me";

  @Override
  public void configure(Map<String, ?> configs) {}

  @Override
  public SourceRecord apply(SourceRecord record) {
    return record.headers().lastWithName(HEADER) != null ? null : record;
  }

  @Override
  public ConfigDef config() {
    return new ConfigDef();
  }

  @Override
  public void close() {}
}
