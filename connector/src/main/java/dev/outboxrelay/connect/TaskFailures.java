package dev.outboxrelay.connect;

import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.postgres.ReplicaIdentity;
import org.apache.kafka.connect.errors.ConnectException;

/** The exceptions that fail a task: sanitized, with a hint naming what to fix. */
final class TaskFailures {
  private TaskFailures() {}

  static ConnectException of(OutboxStoreException e) {
    String hint =
        ReplicaIdentity.MISSING.equals(e.reasonCode())
            ? "; a publication that publishes updates or deletes includes the outbox table, which"
                + " has no replica identity: give it a primary key or REPLICA IDENTITY FULL, or take"
                + " it out of the publication"
            : switch (e.kind()) {
              case AUTHENTICATION -> "; check connection.user and connection.password";
              case PERMISSION -> "; grant the connector's role access to the outbox table";
              case SCHEMA ->
                  "; create the outbox table (schema.migrate.on.start=true, or docs/schema.sql)";
              default -> "";
            };
    // No cause attached: Connect shows the whole chain in the task's REST status.
    return new ConnectException("outbox-relay: " + e.getMessage() + hint);
  }
}
