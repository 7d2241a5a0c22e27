package dev.outboxrelay.connect;

import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.writer.Printable;
import org.apache.kafka.connect.errors.ConnectException;

/**
 * Mapping a claimed row to its record threw: a bug of the connector, not a row that cannot be
 * published (those are parked with a reason code). The task fails naming the row and the error's
 * class only, with no cause: the error's message may quote the row's data, and Connect shows the
 * whole trace in the task's status. Nothing of the claim was handed to Connect.
 */
final class MappingFailedException extends ConnectException {
  private final String messageId;

  MappingFailedException(ClaimedMessage row, Throwable error) {
    super(
        "outbox-relay: mapping message_id="
            + Printable.escape(row.messageId())
            + " instance_key="
            + Printable.escape(row.instanceKey())
            + " to a record failed (reason=MAPPING_FAILED, error="
            + error.getClass().getName()
            + "): a bug of the connector; nothing of its claim was sent, and the row is parked"
            + " FAILED unless a WARN says otherwise (report it with the row)");
    this.messageId = row.messageId();
  }

  String messageId() {
    return messageId;
  }
}
