package dev.outboxrelay.it;

import dev.outboxrelay.mapping.SourceOffsets;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * A test SMT that throws on the record of one message id ({@value #MESSAGE_ID}), as a converter or
 * transform that cannot handle one row does: with {@code errors.tolerance=none} the task fails, and
 * in exactly-once mode the transaction of that record's whole batch aborts.
 */
public class FailOnMessageTransform implements Transformation<SourceRecord> {
  static final String MESSAGE_ID = "message.id";

  private String messageId;

  @Override
  public SourceRecord apply(SourceRecord record) {
    if (messageId.equals(SourceOffsets.messageId(record))) {
      throw new DataException("this record cannot be transformed");
    }
    return record;
  }

  @Override
  public void configure(Map<String, ?> configs) {
    messageId = String.valueOf(configs.get(MESSAGE_ID));
  }

  @Override
  public ConfigDef config() {
    return new ConfigDef()
        .define(MESSAGE_ID, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "the record to fail");
  }

  @Override
  public void close() {}
}
