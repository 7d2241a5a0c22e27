package dev.outboxrelay.store;

import java.util.Objects;

/**
 * A row that a claim moved to EXHAUSTED instead of leasing it.
 *
 * @param reasonCode why its budget is spent, as stored in the row (see {@link ReasonCodes})
 */
public record ExhaustedMessage(String messageId, String instanceKey, String reasonCode) {
  public ExhaustedMessage {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(instanceKey, "instanceKey");
    ReasonCodes.require(reasonCode);
  }
}
