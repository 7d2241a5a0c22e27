package dev.outboxrelay.mapping;

import dev.outboxrelay.store.ReasonCodes;
import java.util.Objects;
import org.apache.kafka.connect.source.SourceRecord;

/** What became of one claimed row: a record to publish, or the reason it can never be one. */
public sealed interface MappingResult permits MappingResult.Mapped, MappingResult.Unpublishable {

  /** The row as a record, ready to be returned from {@code poll()}. */
  record Mapped(SourceRecord record) implements MappingResult {
    public Mapped {
      Objects.requireNonNull(record, "record");
    }

    @Override
    public String toString() {
      // Never render the record: its value and headers are the application's data.
      return "Mapped[topic="
          + record.topic()
          + ", messageId="
          + SourceOffsets.messageId(record)
          + "]";
    }
  }

  /** The row is poison or too late; {@code reasonCode} is one of {@link UnpublishableReasons}. */
  record Unpublishable(String reasonCode) implements MappingResult {
    public Unpublishable {
      ReasonCodes.require(reasonCode);
    }
  }
}
